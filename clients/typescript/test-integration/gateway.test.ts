// The TypeScript client against a real gateway, ledger, executor and counting payment API, started
// by the Java integration test ClientsIT (app module), which passes where they listen:
//   EFFECTLEDGER_GATEWAY_URL, EFFECTLEDGER_TOKEN   the gateway and a token of tenant acme
//   EFFECTLEDGER_REPORT                            one JSON line per action {"name","key"}; the Java
//                                                  test counts each one's effects afterwards
//   EFFECTLEDGER_JAVA_KEY, EFFECTLEDGER_JAVA_STEP  the key the Java client got for a step it called
//                                                  first (then Python), and that step (run/step/scope)
// Not meant to run on its own: without those variables every test fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import {
  derive, exactlyOnce, GatewayClient, GatewayError, KeyDerivationError, ToolFailed, Unavailable, withStep,
  type CallResult,
} from '../src/index.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this suite is run by ClientsIT`);
  return value;
};
const client = (options: Partial<ConstructorParameters<typeof GatewayClient>[0]> = {}) =>
  new GatewayClient({ url: env('EFFECTLEDGER_GATEWAY_URL'), token: env('EFFECTLEDGER_TOKEN'), ...options });
// bypassed: run once more under the fresh effect key of one operator approval (ClientsIT counts it)
const report = (name: string, key: string, bypassed = false) =>
  appendFileSync(env('EFFECTLEDGER_REPORT'), JSON.stringify({ name, key, bypassed }) + '\n');
const CHARGE_RULES = { ignore: ['/reason'], require: ['/amount', '/to'] };

function succeeded(r: CallResult) {
  assert.equal(r.kind, 'succeeded', JSON.stringify(r));
  return r as Extract<CallResult, { kind: 'succeeded' }>;
}

test('the four retry layers take effect once', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-layers', stepId: 'pay-invoice', scope: 'customer:42' };
  const args = { amount: 1000, to: 'cus_42', reason: 'monthly invoice' };

  const first = succeeded(await client().call(step, 'charge_card', args));
  const httpRetry = succeeded(await client().call(step, 'charge_card', args));
  const wrapperRetry = succeeded(await client({ retries: 0 }).call(step, 'charge_card', JSON.stringify(args)));
  const remitted = succeeded(
    await client().call(step, 'charge_card', { reason: 'the model rephrased it', to: 'cus_42', amount: 1000 }),
  );
  const chargeCard = exactlyOnce(client(), { name: 'charge_card', scope: 'customer:42' });
  const replayedResult = await withStep({ tenant: 'acme', runId: 'run-ts-layers', stepId: 'pay-invoice' }, () =>
    chargeCard({ amount: 1000, to: 'cus_42', reason: 'after the crash' }),
  );

  assert.equal(first.replayed, false);
  for (const again of [httpRetry, wrapperRetry, remitted]) {
    assert.equal(again.replayed, true);
    assert.equal(again.key, first.key);
    assert.equal(again.effectId, first.effectId);
  }
  assert.deepEqual(replayedResult, first.result);
  report('typescript: four retry layers', first.key);
});

test('the step Java and Python called first: the same key, replayed', async () => {
  const [runId, stepId, scope] = env('EFFECTLEDGER_JAVA_STEP').split('/');
  const step = { tenant: 'acme', runId, stepId, scope };
  const args = { amount: 700, to: 'cus_7' };

  const local = derive(step, 'charge_card', args, CHARGE_RULES);
  const answer = succeeded(await client().call(step, 'charge_card', args));

  assert.equal(local.key, env('EFFECTLEDGER_JAVA_KEY'));
  assert.equal(answer.key, env('EFFECTLEDGER_JAVA_KEY'));
  assert.equal(answer.replayed, true);
  report('typescript: after java and python', answer.key);
});

test('a call still running at the end of its wait is attached to by key', async () => {
  const running = await client().call({ tenant: 'acme', runId: 'run-ts-attach', stepId: 'pay' }, 'charge_card',
    { amount: 6, to: 'cus_6' }, { wait: 0 });
  assert.equal(running.kind, 'running');
  // The Location names the call's intent, so that no release of the key's earlier life answers it.
  assert.match(running.kind === 'running' ? running.location ?? '' : '', /^\/v1\/calls\/[^?]+\?intent=[0-9]+$/);
  const done = succeeded(await client().attach(running.key, {
    wait: 20, location: running.kind === 'running' ? running.location : undefined }));
  assert.equal(done.key, running.key);
  report('typescript: attached after 202', done.key);
});

test('a failed tool is a typed failure and stays failed', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-refund', stepId: 'refund' };
  const first = await client().call(step, 'refund', { amount: 4 });
  const again = await client().call(step, 'refund', { amount: 4 });
  assert.equal(first.kind, 'failed');
  assert.equal(again.kind, 'failed');
  assert.equal((again as { replayed: boolean }).replayed, true);
  await withStep(step, () =>
    assert.rejects(exactlyOnce(client(), { name: 'refund' })({ amount: 4 }),
      (e: unknown) => e instanceof ToolFailed && e.key === first.key));
});

test('a key reused for other arguments is rejected with 422', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-reuse', stepId: 'pay' };
  const key = 'ts-own-key-reused';
  const first = succeeded(await client().call(step, 'charge_card', { amount: 11, to: 'cus_11' }, { idempotencyKey: key }));
  const other = await client().call(step, 'charge_card', { amount: 12, to: 'cus_11' }, { idempotencyKey: key });
  assert.equal(first.key, key);
  assert.equal(other.kind, 'rejected');
  const rejected = other as Extract<CallResult, { kind: 'rejected' }>;
  assert.equal(rejected.status, 422);
  assert.equal(rejected.error?.code, 'IDEMPOTENCY_KEY_REUSED');
  report('typescript: own key, reused', key);
});

test('an operator approval runs a settled call once more, where the policy allows bypass', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-bypass', stepId: 'mail' };
  const args = { to: 'ops@example.com', text: 'receipt 13' };
  const first = succeeded(await client().call(step, 'send_email', args));
  const approved = succeeded(await client().call(step, 'send_email', args, { bypassApproval: 'ts-ops-ticket-1' }));
  const retried = succeeded(await client().call(step, 'send_email', args, { bypassApproval: 'ts-ops-ticket-1' }));
  assert.equal(approved.replayed, false);
  assert.notEqual(approved.effectId, first.effectId);
  assert.equal(retried.effectId, approved.effectId);
  report('typescript: bypass', first.key, true);

  const pay = { tenant: 'acme', runId: 'run-ts-bypass', stepId: 'pay', scope: 'customer:4' };
  succeeded(await client().call(pay, 'charge_card', { amount: 4, to: 'cus_4' }));
  const refused = await client().call(pay, 'charge_card', { amount: 4, to: 'cus_4' }, { bypassApproval: 'x' });
  assert.equal(refused.kind, 'rejected');
  const rejected = refused as Extract<CallResult, { kind: 'rejected' }>;
  assert.equal(rejected.status, 403);
  assert.equal(rejected.error?.code, 'BYPASS_NOT_ALLOWED');
  await assert.rejects(client().call(pay, 'charge_card', { amount: 4, to: 'cus_4' }, { bypassApproval: ' ' }), TypeError);
});

test('the gateway refusing the request is a typed error', async () => {
  const step = { tenant: 'acme', runId: 'run-ts-refused', stepId: 's' };
  await assert.rejects(client().call(step, 'no_such_tool', {}), (e: unknown) => e instanceof GatewayError && e.status === 404);
  await assert.rejects(
    new GatewayClient({ url: env('EFFECTLEDGER_GATEWAY_URL'), token: 'not-a-token' }).call(step, 'charge_card', { amount: 1, to: 'x' }),
    (e: unknown) => e instanceof GatewayError && e.status === 401);
  await assert.rejects(client().call(step, 'charge_card', { to: 'cus_1' }),
    (e: unknown) => e instanceof KeyDerivationError && e.code === 'MISSING_REQUIRED_FIELD');
  await assert.rejects(client().call(step, 'charge_card', { amount: Number.NaN, to: 'x' }),
    (e: unknown) => e instanceof KeyDerivationError && e.code === 'ARGUMENTS_NOT_JSON');
});

test('an unreachable gateway is Unavailable after the retries', async () => {
  const closed = new GatewayClient({ url: 'http://127.0.0.1:9', token: 't', retries: 1, backoffMs: 50 });
  await assert.rejects(closed.call({ tenant: 'acme', runId: 'r', stepId: 's' }, 'charge_card', { amount: 1, to: 'x' }),
    (e: unknown) => e instanceof Unavailable && /same step/.test(e.message));
});
