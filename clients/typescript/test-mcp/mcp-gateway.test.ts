// The official TypeScript MCP SDK's client against Effect Ledger's MCP gateway, over Streamable
// HTTP: the cross-language check of the MCP gateway. McpGatewayIT (app module) starts the gateway,
// the ledger, an executor and the counting MCP server, and sets
//   EFFECTLEDGER_MCP_URL   the gateway's endpoint      EFFECTLEDGER_MCP_RUN   the run id to use
// then counts the effects at the MCP server. Not meant to run on its own: it fails without them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this suite is run by McpGatewayIT`);
  return value;
};

async function agent(run: string): Promise<Client> {
  const client = new Client({ name: 'effectledger-ts-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(env('EFFECTLEDGER_MCP_URL')), {
      requestInit: { headers: { 'X-Agent-Run': run } },
    }),
  );
  return client;
}

type Answer = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };

test('lists the upstream tools and calls a write tool once per run, replaying to repeats and reconnects', async () => {
  const run = env('EFFECTLEDGER_MCP_RUN');
  const first = await agent(run);
  const reconnected = await agent(run);
  try {
    const { tools } = await first.listTools();
    const charge = tools.find((t) => t.name === 'create_charge');
    assert.ok(charge, JSON.stringify(tools.map((t) => t.name)));
    assert.equal(charge.annotations?.destructiveHint, true);
    assert.ok(tools.some((t) => t.name === 'get_balance' && t.annotations?.readOnlyHint === true));

    const args = { name: 'create_charge', arguments: { amount: 321, to: 'cus_ts' } };
    const a = (await first.callTool(args)) as Answer;
    const b = (await first.callTool(args)) as Answer; // the model re-emits it
    const c = (await reconnected.callTool({ name: 'create_charge', arguments: { to: 'cus_ts', amount: 321 } })) as Answer;

    assert.equal(a.isError, false, JSON.stringify(a));
    assert.equal(a._meta?.['effectledger.dev/replayed'], false);
    for (const again of [b, c]) {
      assert.equal(again.isError, false, JSON.stringify(again));
      assert.equal(again._meta?.['effectledger.dev/replayed'], true);
      assert.deepEqual(again.structuredContent, a.structuredContent);
    }
    assert.equal(a.structuredContent?.amount, 321);

    const balance = (await first.callTool({ name: 'get_balance', arguments: {} })) as Answer;
    assert.equal(balance.isError, false);
    assert.equal(balance._meta, undefined); // a read tool: the upstream's own answer
    console.log(`# key ${String(a._meta?.['effectledger.dev/idempotencyKey'])}`);
  } finally {
    await first.close();
    await reconnected.close();
  }
});
