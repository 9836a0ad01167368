// Key derivation against the project's one vectors file, which the Java and Python clients and
// the ledger are held to too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { derive, jcs, KeyDerivationError, keyRules, parseArguments, stepContext } from '../src/index.js';

interface Vector {
  name: string; tenant: string; runId: string; stepId: string; tool: string; scope: string;
  volatile: string[]; required: string[]; arguments: string;
  canonicalArguments?: string; argumentsHash?: string; key?: string; error?: string;
}
const vectors: Vector[] = JSON.parse(readFileSync(new URL('../../../key-vectors.json', import.meta.url), 'utf8'));

test('the shared file holds every vector', () => {
  assert.ok(vectors.length >= 61, `only ${vectors.length} vectors`);
});

for (const v of vectors) {
  test(`vector: ${v.name}`, () => {
    const step = { tenant: v.tenant, runId: v.runId, stepId: v.stepId, scope: v.scope };
    const rules = { ignore: v.volatile, require: v.required };
    if (v.error) {
      assert.throws(
        () => derive(step, v.tool, v.arguments, rules),
        (e: unknown) => e instanceof KeyDerivationError && e.code === v.error,
      );
    } else {
      const got = derive(step, v.tool, v.arguments, rules);
      assert.equal(got.canonicalArguments, v.canonicalArguments);
      assert.equal(got.argumentsHash, v.argumentsHash);
      assert.equal(got.key, v.key);
    }
  });
}

test('an object gives the key of its JSON text, whatever its member order', () => {
  const v = vectors[0];
  const step = { tenant: v.tenant, runId: v.runId, stepId: v.stepId, scope: v.scope };
  const object = JSON.parse(v.arguments) as Record<string, unknown>;
  const reordered = Object.fromEntries(Object.entries(object).reverse());
  const rules = { ignore: v.volatile, require: v.required };
  assert.equal(derive(step, v.tool, object, rules).key, v.key);
  assert.equal(derive(step, v.tool, reordered, rules).key, v.key);
});

test('a BigInt, NaN or Infinity in an object is refused as not JSON', () => {
  const step = { tenant: 'acme', runId: 'r', stepId: 's' };
  for (const bad of [{ n: 1n }, { n: Number.NaN }, { n: Infinity }]) {
    assert.throws(
      () => derive(step, 'math', bad as Record<string, unknown>),
      (e: unknown) => e instanceof KeyDerivationError && e.code === 'ARGUMENTS_NOT_JSON',
    );
  }
});

test('canonical numbers are ECMAScript', () => {
  assert.equal(jcs(parseArguments('[1e16,1e21,1e-6,1e-7,-0,0.1,9007199254740993]')),
    '[10000000000000000,1e+21,0.000001,1e-7,0,0.1,9007199254740992]');
});

test('nesting deeper than 100 levels is refused', () => {
  assert.doesNotThrow(() => parseArguments('['.repeat(100) + ']'.repeat(100)));
  assert.throws(() => parseArguments('['.repeat(101) + ']'.repeat(101)), KeyDerivationError);
  assert.throws(() => parseArguments('['.repeat(100000) + ']'.repeat(100000)), KeyDerivationError);
});

test('a step needs tenant, run and step; scope defaults to ""', () => {
  assert.equal(stepContext({ tenant: 't', runId: 'r', stepId: 's' }).scope, '');
  for (const bad of [{ tenant: '', runId: 'r', stepId: 's' }, { tenant: 't', runId: ' ', stepId: 's' },
    { tenant: 't', runId: 'r', stepId: '' }]) {
    assert.throws(() => stepContext(bad), TypeError);
  }
});

test('key rules are JSON pointers, never both ignored and required', () => {
  assert.throws(() => keyRules({ ignore: ['reason'] }), TypeError);
  assert.throws(() => keyRules({ ignore: ['/a'], require: ['/a'] }), TypeError);
});
