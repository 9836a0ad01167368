// A test fixture, not meant to run on its own: an MCP server written with the official TypeScript
// SDK (McpServer over stdio), the upstream McpTypeScriptUpstreamIT (app module) puts the MCP
// gateway in front of, to compare what an agent sees through the gateway with what it sees talking
// to this server directly. Started as `node dist/test-mcp/upstream-server.js` by the gateway, by
// the executor's mcp connector and by the test itself, each a process of its own; its name is no
// test file's, and the npm scripts name the test files they run.
//
//   EFFECTLEDGER_TS_UPSTREAM_EFFECTS   the file record_payment appends one line to per effect, so
//                                      that the test counts effects across processes
//
// What it serves: instructions, a read tool (get_quote: structured content, and PROGRESS_STEPS
// progress notifications when the caller gives a progress token), a read tool that asks its caller
// (ask_agent: sampling, then elicitation, then roots, each request related to the call), a read
// tool it runs only as a task (count_slowly: MCP 2025-11-25 tasks, taskSupport required), a write
// tool (record_payment: destructive, not idempotent), one resource and one prompt. Every answer depends only on the
// request (and, for record_payment, on the effects file), so two processes answer alike.
import { appendFileSync, readFileSync } from 'node:fs';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  type CallToolResult,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const EFFECTS = 'EFFECTLEDGER_TS_UPSTREAM_EFFECTS';
const PROGRESS_STEPS = 5;
const KEY = 'effectledger.dev/idempotencyKey'; // in _meta of the mcp connector's calls

const server = new McpServer(
  { name: 'effectledger-ts-upstream', version: '1.0.0' },
  {
    capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: new InMemoryTaskStore(),
    taskMessageQueue: new InMemoryTaskMessageQueue(),
    instructions:
      'Quotes and payments of the ledger test shop. get_quote prices an item (read-only);' +
      ' record_payment records a payment and cannot be undone: call it once per payment.',
  },
);

server.registerTool(
  'get_quote',
  {
    title: 'Get a quote',
    description: 'Prices a quantity of one item. Reports progress when asked.',
    inputSchema: { sku: z.string().min(1).describe('the item'), quantity: z.number().int().positive() },
    outputSchema: { sku: z.string(), quantity: z.number(), unitCents: z.number(), totalCents: z.number() },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ sku, quantity }, extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      for (let step = 1; step <= PROGRESS_STEPS; step++) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: step, total: PROGRESS_STEPS, message: `priced ${step} of ${PROGRESS_STEPS}` },
        });
      }
    }
    // a price from the sku alone: the same in every process
    const unitCents = 100 + [...sku].reduce((sum, c) => sum + c.charCodeAt(0), 0);
    const quote = { sku, quantity, unitCents, totalCents: unitCents * quantity };
    return { content: [{ type: 'text', text: `${quantity} x ${sku}: ${quote.totalCents} cents` }], structuredContent: quote };
  },
);

server.registerTool(
  'ask_agent',
  {
    title: 'Ask the agent',
    description: "Asks the caller's model, then its user, then its roots; answers what each said.",
    inputSchema: { question: z.string().min(1) },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ question }, extra) => {
    const sampled = await extra.sendRequest(
      {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: question } }], maxTokens: 20 },
      },
      CreateMessageResultSchema,
    );
    const elicited = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          message: `confirm: ${question}`,
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        },
      },
      ElicitResultSchema,
    );
    const roots = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
    const said = sampled.content.type === 'text' ? sampled.content.text : sampled.content.type;
    const text =
      `model ${sampled.model}: ${said}; user: ${elicited.action} ${JSON.stringify(elicited.content ?? {})};` +
      ` roots: ${roots.roots.map((r) => r.uri).join(',')}`;
    return { content: [{ type: 'text', text }] };
  },
);

server.experimental.tasks.registerToolTask(
  'count_slowly',
  {
    title: 'Count slowly',
    description: 'Counts to a number, taking its time: run only as a task.',
    inputSchema: { to: z.number().int().positive() },
    execution: { taskSupport: 'required' },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    createTask: async ({ to }, extra) => {
      const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 200 });
      setTimeout(() => {
        void extra.taskStore.storeTaskResult(task.taskId, 'completed', {
          content: [{ type: 'text', text: `counted to ${to}` }],
        });
      }, 1500); // long enough for a test to act while it is in flight
      return { task };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    // what createTask stored: a tool's result
    getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  },
);

server.registerTool(
  'record_payment',
  {
    title: 'Record a payment',
    description: 'Records a payment from a customer. Each call records one more: not idempotent.',
    inputSchema: { customer: z.string().min(1), amountCents: z.number().int().positive() },
    outputSchema: { payment: z.number(), customer: z.string(), amountCents: z.number() },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  async ({ customer, amountCents }, extra) => {
    const file = process.env[EFFECTS];
    if (!file) {
      return { isError: true, content: [{ type: 'text', text: `${EFFECTS} is not set: no payment recorded` }] };
    }
    // one line per effect: the key the caller sent (if any), then what was recorded
    appendFileSync(file, `${String(extra._meta?.[KEY] ?? '-')}\t${customer}\t${amountCents}\n`);
    const payment = readFileSync(file, 'utf8').split('\n').filter((line) => line).length;
    return {
      content: [{ type: 'text', text: `payment ${payment}: ${amountCents} cents from ${customer}` }],
      structuredContent: { payment, customer, amountCents },
    };
  },
);

server.registerResource(
  'price-list',
  'shop://price-list',
  { title: 'Price list', description: 'How prices are made', mimeType: 'text/plain' },
  async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'unit price: 100 cents plus the sum of the sku\'s character codes' }],
  }),
);

server.registerPrompt(
  'dunning_letter',
  {
    title: 'Dunning letter',
    description: 'Asks for a letter reminding a customer of an unpaid amount',
    argsSchema: { customer: z.string(), amountCents: z.string() },
  },
  ({ customer, amountCents }) => ({
    messages: [
      { role: 'user', content: { type: 'text', text: `Write a polite reminder to ${customer} about ${amountCents} cents unpaid.` } },
    ],
  }),
);

// ends when its client closes stdin (the SDK's transport alone would leave that to Node)
process.stdin.on('end', () => {
  void server.close().finally(() => process.exit(0));
});
await server.connect(new StdioServerTransport());
