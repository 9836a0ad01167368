// A release's reply answers only the calls whose intent the ledger had read before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PendingReply, throughOf } from '../src/pending.js';

function call() {
  const answers: string[] = [];
  return { answers, reply: new PendingReply<string>((r) => answers.push(r)) };
}

test('a release that read the call s intent answers it', () => {
  const c = call();
  c.reply.published(7);
  assert.equal(c.reply.offer('released', 7), true);
  assert.deepEqual(c.answers, ['released']);
});

test('a release made before the intent was read does not, and the next life s answer does', () => {
  const c = call();
  c.reply.published(8);
  assert.equal(c.reply.offer('released', 7), false);
  assert.equal(c.reply.offer('succeeded', undefined), true);
  assert.deepEqual(c.answers, ['succeeded']);
});

test('a release before the broker s ack is decided by the offset that comes', () => {
  const read = call();
  const notRead = call();
  assert.equal(read.reply.offer('released', 5), false);
  assert.equal(notRead.reply.offer('released', 5), false);
  read.reply.published(5);
  notRead.reply.published(6);
  assert.deepEqual(read.answers, ['released']);
  assert.deepEqual(notRead.answers, []);
});

test('a release whose ledger could not tell answers no call', () => {
  const c = call();
  assert.equal(c.reply.offer('released', -1), false);
  c.reply.published(0);
  assert.deepEqual(c.answers, []);
});

test('no release answers a call whose offset the broker did not give', () => {
  const c = call();
  assert.equal(c.reply.offer('released', 5), false);
  c.reply.published(-1);
  assert.deepEqual(c.answers, []);
});

test('the header is read from the reply s Kafka headers', () => {
  assert.equal(throughOf({ 'effectledger.intents.through': Buffer.from('12') }), 12);
  assert.equal(throughOf({ 'effectledger.request.id': Buffer.from('r') }), undefined);
  assert.equal(throughOf(undefined), undefined);
  assert.equal(throughOf({ 'effectledger.intents.through': Buffer.from('x') }), -1);
});
