/**
 * Framework glue: the orchestrator's step in an AsyncLocalStorage, and a wrapper that turns a
 * tool definition's `execute` into an exactly-once call through the gateway.
 *
 *   const chargeCard = exactlyOnce(client, { name: 'charge_card' });
 *   await withStep({ tenant: 'acme', runId, stepId: 'pay-invoice' }, () => chargeCard({ amount: 1000, to: 'cus_42' }));
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { CallRejected, CallStillRunning, EffectHeld, ToolFailed, type CallError } from './errors.js';
import type { CallResult, GatewayClient } from './gateway.js';
import { type StepContext, stepContext } from './keys.js';

const steps = new AsyncLocalStorage<Required<StepContext>>();

/** Runs `fn` with `step` as the current step (for every await inside it). */
export function withStep<T>(step: StepContext, fn: () => T): T {
  return steps.run(stepContext(step), fn);
}

/** The current step, if any. */
export function currentStep(): Required<StepContext> | undefined {
  return steps.getStore();
}

export interface ExactlyOnceOptions<A> {
  /** The tool's name, as in the ledger's tools.yaml. */
  name: string;
  /** What the effect is about, from the arguments (`customer:42`); default the step's scope. */
  scope?: string | ((args: A) => string);
  /** Seconds to wait at the gateway. */
  wait?: number;
}

/**
 * A function that calls tool `name` once for the current step with its arguments, resolves to
 * the tool's result and rejects with a typed error otherwise; drop it in as a tool definition's
 * `execute` (OpenAI Agents JS, Vercel AI SDK, Mastra). The effect itself runs in the ledger's
 * executor, once.
 */
export function exactlyOnce<A extends Record<string, unknown>, R = unknown>(
  client: GatewayClient,
  options: ExactlyOnceOptions<A>,
): (args: A) => Promise<R> {
  return async (args: A) => {
    const step = currentStep();
    if (!step) {
      throw new Error(
        `${options.name} was called outside withStep(...): the step is part of the key, so a call needs the orchestrator's run and step`,
      );
    }
    const scope =
      options.scope === undefined ? step.scope : typeof options.scope === 'function' ? options.scope(args) : options.scope;
    return unwrap<R>(options.name, await client.call({ ...step, scope }, options.name, args, { wait: options.wait }));
  };
}

function describe(error?: CallError): string {
  if (!error) return 'no detail';
  return `${error.code}: ${error.message}` + (error.correctiveAction ? ` (${error.correctiveAction})` : '');
}

function unwrap<R>(name: string, result: CallResult): R {
  switch (result.kind) {
    case 'succeeded':
      return result.result as R;
    case 'failed':
      throw new ToolFailed(`${name} failed: ${describe(result.error)}`, result);
    case 'held':
      throw new EffectHeld(
        `${name}: whether it took effect is not known yet; held for reconciliation (key ${result.key}). Attach to the key later; do not call it with a new step.`,
        result,
      );
    case 'rejected':
      throw new CallRejected(`${name} was refused: ${describe(result.error)}`, result);
    case 'running':
      throw new CallStillRunning(`${name} is still running (key ${result.key}); attach to the key for its result`, result);
  }
}
