/**
 * Idempotency key derivation, version 1 (docs/key-derivation.md of Effect Ledger), held to the
 * project's shared vectors (clients/key-vectors.json). The canonical JSON is RFC 8785 from the
 * `canonicalize` package (by one of the RFC's authors); the I-JSON checks it does not make (depth)
 * and JSON pointers are here.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { KeyDerivationError } from './errors.js';

export const VERSION_PREFIX = 'v1:';
export const MAX_DEPTH = 100;

/** Where in an agent run a call happens, from the orchestrator; `scope` "" for none. */
export interface StepContext {
  tenant: string;
  runId: string;
  stepId: string;
  scope?: string;
}

/** A tool's key rules: the JSON pointers of its `key:` in the ledger's tools.yaml. */
export interface KeyRules {
  ignore?: readonly string[];
  require?: readonly string[];
}

export interface DerivedKey {
  key: string;
  canonicalArguments: string;
  argumentsHash: string;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Checks a step: tenant, run and step set; returns it with `scope` defaulted to "". */
export function stepContext(step: StepContext): Required<StepContext> {
  for (const name of ['tenant', 'runId', 'stepId'] as const) {
    const value = step[name];
    if (typeof value !== 'string' || value.trim() === '') {
      throw new TypeError(`${name} must be set: it is part of the idempotency key`);
    }
  }
  const scope = step.scope ?? '';
  if (typeof scope !== 'string') throw new TypeError('scope must be a string ("" for none)');
  return { tenant: step.tenant, runId: step.runId, stepId: step.stepId, scope };
}

/** Checks key rules as the ledger does: every entry a JSON pointer, none both ignored and required. */
export function keyRules(rules: KeyRules = {}): Required<KeyRules> {
  const ignore = [...(rules.ignore ?? [])];
  const require = [...(rules.require ?? [])];
  for (const p of [...ignore, ...require]) {
    if (typeof p !== 'string' || !p.startsWith('/')) {
      throw new TypeError(`'${p}' is not a JSON pointer; write it like /reason`);
    }
  }
  const both = require.find((p) => ignore.includes(p));
  if (both) throw new TypeError(`argument ${both} is both ignored and required`);
  return { ignore, require };
}

/**
 * The key of one logical action: `tool` called with `args` (JSON text or a plain object) at
 * `step`. Throws {@link KeyDerivationError} where the ledger would refuse the arguments.
 */
export function derive(
  step: StepContext,
  tool: string,
  args: string | Record<string, unknown>,
  rules: KeyRules = {},
): DerivedKey {
  const s = stepContext(step);
  const r = keyRules(rules);
  if (typeof tool !== 'string' || tool.trim() === '') {
    throw new TypeError('tool must be set: it is part of the idempotency key');
  }
  const parsed = parseArguments(args);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new KeyDerivationError('ARGUMENTS_NOT_OBJECT', 'arguments must be a JSON object of named arguments');
  }
  for (const p of r.ignore) remove(parsed, p);
  for (const p of r.require) {
    const value = at(parsed, p);
    if (value === undefined || value === null) {
      throw new KeyDerivationError(
        'MISSING_REQUIRED_FIELD',
        `tool ${tool} needs argument ${p} to tell one action from another`,
      );
    }
  }
  const canonicalArguments = jcs(parsed);
  const preimage = jcs({
    args: parsed,
    runId: s.runId,
    scope: s.scope,
    stepId: s.stepId,
    tenant: s.tenant,
    tool,
    v: 1,
  });
  return {
    key: VERSION_PREFIX + createHash('sha256').update(preimage, 'utf8').digest('base64url'),
    canonicalArguments,
    argumentsHash: 'sha256:' + createHash('sha256').update(canonicalArguments, 'utf8').digest('hex'),
  };
}

/**
 * JSON text (or a plain object, through JSON.stringify) to JSON values, refusing what is not
 * I-JSON: numbers beyond a double, unpaired surrogates (by {@link jcs}), nesting deeper than 100.
 */
export function parseArguments(args: string | Record<string, unknown>): Json {
  let text: string;
  if (typeof args === 'string') {
    text = args;
  } else {
    try {
      // JSON.stringify writes NaN and Infinity as null: another value, so another action's key.
      text = JSON.stringify(args, (_k, v: unknown) => {
        if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${v} is not JSON`);
        return v;
      });
    } catch (e) {
      throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are not JSON: ${(e as Error).message}`);
    }
    if (text === undefined) throw new KeyDerivationError('ARGUMENTS_NOT_JSON', 'arguments are not JSON');
  }
  if (text.trim() === '') throw new KeyDerivationError('ARGUMENTS_NOT_JSON', 'arguments are empty');
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch (e) {
    throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are not JSON: ${(e as Error).message}`);
  }
  checkDepth(value, 1);
  return value;
}

function checkDepth(value: Json, depth: number): void {
  if (value === null || typeof value !== 'object') return;
  if (depth > MAX_DEPTH) {
    throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are nested deeper than ${MAX_DEPTH} levels`);
  }
  for (const child of Array.isArray(value) ? value : Object.values(value)) checkDepth(child, depth + 1);
}

/** RFC 8785; refuses NaN, Infinity (1e400) and unpaired surrogates as ARGUMENTS_NOT_JSON. */
export function jcs(value: Json): string {
  try {
    const text = canonicalize(value);
    if (text === undefined) throw new Error('nothing to canonicalize');
    return text;
  } catch (e) {
    throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are not I-JSON: ${(e as Error).message}`);
  }
}

// JSON pointers (RFC 6901)

const INDEX = /^(0|[1-9][0-9]*)$/;
const tokens = (pointer: string) =>
  pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
const own = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

function child(node: Json | undefined, token: string): Json | undefined {
  if (node === null || node === undefined || typeof node !== 'object') return undefined;
  if (Array.isArray(node)) return INDEX.test(token) && Number(token) < node.length ? node[Number(token)] : undefined;
  return own(node, token) ? node[token] : undefined;
}

function at(root: Json, pointer: string): Json | undefined {
  let node: Json | undefined = root;
  for (const t of tokens(pointer)) node = child(node, t);
  return node;
}

function remove(root: Json, pointer: string): void {
  const ts = tokens(pointer);
  if (ts.length === 0) return;
  let parent: Json | undefined = root;
  for (const t of ts.slice(0, -1)) parent = child(parent, t);
  const last = ts[ts.length - 1];
  if (parent === null || parent === undefined || typeof parent !== 'object') return;
  if (Array.isArray(parent)) {
    if (INDEX.test(last) && Number(last) < parent.length) parent.splice(Number(last), 1);
  } else if (own(parent, last)) {
    delete parent[last];
  }
}
