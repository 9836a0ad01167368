/**
 * The eval's OpenAI Agents SDK agent: `run()` with scripted models (the SDK's `Model` interface,
 * no network; tracing off) and the SDK's own tool loop. Subagents: the triage agent asks a
 * collections agent used as a tool (`asTool`), then hands off to a billing agent; both pay. The
 * run's context (one object, shared by handoffs and agents as tools) holds the request's step.
 */
import { randomUUID } from 'node:crypto';
import { Agent, type Model, type ModelRequest, type ModelResponse, Usage, run, setTracingDisabled, tool } from '@openai/agents-core';
import { z } from 'zod';
import type { ToolLedger } from '../src/agents/ledger.js';
import { ledgerContext, ledgerTool } from '../src/agents/openai-agents.js';
import { type Env, type Mode, type PayArgs, type Request, invoiceOf, parseUserText, payArgs, payDirectly, userText } from './harness.js';

setTracingDisabled(true);

type Item = { type?: string; role?: string; name?: string; callId?: string; content?: unknown };
const fc = (name: string, args: Record<string, unknown>, prefix = 'call') => ({
  type: 'function_call' as const,
  callId: `${prefix}_${randomUUID()}`,
  name,
  arguments: JSON.stringify(args),
  status: 'completed' as const,
});
const say = (text: string) => ({
  type: 'message' as const,
  role: 'assistant' as const,
  status: 'completed' as const,
  content: [{ type: 'output_text' as const, text }],
});

function itemsOf(request: ModelRequest): Item[] {
  return typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : (request.input as Item[]);
}

function userTextOf(items: Item[]): string {
  const user = items.find((i) => i.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  const parts = user.content as Array<{ text?: string }>;
  return parts.map((p) => p.text ?? '').join('');
}

const calls = (items: Item[], name: string, prefix?: string) =>
  items.filter((i) => i.type === 'function_call' && i.name === name && (!prefix || i.callId?.startsWith(prefix))).length;

/** A model playing `script` for the request its input is about. */
class Scripted implements Model {
  constructor(
    private readonly all: Map<string, Request>,
    private readonly script: (r: Request, items: Item[]) => unknown[],
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = itemsOf(request);
    return {
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }),
      output: this.script(parseUserText(userTextOf(items), this.all), items) as ModelResponse['output'],
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the eval does not stream');
  }
}

function triage(r: Request, items: Item[]): unknown[] {
  const paid = calls(items, 'pay_invoice');
  switch (r.scenario) {
    case 'replan':
      if (calls(items, 'get_invoice') === 0) return [fc('get_invoice', { invoice: r.invoice })];
      return paid < 1 + r.replans ? [fc('pay_invoice', payArgs(r, paid))] : [say('Paid.')];
    case 'parallel':
      return paid === 0 ? [fc('pay_invoice', payArgs(r, 0)), fc('pay_invoice', payArgs(r, 0))] : [say('Paid.')];
    case 'subagents':
      if (calls(items, 'collections_agent') === 0) return [fc('collections_agent', { input: userText(r) })];
      return [fc('transfer_to_billing', {})];
    default:
      throw new Error(`the OpenAI Agents eval has no ${r.scenario} scenario`);
  }
}

const billing = (r: Request, items: Item[]) =>
  calls(items, 'pay_invoice', 'billing') === 0 ? [fc('pay_invoice', payArgs(r, 1), 'billing')] : [say('Billing paid it.')];
const collections = (r: Request, items: Item[]) =>
  calls(items, 'pay_invoice') === 0 ? [fc('pay_invoice', payArgs(r, 2), 'collections')] : [say('Collections paid it.')];

export async function runOpenAiAgents(e: Env, ledger: ToolLedger, mode: Mode, r: Request, all: Map<string, Request>): Promise<void> {
  const getOptions = {
    name: 'get_invoice',
    description: 'Reads an invoice',
    parameters: z.object({ invoice: z.string() }),
    execute: async ({ invoice }: { invoice: string }) => invoiceOf(invoice, all),
  };
  const payOptions = {
    name: 'pay_invoice',
    description: 'Pays an invoice',
    parameters: z.object({ invoice: z.string(), amount: z.number(), currency: z.string(), memo: z.string() }),
    execute: async (input: PayArgs, _context: unknown, details?: { toolCall?: { callId: string } }) =>
      payDirectly(e, input, details?.toolCall?.callId ?? 'no-call-id'),
  };
  // With the ledger both tools are routed by the policy: get_invoice (class read) runs its own
  // execute, pay_invoice goes through the gateway and its execute here is never called.
  const tools =
    mode === 'ledger' ? [ledgerTool(ledger, getOptions), ledgerTool(ledger, payOptions)] : [tool(getOptions), tool(payOptions)];
  const billingAgent = new Agent({ name: 'billing', instructions: 'Pay invoices', model: new Scripted(all, billing), tools });
  const collectionsAgent = new Agent({ name: 'collections', instructions: 'Settle invoices', model: new Scripted(all, collections), tools });
  const triageAgent = new Agent({
    name: 'triage',
    instructions: 'Handle the request',
    model: new Scripted(all, triage),
    tools: [...tools, collectionsAgent.asTool({ toolName: 'collections_agent', toolDescription: 'Settles an invoice' })],
    handoffs: [billingAgent],
  });
  const result = await run(triageAgent, userText(r), {
    context: ledgerContext({ runId: `conversation-${r.id}`, stepId: r.id }),
    maxTurns: 10,
  });
  const outputs = result.newItems
    .filter((i) => i.type === 'tool_call_output_item')
    .map((i) => JSON.stringify((i as { output?: unknown }).output ?? ''));
  const refused = outputs.filter((o) => /failed|refused|not known|not in Effect Ledger|needs the run/.test(o));
  if (refused.length > 0) throw new Error(refused.join('; '));
}
