/**
 * The eval's Vercel AI SDK agent: `generateText` with a scripted model (the SDK's own
 * MockLanguageModelV3) and the SDK's multi-step tool loop. Subagents are agents used as tools
 * (a tool whose execute runs a nested generateText), the SDK's documented pattern; both get the
 * same `experimental_context`, so both calls belong to the request's step.
 */
import { randomUUID } from 'node:crypto';
import { generateText, stepCountIs, tool, type ToolSet } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { ledgerContext, ledgerTools } from '../src/agents/ai-sdk.js';
import type { ToolLedger } from '../src/agents/ledger.js';
import { type Env, type Mode, type PayArgs, type Request, invoiceOf, parseUserText, payArgs, payDirectly, userText } from './harness.js';

type Prompt = Array<{ role: string; content: unknown }>;
type Content = Array<Record<string, unknown>>;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const call = (toolName: string, input: Record<string, unknown>) => ({
  type: 'tool-call',
  toolCallId: `call_${randomUUID()}`,
  toolName,
  input: JSON.stringify(input),
});
const turn = (content: Content, finish: 'tool-calls' | 'stop') => ({
  content,
  finishReason: { unified: finish, raw: finish },
  usage,
  warnings: [],
});

/** The model's turn: how many assistant messages the prompt holds. */
function turnOf(prompt: Prompt): number {
  return prompt.filter((m) => m.role === 'assistant').length;
}

function firstUserText(prompt: Prompt): string {
  const user = prompt.find((m) => m.role === 'user');
  const content = user?.content as Array<{ type: string; text?: string }> | string | undefined;
  return typeof content === 'string' ? content : (content?.find((p) => p.type === 'text')?.text ?? '');
}

/** A model that plays `script(request, turn)` for whatever request its prompt is about. */
function scripted(all: Map<string, Request>, script: (r: Request, turn: number) => Content): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const prompt = options.prompt as unknown as Prompt;
      const content = script(parseUserText(firstUserText(prompt), all), turnOf(prompt));
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return turn(content, content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop') as any;
    },
  });
}

const done = (text: string): Content => [{ type: 'text', text }];

function mainScript(r: Request, t: number): Content {
  switch (r.scenario) {
    case 'replan':
      if (t === 0) return [call('get_invoice', { invoice: r.invoice })];
      if (t <= 1 + r.replans) return [call('pay_invoice', payArgs(r, t - 1))];
      return done('Paid.');
    case 'parallel':
      return t === 0 ? [call('pay_invoice', payArgs(r, 0)), call('pay_invoice', payArgs(r, 0))] : done('Paid.');
    case 'subagents':
      return t === 0
        ? [call('billing_agent', { task: `pay ${r.invoice}` }), call('collections_agent', { task: `settle ${r.invoice}` })]
        : done('Both agents reported.');
    default:
      throw new Error(`the AI SDK eval has no ${r.scenario} scenario`);
  }
}

/** A subagent: pays the invoice once on its own turn, then reports. */
function subagentScript(n: number) {
  return (r: Request, t: number): Content => (t === 0 ? [call('pay_invoice', payArgs(r, n))] : done('Paid it.'));
}

export async function runAiSdk(e: Env, ledger: ToolLedger, mode: Mode, r: Request, all: Map<string, Request>): Promise<void> {
  const getInvoice = tool({
    description: 'Reads an invoice',
    inputSchema: z.object({ invoice: z.string() }),
    execute: async ({ invoice }) => invoiceOf(invoice, all),
  });
  const payInput = z.object({ invoice: z.string(), amount: z.number(), currency: z.string(), memo: z.string() });
  // With the ledger the tool has no execute of its own: its effect runs in the ledger's executor.
  const payInvoice =
    mode === 'direct'
      ? tool({
          description: 'Pays an invoice',
          inputSchema: payInput,
          execute: async (input: PayArgs, options) => payDirectly(e, input, options.toolCallId),
        })
      : tool({ description: 'Pays an invoice', inputSchema: payInput });
  const base: ToolSet = { get_invoice: getInvoice, pay_invoice: payInvoice };
  const tools = mode === 'ledger' ? ledgerTools(ledger, base) : base;
  const subagent = (n: number) =>
    tool({
      description: 'A subagent that handles the request',
      inputSchema: z.object({ task: z.string() }),
      execute: async (_input, options) => {
        const nested = await generateText({
          model: scripted(all, subagentScript(n)),
          tools,
          stopWhen: stepCountIs(4),
          prompt: userText(r),
          experimental_context: options.experimental_context, // the request's step, inherited
        });
        return nested.text;
      },
    });
  const result = await generateText({
    model: scripted(all, mainScript),
    tools: { ...tools, billing_agent: subagent(1), collections_agent: subagent(2) },
    stopWhen: stepCountIs(8),
    prompt: userText(r),
    experimental_context: ledgerContext({ runId: `conversation-${r.id}`, stepId: r.id }),
  });
  const failed = result.steps.flatMap((s) => s.content).filter((c) => c.type === 'tool-error');
  if (failed.length > 0) {
    throw new Error(failed.map((c) => String((c as { error?: unknown }).error)).join('; '));
  }
}
