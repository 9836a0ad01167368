/**
 * The Vercel AI SDK (`ai` 6): write tools of `generateText` / `streamText` through Effect Ledger.
 *
 *   const tools = ledgerTools(ledger, { get_invoice: getInvoice, pay_invoice: payInvoice });
 *   await generateText({ model, tools, stopWhen: stepCountIs(8), prompt,
 *                        experimental_context: ledgerContext({ runId: conversationId, stepId: requestId }) });
 *
 * The step comes from `experimental_context`, which the SDK hands to every tool's `execute` and
 * never sends to the model; the tool-call id is not used. A tool the live policy classes `read`
 * runs its own `execute`; every other tool is called through the gateway (its effect runs in the
 * ledger's executor, once) and its own `execute`, if any, is not called. A call that did not
 * succeed throws an error whose message tells the model what happened and what not to do: the SDK
 * gives the model that text as the tool's error result and the loop goes on.
 */
import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';
import { type AgentStep, type ToolLedger, stepIn, textForModel } from './ledger.js';

export { ledgerContext, ToolLedger } from './ledger.js';

/** The step in a tool's execution options; an error naming what to pass when there is none. */
export function stepOf(options: ToolExecutionOptions, tool: string): AgentStep {
  const step = stepIn(options.experimental_context);
  if (!step) {
    throw new Error(
      `${tool} needs the run and step it belongs to: pass experimental_context: ledgerContext({ runId, stepId }) ` +
        'to generateText / streamText (from your own state, never from the model)',
    );
  }
  return step;
}

/** A tool that did not take effect (or may have): the message is what the model reads. */
export class LedgerToolError extends Error {
  constructor(
    message: string,
    readonly key: string,
    readonly kind: string,
  ) {
    super(message);
    this.name = 'LedgerToolError';
  }
}

/** `tools` with every tool's `execute` routed by the ledger's live policy. */
export function ledgerTools<T extends ToolSet>(ledger: ToolLedger, tools: T): T {
  return Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, ledgerTool(ledger, name, t)])) as T;
}

/** One tool, named `name` in the ledger's policy, routed by it. */
export function ledgerTool<INPUT, OUTPUT>(ledger: ToolLedger, name: string, t: Tool<INPUT, OUTPUT>): Tool<INPUT, OUTPUT> {
  const own = t.execute;
  const execute = async (input: INPUT, options: ToolExecutionOptions): Promise<OUTPUT> => {
    const route = await ledger.route(name);
    if (route.kind === 'unknown') throw new Error(ledger.unknownToolText(name));
    if (route.kind === 'direct') {
      if (!own) throw new Error(`${name} is a read tool without an execute of its own`);
      const out = own(input, options);
      if (out !== null && typeof out === 'object' && Symbol.asyncIterator in out) {
        throw new Error(`${name}: streaming tools are not supported by ledgerTools`);
      }
      return await (out as PromiseLike<OUTPUT> | OUTPUT);
    }
    const step = stepOf(options, name);
    const result = await ledger.call(step, name, input as Record<string, unknown>);
    if (result.kind === 'succeeded') return result.result as OUTPUT;
    throw new LedgerToolError(textForModel(name, result), result.key, result.kind);
  };
  return { ...t, execute } as Tool<INPUT, OUTPUT>;
}
