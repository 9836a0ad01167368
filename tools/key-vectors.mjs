// Generates clients/key-vectors.json from the cases below with an independent implementation of
// docs/key-derivation.md in JavaScript, whose JSON.stringify is the number and string
// serialization RFC 8785 prescribes. The Java, Python and TypeScript clients' tests check every
// vector of that one file.
//
//   node tools/key-vectors.mjs > clients/key-vectors.json
import { createHash } from 'node:crypto';

function jcs(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return '[' + value.map(jcs).join(',') + ']';
  // Array.prototype.sort compares UTF-16 code units, as RFC 8785 section 3.2.3 requires.
  return '{' + Object.keys(value).sort().map(k => JSON.stringify(k) + ':' + jcs(value[k])).join(',') + '}';
}

const token = t => t.replace(/~1/g, '/').replace(/~0/g, '~');

function at(root, pointer) {
  let node = root;
  for (const t of pointer.split('/').slice(1).map(token)) {
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, t)) return undefined;
    node = node[t];
  }
  return node;
}

function remove(root, pointer) {
  const tokens = pointer.split('/').slice(1).map(token);
  const parent = tokens.length === 1 ? root : at(root, '/' + pointer.split('/').slice(1, -1).join('/'));
  const last = tokens[tokens.length - 1];
  if (parent === null || typeof parent !== 'object') return;
  if (Array.isArray(parent)) {
    if (/^(0|[1-9][0-9]*)$/.test(last) && Number(last) < parent.length) parent.splice(Number(last), 1);
  } else if (Object.prototype.hasOwnProperty.call(parent, last)) {
    delete parent[last];
  }
}

// I-JSON (RFC 7493), which RFC 8785 requires: numbers a double holds, Unicode text (no unpaired
// surrogate), and, the key derivation's own bound, no deeper than 100 levels of objects and arrays.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
function interchangeable(value, depth) {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'string') return !LONE_SURROGATE.test(value);
  if (value === null || typeof value !== 'object') return true;
  if (depth > 100) return false;
  if (Array.isArray(value)) return value.every(v => interchangeable(v, depth + 1));
  return Object.keys(value).every(k => !LONE_SURROGATE.test(k) && interchangeable(value[k], depth + 1));
}

const sha256 = text => createHash('sha256').update(Buffer.from(text, 'utf8'));

function derive(c) {
  let args;
  try { args = JSON.parse(c.arguments); } catch { return { error: 'ARGUMENTS_NOT_JSON' }; }
  if (!interchangeable(args, 1)) return { error: 'ARGUMENTS_NOT_JSON' };
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { error: 'ARGUMENTS_NOT_OBJECT' };
  for (const p of c.volatile) remove(args, p);
  for (const p of c.required) {
    const v = at(args, p);
    if (v === undefined || v === null) return { error: 'MISSING_REQUIRED_FIELD' };
  }
  const canonical = jcs(args);
  const preimage = jcs({ args, runId: c.runId, scope: c.scope, stepId: c.stepId, tenant: c.tenant, tool: c.tool, v: 1 });
  return {
    canonicalArguments: canonical,
    argumentsHash: 'sha256:' + sha256(canonical).digest('hex'),
    key: 'v1:' + sha256(preimage).digest('base64url'),
  };
}

const base = { tenant: 'acme', runId: 'run-7f3a', stepId: 'pay-invoice', tool: 'charge_card', scope: 'customer:42',
  volatile: ['/reason', '/clientTs'], required: ['/amount', '/currency', '/to'] };
const charge = '{"amount":1000,"currency":"EUR","to":"cus_42","reason":"monthly invoice","clientTs":"2026-11-22T10:00:00Z"}';
const cases = [
  ['charge', {}],
  ['charge: whitespace and newlines', { arguments: '{\n  "amount" : 1000 ,\n\t"currency":"EUR", "to":"cus_42",\n "reason":"monthly invoice","clientTs":"2026-11-22T10:00:00Z" }\n' }],
  ['charge: key order', { arguments: '{"to":"cus_42","clientTs":"2026-11-22T10:00:00Z","currency":"EUR","reason":"monthly invoice","amount":1000}' }],
  ['charge: 1000.0 for 1000', { arguments: '{"amount":1000.0,"currency":"EUR","to":"cus_42"}' }],
  ['charge: 1e3 for 1000', { arguments: '{"amount":1e3,"currency":"EUR","to":"cus_42"}' }],
  ['charge: unicode escapes', { arguments: '{"amount":1000,"currency":"\\u0045\\u0055\\u0052","to":"cus_\\u0034\\u0032"}' }],
  ['charge: other free-text reason (volatile)', { arguments: '{"amount":1000,"currency":"EUR","to":"cus_42","reason":"the model rephrased this"}' }],
  ['charge: other client timestamp (volatile)', { arguments: '{"amount":1000,"currency":"EUR","to":"cus_42","clientTs":"2026-11-23T09:59:59Z"}' }],
  ['charge: different amount', { arguments: '{"amount":1001,"currency":"EUR","to":"cus_42"}' }],
  ['charge: amount as string is another value', { arguments: '{"amount":"1000","currency":"EUR","to":"cus_42"}' }],
  ['charge: different currency', { arguments: '{"amount":1000,"currency":"USD","to":"cus_42"}' }],
  ['charge: different recipient', { arguments: '{"amount":1000,"currency":"EUR","to":"cus_43"}' }],
  ['charge: different step', { stepId: 'pay-invoice-2' }],
  ['charge: different run', { runId: 'run-7f3b' }],
  ['charge: different tenant', { tenant: 'globex' }],
  ['charge: different tool', { tool: 'refund_card' }],
  ['charge: different scope', { scope: 'customer:43' }],
  ['charge: no scope', { scope: '' }],
  ['charge: missing amount', { arguments: '{"currency":"EUR","to":"cus_42"}' }],
  ['charge: null recipient', { arguments: '{"amount":1000,"currency":"EUR","to":null}' }],
  ['not JSON', { arguments: '{"amount":1000,' }],
  ['nested objects sorted at every level', { tool: 'create_order', required: [], volatile: [],
    arguments: '{"z":{"b":2,"a":1},"a":[{"y":1,"x":2}]}' }],
  ['nested: same content, other order', { tool: 'create_order', required: [], volatile: [],
    arguments: '{"a":[{"x":2,"y":1}],"z":{"a":1,"b":2}}' }],
  ['array order is significant', { tool: 'create_order', required: [], volatile: [],
    arguments: '{"a":[{"x":2,"y":1}],"z":{"b":2,"a":1},"items":[2,1]}' }],
  ['nested volatile field', { tool: 'create_order', required: ['/order/id'], volatile: ['/meta/traceId'],
    arguments: '{"order":{"id":"A-17"},"meta":{"traceId":"t-1","source":"agent"}}' }],
  ['nested volatile field, other trace id', { tool: 'create_order', required: ['/order/id'], volatile: ['/meta/traceId'],
    arguments: '{"meta":{"source":"agent","traceId":"t-2"},"order":{"id":"A-17"}}' }],
  ['volatile key with slash (~1) and tilde (~0)', { tool: 'tag', required: [], volatile: ['/a~1b', '/c~0d'],
    arguments: '{"a/b":1,"c~d":2,"e":3}' }],
  ['volatile array element', { tool: 'tag', required: [], volatile: ['/tags/0'],
    arguments: '{"tags":["volatile-first","kept"]}' }],
  ['empty arguments', { tool: 'ping', required: [], volatile: [], arguments: '{}' }],
  ['scalar arguments are refused', { tool: 'ping', required: [], volatile: [], arguments: '42' }],
  ['numbers: negative zero, fractions, exponents', { tool: 'math', required: [], volatile: [],
    arguments: '{"negZero":-0,"tenth":0.1,"sum":0.30000000000000004,"big":1e21,"small":1e-7,"third":0.3333333333333333}' }],
  ['numbers: 100 and 1E2 alike', { tool: 'math', required: [], volatile: [], arguments: '{"n":1E2}' }],
  ['numbers: 100', { tool: 'math', required: [], volatile: [], arguments: '{"n":100}' }],
  ['strings: escapes and controls', { tool: 'note', required: [], volatile: [],
    arguments: '{"text":"line\\nbreak \\"quoted\\" back\\\\slash \\/slash \\u0001ctl tab\\t"}' }],
  ['strings: non-ASCII and emoji as is', { tool: 'note', required: [], volatile: [], arguments: '{"text":"café ✓ 😀"}' }],
  ['strings: non-ASCII and emoji escaped', { tool: 'note', required: [], volatile: [],
    arguments: '{"text":"caf\\u00e9 \\u2713 \\ud83d\\ude00"}' }],
  ['keys sorted by UTF-16 code units', { tool: 'note', required: [], volatile: [],
    arguments: '{"\\ufb33":1,"\\ud83d\\ude00":2,"a":3,"A":4,"\\u00e9":5}' }],
  ['array arguments are refused', { tool: 'ping', required: [], volatile: [], arguments: '[1,2]' }],
  ['literals', { tool: 'flags', required: [], volatile: [], arguments: '{"t":true,"f":false,"n":null}' }],
  // Edges where JSON libraries of different languages part ways; docs/key-derivation.md says what
  // each one must do.
  ['numbers: an integer above 2^53 is a double (precision lost)', { tool: 'lookup', required: [], volatile: [],
    arguments: '{"id":9007199254740993}' }],
  ['numbers: 2^53 itself, the same key as 2^53 + 1', { tool: 'lookup', required: [], volatile: [],
    arguments: '{"id":9007199254740992}' }],
  ['numbers: a large id sent as a string keeps every digit', { tool: 'lookup', required: [], volatile: [],
    arguments: '{"id":"9007199254740993"}' }],
  ['numbers: a 30-digit integer', { tool: 'math', required: [], volatile: [],
    arguments: '{"n":123456789012345678901234567890}' }],
  ['numbers: where the exponent form begins and ends', { tool: 'math', required: [], volatile: [],
    arguments: '{"n":[1e16,1e20,1e21,1e-6,1e-7,123e-20,0.000001234,5e-324,1.7976931348623157e308,-1e-7,100000000000000000000000,4.35,0.1e1,-0.0,0e10]}' }],
  ['numbers: beyond a double are refused', { tool: 'math', required: [], volatile: [], arguments: '{"n":1e400}' }],
  ['numbers: NaN is not JSON', { tool: 'math', required: [], volatile: [], arguments: '{"n":NaN}' }],
  ['numbers: a leading zero is not JSON', { tool: 'math', required: [], volatile: [], arguments: '{"n":01}' }],
  ['strings: an unpaired surrogate is refused', { tool: 'note', required: [], volatile: [], arguments: '{"text":"\\ud800"}' }],
  ['strings: an unpaired surrogate in a member name is refused', { tool: 'note', required: [], volatile: [],
    arguments: '{"\\udc00":1}' }],
  ['strings: DEL, U+2028 and U+2029 as they are, controls escaped', { tool: 'note', required: [], volatile: [],
    arguments: '{"text":"\\u007f \\u2028 \\u2029 \\u001f \\u0000 \\b\\f\\r"}' }],
  ['keys: a non-BMP member sorts before U+E000 (UTF-16 order, not code points)', { tool: 'note', required: [], volatile: [],
    arguments: '{"\\ue000":1,"\\ud83d\\ude00":2,"\\uffff":3,"\\ud7ff":4}' }],
  ['keys: a member name with a non-BMP character, nested', { tool: 'note', required: [], volatile: [],
    arguments: '{"outer":{"\\ud83d\\ude00b":1,"\\ud83d\\ude00a":2}}' }],
  ['keys: the same member twice, the last one counts', { tool: 'note', required: [], volatile: [],
    arguments: '{"a":1,"a":2}' }],
  ['nesting: 100 levels', { tool: 'deep', required: [], volatile: [],
    arguments: '{"a":'.repeat(99) + '[1]' + '}'.repeat(99) }],
  ['nesting: 101 levels are refused', { tool: 'deep', required: [], volatile: [],
    arguments: '{"a":'.repeat(100) + '[1]' + '}'.repeat(100) }],
  ['trailing content after the object is refused', { tool: 'ping', required: [], volatile: [], arguments: '{"x":1} x' }],
  ['an empty member name, left out by the pointer "/"', { tool: 'tag', required: [], volatile: ['/'],
    arguments: '{"":1,"b":2}' }],
  ['a pointer with a leading zero names no array element', { tool: 'tag', required: [], volatile: ['/tags/01'],
    arguments: '{"tags":["a","b"]}' }],
  ['a pointer past the end of an array names nothing', { tool: 'tag', required: [], volatile: ['/tags/2', '/tags/-'],
    arguments: '{"tags":["a","b"]}' }],
  ['required through an array', { tool: 'order', required: ['/items/0/sku'], volatile: [],
    arguments: '{"items":[{"sku":"A-1","qty":2}]}' }],
  ['required through an array, missing', { tool: 'order', required: ['/items/1/sku'], volatile: [],
    arguments: '{"items":[{"sku":"A-1","qty":2}]}' }],
];

const vectors = cases.map(([name, over]) => {
  const input = { ...base, arguments: charge, ...over };
  return { name, ...input, ...derive(input) };
});
console.log(JSON.stringify(vectors, null, 2));
