// The wrapper and the step storage, with a client that records what it is asked to call (the
// gateway itself is exercised in test-integration, against the real one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CallRejected, CallStillRunning, EffectHeld, exactlyOnce, currentStep, withStep,
  GatewayClient, type CallResult,
} from '../src/index.js';

function recording(answer: CallResult) {
  const calls: unknown[][] = [];
  const client = { call: async (...args: unknown[]) => { calls.push(args); return answer; } };
  return { calls, client: client as unknown as GatewayClient };
}

test('calls the tool with its arguments and the current step, scope from the arguments', async () => {
  const { calls, client } = recording({ kind: 'succeeded', key: 'k', result: { id: 'ch_1' }, replayed: false, attempts: 1 });
  const charge = exactlyOnce<{ amount: number; to: string }>(client, { name: 'charge_card', scope: (a) => `customer:${a.to}` });

  const result = await withStep({ tenant: 'acme', runId: 'run-1', stepId: 'pay' }, () => charge({ amount: 1000, to: 'cus_42' }));

  assert.deepEqual(result, { id: 'ch_1' });
  assert.deepEqual(calls[0].slice(0, 3), [
    { tenant: 'acme', runId: 'run-1', stepId: 'pay', scope: 'customer:cus_42' }, 'charge_card', { amount: 1000, to: 'cus_42' },
  ]);
});

test('refuses a call outside a step', async () => {
  const { client } = recording({ kind: 'running', key: 'k', location: '/v1/calls/k' });
  await assert.rejects(exactlyOnce(client, { name: 'x' })({}), /outside withStep/);
});

test('each outcome but success is its typed error, with the key', async () => {
  const error = { code: 'IDEMPOTENCY_KEY_REUSED', message: 'other arguments', retriable: false, correctiveAction: '' };
  const cases: [CallResult, new (...a: never[]) => Error][] = [
    [{ kind: 'rejected', key: 'k', error, status: 422 }, CallRejected],
    [{ kind: 'held', key: 'k', error, replayed: false }, EffectHeld],
    [{ kind: 'running', key: 'k', location: '/v1/calls/k' }, CallStillRunning],
  ];
  for (const [answer, type] of cases) {
    const { client } = recording(answer);
    await withStep({ tenant: 'acme', runId: 'r', stepId: 's' }, () =>
      assert.rejects(exactlyOnce(client, { name: 't' })({}), (e: unknown) => e instanceof type && (e as unknown as { key: string }).key === 'k'));
  }
});

test('the step follows awaits and is gone after the block', async () => {
  const seen: (string | undefined)[] = [];
  await withStep({ tenant: 'acme', runId: 'r', stepId: 'outer' }, async () => {
    await new Promise((r) => setTimeout(r, 1)); // a real async hop (a timer), not a wait: the step must follow it
    seen.push(currentStep()?.stepId);
    await withStep({ tenant: 'acme', runId: 'r', stepId: 'inner' }, async () => { seen.push(currentStep()?.stepId); });
    seen.push(currentStep()?.stepId);
  });
  seen.push(currentStep()?.stepId);
  assert.deepEqual(seen, ['outer', 'inner', 'outer', undefined]);
});

test('attach takes only a gateway Location, before sending anything', async () => {
  const client = new GatewayClient({ url: 'http://127.0.0.1:9', token: 'token' });
  await assert.rejects(client.attach('k', { location: 'https://elsewhere.example/v1/calls/k' }),
    (e: unknown) => e instanceof Error && e.message.includes('/v1/calls/'));
});
