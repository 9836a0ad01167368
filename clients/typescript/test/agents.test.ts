// The agent-runtime adapters in their frameworks' own loops, with a client that answers the tool
// list and records the calls it is asked to make (the real gateway, ledger and executor are in the
// eval: test-agents, run by AgentRuntimesIT).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { generateText, stepCountIs, tool as aiTool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { AIMessage, HumanMessage, type BaseMessage, type ToolMessage } from '@langchain/core/messages';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { tool as lcTool } from '@langchain/core/tools';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { createAgent } from 'langchain';
import { Agent, type Model, type ModelRequest, type ModelResponse, Usage, run, setTracingDisabled } from '@openai/agents-core';
import { z } from 'zod';
import type { CallResult, GatewayClient, ToolInfo } from '../src/index.js';
import { ToolLedger, textForModel } from '../src/agents/ledger.js';
import { ledgerContext, ledgerTools as aiLedgerTools } from '../src/agents/ai-sdk.js';
import { ledgerTools as graphLedgerTools } from '../src/agents/langgraph.js';
import { ledgerTool } from '../src/agents/openai-agents.js';

setTracingDisabled(true);

const info = (name: string, cls: ToolInfo['class'], onAmbiguous: ToolInfo['onAmbiguous'] = 'hold'): ToolInfo => ({
  name,
  class: cls,
  ledgered: cls !== 'read',
  onInFlight: 'coalesce',
  onAmbiguous,
  bypass: false,
  key: { ignore: [], require: [] },
});

/** A ledger whose client lists pay (irreversible) and look (read), answering calls in turn. */
function ledgerAnswering(...answers: CallResult[]) {
  return ledgerWith({ attachSeconds: 120, unknownTools: 'rejected', direct: [] }, ...answers);
}

function ledgerWith(
  options: { attachSeconds: number; unknownTools: 'ledgered' | 'rejected'; direct: string[] },
  ...answers: CallResult[]
) {
  const calls: unknown[][] = [];
  const client = {
    wait: 1,
    catalogue: async () => ({ tools: [info('pay', 'irreversible'), info('look', 'read')], unknownTools: options.unknownTools }),
    call: async (...args: unknown[]) => {
      calls.push(args);
      return answers.shift() ?? answers[0];
    },
    attach: async (...args: unknown[]) => {
      calls.push(['attach', ...args]);
      const next = answers.shift();
      if (next) return next;
      // still running: the gateway holds an attach for its wait before it says so
      const wait = (args[1] as { wait?: number } | undefined)?.wait ?? 0;
      await new Promise((r) => setTimeout(r, Math.min(wait, 1) * 1000));
      return { kind: 'running', key: 'k1' };
    },
  };
  const ledger = new ToolLedger({
    client: client as unknown as GatewayClient,
    scopes: { pay: (a) => `invoice:${a.invoice}` },
    attachSeconds: options.attachSeconds,
    direct: options.direct,
  });
  return { calls, ledger };
}

const succeeded: CallResult = { kind: 'succeeded', key: 'k1', result: { id: 'ch_1' }, replayed: false, attempts: 1 };
const held: CallResult = { kind: 'held', key: 'k1', replayed: false, error: { code: 'UNKNOWN_OUTCOME', message: 'no answer', retriable: false, correctiveAction: '' } };

test('the model is told what a held call means and not to call it again', () => {
  const text = textForModel('pay', held as Exclude<CallResult, { kind: 'succeeded' }>);
  assert.match(text, /not known yet whether this action took effect/);
  assert.match(text, /not with other arguments either/);
});

test('a call still running is attached to until it settles', async () => {
  const { calls, ledger } = ledgerAnswering({ kind: 'running', key: 'k1', location: '/v1/calls/k1?intent=7' }, succeeded);
  const result = await ledger.call({ runId: 'r', stepId: 's' }, 'pay', { invoice: 'i-1' });
  assert.equal(result.kind, 'succeeded');
  assert.deepEqual(calls[1], ['attach', 'k1', { location: '/v1/calls/k1?intent=7', wait: 1 }]);
  assert.deepEqual(calls[0][0], { tenant: 'token', runId: 'r', stepId: 's', scope: 'invoice:i-1' });
});

test('a call still running is waited on no longer than attachSeconds, then said to be running', async () => {
  const running: CallResult = { kind: 'running', key: 'k1', location: '/v1/calls/k1?intent=7' };
  const { calls, ledger } = ledgerWith({ attachSeconds: 2, unknownTools: 'rejected', direct: [] }, running);
  const started = Date.now();
  const result = await ledger.call({ runId: 'r', stepId: 's' }, 'pay', { invoice: 'i-1' });
  assert.equal(result.kind, 'running');
  assert.ok(Date.now() - started < 10_000, 'the loop ended at its deadline');
  assert.ok(calls.length >= 2, 'it attached at least once');
});

test('the policy decides over the direct list; unnamed tools follow the unknownTool entry', async () => {
  const { ledger } = ledgerWith({ attachSeconds: 1, unknownTools: 'rejected', direct: ['pay', 'approve'] });
  assert.equal((await ledger.route('pay')).kind, 'ledger', 'named irreversible: the ledger, whatever direct says');
  assert.equal((await ledger.route('approve')).kind, 'direct');
  assert.equal((await ledger.route('look')).kind, 'direct');
  assert.equal((await ledger.route('refund')).kind, 'unknown');
  const { ledger: withUnknownTool } = ledgerWith({ attachSeconds: 1, unknownTools: 'ledgered', direct: [] });
  assert.equal((await withUnknownTool.route('refund')).kind, 'ledger');
});

// --- Vercel AI SDK ---------------------------------------------------------------------------

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
function aiModel(...turns: Array<Array<[string, Record<string, unknown>]> | string>) {
  const prompts: unknown[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt);
      const turn = turns.shift()!;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const content: any[] =
        typeof turn === 'string'
          ? [{ type: 'text', text: turn }]
          : turn.map(([toolName, input]) => ({ type: 'tool-call', toolCallId: randomUUID(), toolName, input: JSON.stringify(input) }));
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return { content, finishReason: { unified: typeof turn === 'string' ? 'stop' : 'tool-calls', raw: '' }, usage, warnings: [] } as any;
    },
  });
  return { model, prompts };
}

test('AI SDK: a read tool runs its own execute, a write tool goes to the ledger with the context step', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  let looked = 0;
  const tools = aiLedgerTools(ledger, {
    look: aiTool({ description: 'reads', inputSchema: z.object({ invoice: z.string() }), execute: async () => ++looked }),
    pay: aiTool({ description: 'pays', inputSchema: z.object({ invoice: z.string() }) }),
  });
  const { model } = aiModel([['look', { invoice: 'i-1' }], ['pay', { invoice: 'i-1' }]], 'done');
  const result = await generateText({
    model, tools, stopWhen: stepCountIs(4), prompt: 'pay',
    experimental_context: ledgerContext({ runId: 'conv-1', stepId: 'req-1' }),
  });
  assert.equal(result.text, 'done');
  assert.equal(looked, 1);
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].slice(0, 3), [{ tenant: 'token', runId: 'conv-1', stepId: 'req-1', scope: 'invoice:i-1' }, 'pay', { invoice: 'i-1' }]);
});

test('AI SDK: without the step in experimental_context nothing is called and the model is told why', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  const tools = aiLedgerTools(ledger, { pay: aiTool({ description: 'pays', inputSchema: z.object({ invoice: z.string() }) }) });
  const { model, prompts } = aiModel([['pay', { invoice: 'i-1' }]], 'sorry');
  await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'pay' });
  assert.equal(calls.length, 0);
  assert.match(JSON.stringify(prompts[1]), /needs the run and step it belongs to: pass experimental_context/);
});

test('AI SDK: a tool the policy does not name is not run', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  let ran = 0;
  const tools = aiLedgerTools(ledger, { refund: aiTool({ description: 'x', inputSchema: z.object({}), execute: async () => ++ran }) });
  const { model, prompts } = aiModel([['refund', {}]], 'ok');
  await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'x', experimental_context: ledgerContext({ runId: 'r', stepId: 's' }) });
  assert.equal(ran + calls.length, 0);
  assert.match(JSON.stringify(prompts[1]), /refund is not in Effect Ledger's tool policy/);
});

// --- LangGraph.js ----------------------------------------------------------------------------

class Scripted extends BaseChatModel {
  constructor(private readonly turns: AIMessage[]) {
    super({});
  }
  _llmType() {
    return 'scripted';
  }
  override bindTools(): this {
    return this;
  }
  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.turns.shift() ?? new AIMessage('done');
    return { generations: [{ message, text: '' }] };
  }
}
const payCall = () =>
  new AIMessage({ content: '', tool_calls: [{ name: 'pay', args: { invoice: 'i-1' }, id: `call_${randomUUID()}`, type: 'tool_call' }] });
const payTool = lcTool(async () => 'own code', { name: 'pay', description: 'pays', schema: z.object({ invoice: z.string() }) });

test('LangGraph: the step is the thread and the human message, the same on a re-plan', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded, succeeded);
  const agent = createReactAgent({ llm: new Scripted([payCall(), payCall()]), tools: graphLedgerTools(ledger, [payTool]), checkpointer: new MemorySaver() });
  await agent.invoke({ messages: [new HumanMessage('pay i-1')] }, { configurable: { thread_id: 'thread-1' } });
  assert.equal(calls.length, 2);
  const [first, second] = calls.map((c) => c[0] as { runId: string; stepId: string });
  assert.equal(first.runId, 'thread-1');
  assert.ok(first.stepId.length > 0);
  assert.deepEqual(second, first);
});

test("LangGraph: the same tools in langchain's createAgent, the step from the human message's own id", async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  const agent = createAgent({ model: new Scripted([payCall()]), tools: graphLedgerTools(ledger, [payTool]), checkpointer: new MemorySaver() });
  await agent.invoke({ messages: [new HumanMessage({ content: 'pay i-1', id: 'req-9' })] }, { configurable: { thread_id: 'thread-ca' } });
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].slice(0, 3), [{ tenant: 'token', runId: 'thread-ca', stepId: 'req-9', scope: 'invoice:i-1' }, 'pay', { invoice: 'i-1' }]);
});

test('LangGraph: a held call interrupts the graph for a person; on resume the ledger is asked again', async () => {
  const { calls, ledger } = ledgerAnswering(held, held);
  const agent = createReactAgent({ llm: new Scripted([payCall()]), tools: graphLedgerTools(ledger, [payTool]), checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: 'thread-held' } };
  const first = await agent.invoke({ messages: [new HumanMessage('pay i-1')] }, config);
  const interrupts = (first as { __interrupt__?: Array<{ value: { type: string; key: string } }> }).__interrupt__;
  assert.equal(interrupts?.[0].value.type, 'effectledger/held');
  assert.equal(interrupts?.[0].value.key, 'k1');
  const resumed = await agent.invoke(new Command({ resume: 'checked: not charged' }), config);
  assert.equal(calls.length, 2, 'asked again on resume, with the same step');
  assert.deepEqual(calls[1][0], calls[0][0]);
  const answer = resumed.messages.find((m: BaseMessage) => m.getType() === 'tool') as ToolMessage;
  assert.equal(answer.status, 'error');
  assert.match(String(answer.content), /held for reconciliation.*A person was asked and answered: "checked: not charged"/s);
});

test('LangGraph: a held call in a graph without a checkpointer tells the model instead of failing', async () => {
  const { calls, ledger } = ledgerAnswering(held);
  const agent = createReactAgent({ llm: new Scripted([payCall()]), tools: graphLedgerTools(ledger, [payTool]) });
  const done = await agent.invoke({ messages: [new HumanMessage('pay i-1')] }, { configurable: { thread_id: 'no-saver' } });
  const answer = done.messages.find((m: BaseMessage) => m.getType() === 'tool') as ToolMessage;
  assert.equal(calls.length, 1);
  assert.equal(answer.status, 'error');
  assert.match(String(answer.content), /held for reconciliation.*not with other arguments either/s);
});

test('LangGraph: without a thread the model is told what to pass', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  const agent = createReactAgent({ llm: new Scripted([payCall()]), tools: graphLedgerTools(ledger, [payTool]) });
  const done = await agent.invoke({ messages: [new HumanMessage('pay i-1')] });
  const answer = done.messages.find((m: BaseMessage) => m.getType() === 'tool') as ToolMessage;
  assert.equal(calls.length, 0);
  assert.match(String(answer.content), /configurable: \{ thread_id \}/);
});

// --- OpenAI Agents SDK -----------------------------------------------------------------------

class AgentsModel implements Model {
  readonly inputs: unknown[] = [];
  constructor(private readonly turns: unknown[][]) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.inputs.push(request.input);
    return { usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }), output: this.turns.shift() as ModelResponse['output'] };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed');
  }
}
const fc = (name: string, args: Record<string, unknown>) => ({ type: 'function_call', callId: randomUUID(), name, arguments: JSON.stringify(args), status: 'completed' });
const say = (text: string) => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });

test('OpenAI Agents: a failed call answers the model a text, not "Please try again"', async () => {
  const failed: CallResult = { kind: 'failed', key: 'k1', replayed: false, error: { code: 'CARD_DECLINED', message: 'declined', retriable: false, correctiveAction: '' } };
  const { calls, ledger } = ledgerAnswering(failed);
  const model = new AgentsModel([[fc('pay', { invoice: 'i-1' })], [say('sorry')]]);
  const pay = ledgerTool(ledger, { name: 'pay', description: 'pays', parameters: z.object({ invoice: z.string() }), execute: async () => 'own code' });
  const result = await run(new Agent({ name: 'a', instructions: 'x', model, tools: [pay] }), 'pay', {
    context: ledgerContext({ runId: 'conv-1', stepId: 'req-1' }),
  });
  assert.equal(result.finalOutput, 'sorry');
  assert.equal(calls.length, 1);
  const told = JSON.stringify(model.inputs[1]);
  assert.match(told, /pay failed and did not take effect: CARD_DECLINED: declined/);
  assert.doesNotMatch(told, /Please try again/);
});

test('OpenAI Agents: without the step in the run context nothing is called and the model is told why', async () => {
  const { calls, ledger } = ledgerAnswering(succeeded);
  const model = new AgentsModel([[fc('pay', { invoice: 'i-1' })], [say('sorry')]]);
  const pay = ledgerTool(ledger, { name: 'pay', description: 'pays', parameters: z.object({ invoice: z.string() }), execute: async () => 'own code' });
  await run(new Agent({ name: 'a', instructions: 'x', model, tools: [pay] }), 'pay');
  assert.equal(calls.length, 0);
  assert.match(JSON.stringify(model.inputs[1]), /needs the run and step it belongs to/);
});
