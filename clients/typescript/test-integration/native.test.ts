// The native Kafka mode against the real broker, ledger and executor ClientsIT starts, on a Schema
// Registry (the project's loopback one) that demands basic credentials or a bearer token:
//   EFFECTLEDGER_BOOTSTRAP, EFFECTLEDGER_REGISTRY_URL, EFFECTLEDGER_REGISTRY_USER/PASSWORD,
//   EFFECTLEDGER_REGISTRY_TOKEN
// plus EFFECTLEDGER_REPORT and EFFECTLEDGER_JAVA_KEY/STEP as for gateway.test.ts, which runs first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { derive, EffectLedgerError, NativeToolCallClient, type CallResult, type NativeClientOptions } from '../src/index.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this suite is run by ClientsIT`);
  return value;
};
const CHARGE_RULES = { ignore: ['/reason'], require: ['/amount', '/to'] };
const options = (): NativeClientOptions => ({
  brokers: [env('EFFECTLEDGER_BOOTSTRAP')],
  schemaRegistry: {
    url: env('EFFECTLEDGER_REGISTRY_URL'),
    basic: { username: env('EFFECTLEDGER_REGISTRY_USER'), password: env('EFFECTLEDGER_REGISTRY_PASSWORD') },
  },
  keyRules: { charge_card: CHARGE_RULES },
  timeoutMs: 60_000,
});
const report = (name: string, key: string) =>
  appendFileSync(env('EFFECTLEDGER_REPORT'), JSON.stringify({ name, key }) + '\n');
function succeeded(r: CallResult) {
  assert.equal(r.kind, 'succeeded', JSON.stringify(r));
  return r as Extract<CallResult, { kind: 'succeeded' }>;
}

let client: NativeToolCallClient;
before(async () => {
  client = await NativeToolCallClient.connect(options());
});
after(async () => {
  await client?.close();
});

test('native: the retry layers take effect once, and a new client replaying the step gets the result', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-native', stepId: 'pay-invoice', scope: 'customer:43' };
  const args = { amount: 1300, to: 'cus_43', reason: 'monthly invoice' };

  const [first, concurrent] = await Promise.all([
    client.call(step, 'charge_card', args),
    client.call(step, 'charge_card', { to: 'cus_43', amount: 1300, reason: 'the model again' }),
  ]);
  const retried = succeeded(await client.call(step, 'charge_card', JSON.stringify(args)));
  // with a bearer token: the intent schema is registered and the reply's schema fetched with it
  const replayer = await NativeToolCallClient.connect({
    ...options(),
    schemaRegistry: { url: env('EFFECTLEDGER_REGISTRY_URL'), bearerToken: env('EFFECTLEDGER_REGISTRY_TOKEN') },
  });
  let replayed: CallResult;
  try {
    replayed = await replayer.call(step, 'charge_card', { amount: 1300, to: 'cus_43', reason: 'after the crash' });
  } finally {
    await replayer.close();
  }

  const a = succeeded(first);
  const b = succeeded(concurrent);
  assert.equal(b.key, a.key);
  assert.equal(b.effectId, a.effectId);
  // one of the two sent at once caused the effect; the other joined it (or came after it)
  assert.deepEqual([a.replayed, b.replayed].sort(), [false, true]);
  for (const again of [retried, succeeded(replayed)]) {
    assert.equal(again.replayed, true);
    assert.equal(again.key, a.key);
    assert.equal(again.effectId, a.effectId);
  }
  report('typescript native: four retry layers', a.key);
});

test('native: the step Java, Python and the gateway called: the same key, replayed', async () => {
  const [runId, stepId, scope] = env('EFFECTLEDGER_JAVA_STEP').split('/');
  const step = { tenant: 'acme', runId, stepId, scope };

  const answer = succeeded(await client.call(step, 'charge_card', { amount: 700, to: 'cus_7' }));

  assert.equal(answer.key, env('EFFECTLEDGER_JAVA_KEY'));
  assert.equal(answer.key, derive(step, 'charge_card', { amount: 700, to: 'cus_7' }, CHARGE_RULES).key);
  assert.equal(answer.replayed, true);
  report('typescript native: after java, python and the gateway', answer.key);
});

test('native: a duplicate refused while the first is in flight waits for the first\'s result', async () => {
  // send_email refuses duplicates in flight; ClientsIT makes this key's effect take 4 s
  const step = { tenant: 'acme', runId: 'run-ts-native-refuse', stepId: 'notify' };
  const args = { to: 'ts@example.com', subject: 'receipt' };

  const [first, second] = (await Promise.all([client.call(step, 'send_email', args), client.call(step, 'send_email', args)])).map(succeeded);

  assert.equal(first.key, env('EFFECTLEDGER_REFUSE_KEY_TS'));
  // both answered by the first call's own reply (the same answer but for replayed): the call that
  // caused the effect says replayed false, the one refused in flight, which waited, true
  assert.deepEqual({ ...second, replayed: first.replayed }, first);
  assert.deepEqual([first.replayed, second.replayed].sort(), [false, true]);
  report('typescript native: duplicate refused in flight', first.key);
});

test('native: a client without the tool\'s key rules is refused by the ledger, not given a second effect', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-native-rules', stepId: 'pay' };
  // Without the tool's key rules the client hashes /reason, which the ledger leaves out: refused.
  const careless = await NativeToolCallClient.connect({ ...options(), keyRules: {}, followPolicy: false });
  try {
    const answer = await careless.call(step, 'charge_card', { amount: 5, to: 'cus_5', reason: 'x' });
    assert.equal(answer.kind, 'rejected', JSON.stringify(answer));
    assert.equal((answer as { error?: { code: string } }).error?.code, 'ARGUMENTS_HASH_MISMATCH');
  } finally {
    await careless.close();
  }
});

test('native: keys are derived with the applied policy\'s rules when the code gives none', async () => {
  // ClientsIT applied the ledger's tools.yaml to tool-policy (charge_card leaves /reason out).
  const step = { tenant: 'acme', runId: 'run-ts-native-applied', stepId: 'pay' };
  const following = await NativeToolCallClient.connect({ ...options(), keyRules: {} });
  try {
    assert.ok(following.policyVersion >= 1, `policy version ${following.policyVersion}`);
    assert.deepEqual(following.keyRulesOf('charge_card').ignore, ['/reason']);
    const answer = succeeded(await following.call(step, 'charge_card', { amount: 5, to: 'cus_5', reason: 'x' }));
    assert.equal(answer.key, derive(step, 'charge_card', { amount: 5, to: 'cus_5' }, CHARGE_RULES).key);
  } finally {
    await following.close();
  }
});

test('native: a call published just after its key was released gets its next life\'s answer', async () => {
  // reserve is released after one retryable failure; ClientsIT makes this key's first request
  // fail after 4 s. The held client is listening before the release, but its producer's send is
  // held back 10 s (kafkajs has no linger), so the ledger reads its intent after the release: it
  // starts the key's next life.
  const step = { tenant: 'acme', runId: 'run-ts-native-release', stepId: 'reserve' };
  const args = { amount: 13 };
  const held = await NativeToolCallClient.connect(options());
  try {
    const producer = (held as unknown as { producer: { send: (r: unknown) => Promise<unknown> } }).producer;
    const send = producer.send.bind(producer);
    producer.send = async (r: unknown) => {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      return send(r);
    };
    let lateDone = false;
    const late = held.call(step, 'reserve', args).finally(() => (lateDone = true));
    await new Promise((resolve) => setTimeout(resolve, 500));

    const first = await client.call(step, 'reserve', args);

    assert.equal(first.kind, 'failed', JSON.stringify(first));
    assert.equal((first as Extract<CallResult, { kind: 'failed' }>).error?.code, 'RETRIES_EXHAUSTED');
    assert.equal(first.key, env('EFFECTLEDGER_RELEASE_KEY_TS'));
    assert.equal(lateDone, false, 'the release came before the held intent was sent');
    const answer = succeeded(await late);
    assert.equal(answer.replayed, false);
    report('typescript native: answered after a release', answer.key);
  } finally {
    await held.close();
  }
});

test('native: closing the client answers a waiting call at once, still running', async () => {
  const closing = await NativeToolCallClient.connect({ ...options(), timeoutMs: 120_000 });
  const started = Date.now();
  const waiting = closing.call({ tenant: 'acme', runId: 'run-ts-native-close', stepId: 'pay' }, 'charge_card', { amount: 8, to: 'cus_8' });
  await closing.close();
  const answer = await waiting;
  assert.equal(answer.kind, 'running');
  assert.ok(Date.now() - started < 30_000, 'answered when the client closed, not at its timeout');
});

test("native: the intent carries the agent's active span as traceparent", async () => {
  // the agent's OpenTelemetry SDK: a tracer provider and the AsyncLocalStorage context manager
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const provider = new BasicTracerProvider();
  trace.setGlobalTracerProvider(provider);
  const step = { tenant: 'acme', runId: 'run-ts-native-traced', stepId: 'pay' };
  try {
    const { answer, traceparent } = await trace.getTracer('agent').startActiveSpan('agent tool call', async (span) => {
      try {
        const answer = succeeded(await client.call(step, 'charge_card', { amount: 9, to: 'cus_9' }));
        const { traceId, spanId } = span.spanContext();
        return { answer, traceparent: `00-${traceId}-${spanId}-01` };
      } finally {
        span.end();
      }
    });
    assert.equal(await intentHeader(answer.key, 'traceparent'), traceparent);
  } finally {
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
});

/** The header `name` of the intent published with `key`, read back from tool-intents. */
async function intentHeader(key: string, name: string): Promise<string | undefined> {
  const kafka = new Kafka({ brokers: [env('EFFECTLEDGER_BOOTSTRAP')], logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `ts-intent-headers-${randomUUID()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: 'tool-intents', fromBeginning: true });
    return await new Promise<string | undefined>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no intent with key ${key} on tool-intents in 30 s`)), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.key?.toString() === key) {
            clearTimeout(timer);
            resolve(message.headers?.[name]?.toString());
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
}

test('native: a registry refusing the credentials stops the client at connect, naming what to give', async () => {
  await assert.rejects(
    NativeToolCallClient.connect({ ...options(), schemaRegistry: { url: env('EFFECTLEDGER_REGISTRY_URL') } }),
    (e: unknown) => e instanceof EffectLedgerError && /refused a request without credentials \(HTTP 401\)/.test(e.message),
  );
});
