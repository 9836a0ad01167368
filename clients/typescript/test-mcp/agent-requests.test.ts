// The official TypeScript MCP SDK's client as an agent that samples, elicits and has roots, through
// Effect Ledger's MCP gateway in front of the TypeScript upstream (upstream-server.ts), whose
// ask_agent tool asks its caller all three during the call. McpTypeScriptUpstreamIT (mcp module)
// starts the gateway and sets EFFECTLEDGER_MCP_URL. Not meant to run on its own: it fails without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const url = process.env.EFFECTLEDGER_MCP_URL;

test("answers the upstream's sampling, elicitation and roots requests made during its call", async () => {
  assert.ok(url, 'EFFECTLEDGER_MCP_URL is not set: this suite is run by McpTypeScriptUpstreamIT');
  const client = new Client(
    { name: 'effectledger-ts-agent', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  const asked: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const content = request.params.messages[0]?.content;
    const said = content && !Array.isArray(content) && content.type === 'text' ? content.text : JSON.stringify(content);
    asked.push(`sampling: ${said}`);
    return { role: 'assistant', content: { type: 'text', text: 'twelve' }, model: 'ts-model' };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(`elicitation: ${request.params.message}`);
    return { action: 'accept', content: { ok: true } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: 'file:///ts/agent', name: 'agent' }],
  }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const answer = await client.callTool({ name: 'ask_agent', arguments: { question: 'how many?' } });
    assert.notEqual(answer.isError, true, JSON.stringify(answer));
    assert.deepEqual(answer.content, [
      { type: 'text', text: 'model ts-model: twelve; user: accept {"ok":true}; roots: file:///ts/agent' },
    ]);
    assert.deepEqual(asked, ['sampling: how many?', 'elicitation: confirm: how many?']);
  } finally {
    await client.close();
  }
});
