// The agent's current span on a gateway call, with the OpenTelemetry SDK an agent runs (a tracer
// provider and the AsyncLocalStorage context manager) and a loopback gateway that records the
// headers it is sent. The native mode's intent headers are checked against the real broker in
// test-integration.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, createTraceState, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { GatewayClient } from '../src/index.js';

const seen: IncomingHttpHeaders[] = [];
const gateway = createServer((req, res) => {
  seen.push(req.headers);
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"key":"k-1","status":"SUCCEEDED","result":{"id":"ch_1"},"attempts":1}');
  });
});
let client: GatewayClient;
const provider = new BasicTracerProvider();
const step = { tenant: 'acme', runId: 'run-trace', stepId: 'pay' };

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  client = new GatewayClient({ url: `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`, token: 't', retries: 0 });
});
after(async () => {
  gateway.close();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

test("a call carries the agent's active span as traceparent", async () => {
  const tracer = trace.getTracer('agent');
  const { span, answered } = await tracer.startActiveSpan('agent tool call', async (span) => {
    // after an await inside the span, as an agent's tool function runs
    await new Promise((r) => setImmediate(r));
    const answered = await client.call(step, 'charge_card', { amount: 1 });
    span.end();
    return { span, answered };
  });
  assert.equal(answered.kind, 'succeeded');
  const { traceId, spanId } = span.spanContext();
  assert.equal(seen.at(-1)?.traceparent, `00-${traceId}-${spanId}-01`);
  assert.equal(seen.at(-1)?.tracestate, undefined);
});

test('an unsampled span goes on as unsampled, with its tracestate', async () => {
  const parent = trace.wrapSpanContext({
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.NONE,
    traceState: createTraceState('vendor=opaque,other=1'),
  });
  const withState = trace.setSpan(context.active(), parent);
  await context.with(withState, () => client.call(step, 'charge_card', { amount: 2 }));
  assert.equal(seen.at(-1)?.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
  assert.equal(seen.at(-1)?.tracestate, 'vendor=opaque,other=1');
});

test('a call outside any span carries no trace context', async () => {
  await client.call(step, 'charge_card', { amount: 3 });
  assert.equal(seen.at(-1)?.traceparent, undefined);
  assert.equal(seen.at(-1)?.tracestate, undefined);
});

test('without @opentelemetry/api installed, nothing is carried and nothing fails', async () => {
  // the built module alone, where no node_modules can be found from
  const { mkdtempSync, copyFileSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'el-trace-'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  copyFileSync(new URL('../src/trace.js', import.meta.url), join(dir, 'trace.js'));
  const alone = (await import(join(dir, 'trace.js'))) as typeof import('../src/trace.js');
  const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED });
  await context.with(trace.setSpan(context.active(), span), async () => {
    assert.deepEqual(alone.traceHeaders(), {});
  });
});
