/**
 * The OpenAI Agents SDK (`@openai/agents`, JavaScript): function tools with effects through
 * Effect Ledger.
 *
 *   const payInvoice = ledgerTool(ledger, { name: 'pay_invoice', description, parameters, execute });
 *   await run(agent, input, { context: { ...yours, ...ledgerContext({ runId, stepId: requestId }) } });
 *
 * The step comes from the run's context object, which the SDK hands to every tool (through
 * handoffs and agents used as tools alike) and never sends to the model; the model's call id is not
 * used. A tool the live policy classes `read` runs its own `execute`; every other tool is called
 * through the gateway (its effect runs in the ledger's executor, once; its own `execute` is not
 * called). A call that did not succeed answers the model a text saying what happened and what not
 * to do, instead of the SDK's default "Please try again", which invites the model to re-plan the
 * action under a new call id.
 */
import { type FunctionTool, type RunContext, type ToolInputParameters, type ToolOptions, tool } from '@openai/agents-core';
import { type ToolLedger, stepIn, textForModel } from './ledger.js';

export { ledgerContext, ToolLedger } from './ledger.js';

/** `tool(options)`, its `execute` routed by the ledger's live policy; `options.name` is the policy's name. */
export function ledgerTool<TParameters extends ToolInputParameters, Context = unknown>(
  ledger: ToolLedger,
  options: ToolOptions<TParameters, Context> & { name: string },
): FunctionTool<Context, TParameters> {
  const name = options.name;
  const own = options.execute as (input: unknown, context?: RunContext<Context>, details?: unknown) => unknown;
  const execute = async (input: unknown, context?: RunContext<Context>, details?: unknown): Promise<unknown> => {
    const route = await ledger.route(name);
    if (route.kind === 'unknown') return ledger.unknownToolText(name);
    if (route.kind === 'direct') return own(input, context, details);
    const step = stepIn(context?.context);
    if (!step) {
      throw new Error(
        `${name} needs the run and step it belongs to: pass { context: ledgerContext({ runId, stepId }) } ` +
          '(merged into your own context) to run(), from your own state, never from the model',
      );
    }
    const result = await ledger.call(step, name, input as Record<string, unknown>);
    return result.kind === 'succeeded' ? result.result : textForModel(name, result);
  };
  return tool({
    ...options,
    execute,
    // Thrown errors (no context, the gateway unreachable): said as they are, without "try again".
    // An errorFunction of the application's (null: the run fails on them) is kept.
    errorFunction:
      options.errorFunction !== undefined
        ? options.errorFunction
        : (_context: RunContext<Context>, error: unknown) => `${name}: ${String((error as Error)?.message ?? error)}`,
  } as ToolOptions<TParameters, Context>) as FunctionTool<Context, TParameters>;
}
