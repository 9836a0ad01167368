// The native client's Schema Registry credentials, against a loopback registry that records what
// it is sent (the whole native mode runs against the real broker in test-integration).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EffectLedgerError, NativeToolCallClient, Unavailable } from '../src/index.js';

async function registry(required: string) {
  const seen: { path: string; authorization?: string; schema?: string }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', authorization: req.headers.authorization, schema: body });
      const ok = req.headers.authorization === required;
      res.writeHead(ok ? 200 : 401, { 'Content-Type': 'application/vnd.schemaregistry.v1+json' });
      res.end(ok ? '{"id":7}' : '{"error_code":401,"message":"Unauthorized"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => server.close() };
}

// No broker listens on port 9: connecting fails after the registration, which is what is checked.
const noBroker = { brokers: ['127.0.0.1:9'], kafka: { retry: { retries: 1, initialRetryTime: 50 }, connectionTimeout: 300 } };

test('registers the intent schema under tool-intents-value with a bearer token', async () => {
  const r = await registry('Bearer tok-1');
  try {
    await assert.rejects(
      NativeToolCallClient.connect({ ...noBroker, schemaRegistry: { url: r.url, bearerToken: 'tok-1' } }),
      Unavailable,
    );
    assert.equal(r.seen[0].path, '/subjects/tool-intents-value/versions');
    assert.equal(r.seen[0].authorization, 'Bearer tok-1');
    assert.equal(JSON.parse(JSON.parse(r.seen[0].schema ?? '{}').schema).name, 'ToolIntent');
  } finally {
    r.close();
  }
});

test('sends basic credentials, and names what to give when they are refused', async () => {
  const r = await registry('Basic ' + Buffer.from('key:secret').toString('base64'));
  try {
    await assert.rejects(
      NativeToolCallClient.connect({ ...noBroker, schemaRegistry: { url: r.url, basic: { username: 'key', password: 'secret' } } }),
      Unavailable,
    );
    await assert.rejects(
      NativeToolCallClient.connect({ ...noBroker, schemaRegistry: { url: r.url, basic: { username: 'key', password: 'wrong' } } }),
      (e: unknown) => e instanceof EffectLedgerError && !(e instanceof Unavailable) && /refused the credentials \(HTTP 401\)/.test(e.message) && !e.message.includes('wrong'),
    );
    await assert.rejects(
      NativeToolCallClient.connect({ ...noBroker, schemaRegistry: { url: r.url, basic: { username: 'k', password: 's' }, bearerToken: 't' } }),
      /not both/,
    );
  } finally {
    r.close();
  }
});
