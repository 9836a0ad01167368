// The official TypeScript MCP SDK's client as an agent through Effect Ledger's MCP gateway in front
// of the TypeScript upstream (upstream-server.ts): it answers the sampling, elicitation and roots
// requests the upstream's ask_agent tool makes during a call, and runs read calls as tasks (MCP
// 2025-11-25), plain and asking, getting what the upstream answers when called directly (a process
// of its own, started here). McpTypeScriptUpstreamIT (mcp module) starts the gateway and sets
// EFFECTLEDGER_MCP_URL. Not meant to run on its own: it fails without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const url = process.env.EFFECTLEDGER_MCP_URL;

/** An agent that samples, elicits and has a root, recording what it is asked. */
function askingAgent(asked: string[]): Client {
  const client = new Client(
    { name: 'effectledger-ts-agent', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
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
  return client;
}

/** What the stream of a task-augmented call yielded: the message types, and its result. */
async function asTask(client: Client, name: string, args: Record<string, unknown>) {
  const types: string[] = [];
  let result: Record<string, unknown> | undefined;
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: args },
    CallToolResultSchema,
    { task: { ttl: 60000 } },
  )) {
    types.push(message.type);
    if (message.type === 'result') result = message.result as Record<string, unknown>;
    if (message.type === 'error') assert.fail(`${name} as a task: ${String(message.error)}`);
  }
  return { types, result };
}

test("answers the upstream's sampling, elicitation and roots requests made during its call", async () => {
  assert.ok(url, 'EFFECTLEDGER_MCP_URL is not set: this suite is run by McpTypeScriptUpstreamIT');
  const asked: string[] = [];
  const client = askingAgent(asked);
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

test('runs read calls as tasks, answered as the upstream answers them directly', async () => {
  assert.ok(url, 'EFFECTLEDGER_MCP_URL is not set: this suite is run by McpTypeScriptUpstreamIT');
  const direct = askingAgent([]);
  await direct.connect(
    new StdioClientTransport({ command: process.execPath, args: [new URL('./upstream-server.js', import.meta.url).pathname] }),
  );
  const asked: string[] = [];
  const through = askingAgent(asked);
  await through.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const capabilities = through.getServerCapabilities();
    assert.deepEqual(capabilities?.tasks?.requests?.tools?.call, {});
    const { tools } = await through.listTools(); // the client learns which tools take tasks
    assert.ok(tools.every((t) => t.execution?.taskSupport === 'optional'), JSON.stringify(tools));

    const quote = { sku: 'mug-green', quantity: 4 };
    const directly = await direct.callTool({ name: 'get_quote', arguments: quote });
    const task = await asTask(through, 'get_quote', quote);
    assert.equal(task.types[0], 'taskCreated');
    assert.equal(task.types.at(-1), 'result');
    assert.deepEqual(task.result?.content, directly.content);
    assert.deepEqual(task.result?.structuredContent, directly.structuredContent);
    const related = (task.result?._meta as Record<string, { taskId?: string }> | undefined)?.[
      'io.modelcontextprotocol/related-task'
    ];
    assert.ok(related?.taskId, JSON.stringify(task.result));

    // a tool the upstream runs only as a task: the gateway calls it as one
    const countedDirectly = await asTask(direct, 'count_slowly', { to: 3 });
    const counted = await asTask(through, 'count_slowly', { to: 3 });
    assert.deepEqual(counted.result?.content, [{ type: 'text', text: 'counted to 3' }]);
    assert.deepEqual(counted.result?.content, countedDirectly.result?.content);

    // a task whose call asks the agent: its requests still reach the agent
    const asking = await asTask(through, 'ask_agent', { question: 'how many?' });
    const askedDirectly = await direct.callTool({ name: 'ask_agent', arguments: { question: 'how many?' } });
    assert.deepEqual(asking.result?.content, [
      { type: 'text', text: 'model ts-model: twelve; user: accept {"ok":true}; roots: file:///ts/agent' },
    ]);
    assert.deepEqual(asking.result?.content, askedDirectly.content);
    assert.deepEqual(asked, ['sampling: how many?', 'elicitation: confirm: how many?']);
  } finally {
    await through.close();
    await direct.close();
  }
});

test('marks an asking task input_required, names it in its requests, and cancels it without breaking the session', async () => {
  assert.ok(url, 'EFFECTLEDGER_MCP_URL is not set: this suite is run by McpTypeScriptUpstreamIT');
  const client = new Client(
    { name: 'effectledger-ts-agent', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let askedFor!: (taskId: string) => void;
  const asked = new Promise<string>((resolve) => (askedFor = resolve));
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const related = request.params._meta?.['io.modelcontextprotocol/related-task'] as { taskId?: string } | undefined;
    askedFor(String(related?.taskId));
    await released; // the agent's model is slow: the task waits for it
    return { role: 'assistant', content: { type: 'text', text: 'late' }, model: 'ts-model' };
  });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { ok: true } }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await client.listTools();
    const stream = asTask(client, 'ask_agent', { question: 'slow?' }).catch((e: unknown) => e);
    const taskId = await asked;
    const waiting = await client.experimental.tasks.getTask(taskId);
    assert.equal(waiting.status, 'input_required');
    // a call of the same agent on the same upstream, in flight while the task is cancelled
    const counting = client.callTool({ name: 'count_slowly', arguments: { to: 2 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual((await counting).content, [{ type: 'text', text: 'counted to 2' }]);
    release();
    const ended = await stream;
    assert.ok(ended instanceof Error && /cancelled/.test(ended.message), String(ended));
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
    // the agent's session with the upstream is whole: its next call is answered
    const quote = await client.callTool({ name: 'get_quote', arguments: { sku: 'mug-red', quantity: 1 } });
    assert.notEqual(quote.isError, true, JSON.stringify(quote));
  } finally {
    release();
    await client.close();
  }
});
