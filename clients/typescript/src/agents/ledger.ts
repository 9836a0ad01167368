/**
 * What every agent-runtime adapter shares (LangGraph.js, the Vercel AI SDK, the OpenAI Agents SDK):
 * which tools go through the ledger, one call with its wait for a call still running, and the text
 * a model gets when a call did not succeed.
 *
 * The key is never made here: the gateway derives it from the step the adapter reads out of the
 * runtime's own state (the run, the user's request being served), the tool, the arguments with the
 * tool's key rules, and the token's tenant. The model's tool-call id is never part of it: it changes
 * every time the model re-plans the same action.
 */
import type { CallResult, GatewayClient, ToolInfo } from '../gateway.js';

/** Where in an agent run a tool call happens; read by each adapter from the runtime's state. */
export interface AgentStep {
  /** The durable run: a thread, a conversation, a workflow run. Stable across crash and resume. */
  runId: string;
  /**
   * The step within the run the call belongs to: the user's request being served (the id of the
   * human message, the turn), stable while the model re-plans, retries or resumes it.
   */
  stepId: string;
  /** What the effect is about (`invoice:42`), "" for none; a tool's `scope` option overrides it. */
  scope?: string;
}

/** The field of a runtime's context object that holds the step (AI SDK, OpenAI Agents SDK). */
export const CONTEXT_FIELD = 'effectLedger';

/** A context value holding `step`: `{ effectLedger: step }`; merge it into your own context. */
export function ledgerContext(step: AgentStep): { [CONTEXT_FIELD]: AgentStep } {
  return { [CONTEXT_FIELD]: step };
}

/** The step held by a runtime's context object, or `undefined`. */
export function stepIn(context: unknown): AgentStep | undefined {
  const step = (context as Record<string, unknown> | null | undefined)?.[CONTEXT_FIELD] as AgentStep | undefined;
  return step && typeof step.runId === 'string' && step.runId !== '' && typeof step.stepId === 'string' && step.stepId !== ''
    ? step
    : undefined;
}

export interface ToolLedgerOptions {
  client: GatewayClient;
  /** Per tool: the business scope from the arguments (`(a) => 'invoice:' + a.invoice`). */
  scopes?: Record<string, (args: Record<string, unknown>) => string>;
  /**
   * Tools that are not the ledger's (a person's approval, an agent used as a tool): run as they
   * are while the policy does not name them. Once the policy names one, its class decides.
   */
  direct?: readonly string[];
  /** Seconds to wait in all for a call still running before the model is told so; default 120. */
  attachSeconds?: number;
  /** How long the gateway's tool list is kept before it is read again (live policy); default 30 s. */
  policyTtlMs?: number;
}

/** How a tool is routed: through the ledger, straight to its own code, or refused. */
export type Route = { kind: 'ledger'; tool: ToolInfo } | { kind: 'direct' } | { kind: 'unknown' };

/**
 * The gateway's side of an adapter: routes tools by the live policy (`GET /v1/tools`) and calls the
 * ledgered ones, waiting on a call still running (attach) up to `attachSeconds`.
 */
export class ToolLedger {
  readonly client: GatewayClient;
  private readonly options: ToolLedgerOptions;
  private catalogue?: { at: number; tools: Map<string, ToolInfo>; unknownLedgered: boolean };
  private loading?: Promise<void>;

  constructor(options: ToolLedgerOptions) {
    this.client = options.client;
    this.options = options;
  }

  /**
   * By the live policy: `ledger` for a tool whose class is not `read`, `direct` for a read tool;
   * for a tool it does not name, `direct` when the adapter was told so, `ledger` when the policy
   * has an `unknownTool` entry (the gateway ledgers such tools, held when ambiguous), else
   * `unknown` (calling it would skip the ledger without anyone deciding so).
   */
  async route(tool: string): Promise<Route> {
    const catalogue = await this.tools();
    const info = catalogue.tools.get(tool);
    if (info) return info.ledgered ? { kind: 'ledger', tool: info } : { kind: 'direct' };
    if (this.options.direct?.includes(tool)) return { kind: 'direct' };
    if (catalogue.unknownLedgered) return { kind: 'ledger', tool: unnamed(tool) };
    return { kind: 'unknown' };
  }

  /** Calls `tool` for `step` through the gateway; a call still running is waited on. */
  async call(step: AgentStep, tool: string, args: Record<string, unknown>): Promise<CallResult> {
    const scopeOf = this.options.scopes?.[tool];
    const scope = scopeOf ? scopeOf(args) : (step.scope ?? '');
    // The gateway takes the tenant from the token; the client checks the step has one.
    const deadline = Date.now() + (this.options.attachSeconds ?? 120) * 1000;
    let result = await this.client.call(
      { tenant: 'token', runId: step.runId, stepId: step.stepId, scope },
      tool,
      args,
      { wait: waitUntil(deadline, this.client.wait) },
    );
    while (result.kind === 'running') {
      const wait = waitUntil(deadline, this.client.wait);
      if (wait === 0) break; // the deadline: the model is told the call is still running
      result = await this.client.attach(result.key, { location: result.location, wait });
    }
    return result;
  }

  /** A tool that is not in the policy, said so a developer can act (and a model can report it). */
  unknownToolText(tool: string): string {
    return (
      `${tool} is not in Effect Ledger's tool policy, so it was not run: add it to the ledger's tools.yaml ` +
      `(class read for a tool without effects) or name it in the adapter's direct list.`
    );
  }

  private async tools(): Promise<NonNullable<ToolLedger['catalogue']>> {
    const ttl = this.options.policyTtlMs ?? 30_000;
    if (!this.catalogue || Date.now() - this.catalogue.at > ttl) {
      this.loading ??= this.client
        .catalogue()
        .then(({ tools, unknownTools }) => {
          this.catalogue = {
            at: Date.now(),
            tools: new Map(tools.map((t) => [t.name, t])),
            unknownLedgered: unknownTools === 'ledgered',
          };
        })
        .finally(() => {
          this.loading = undefined;
        });
      await this.loading;
    }
    return this.catalogue!;
  }
}

/** What the policy's `unknownTool` entry gives a tool it does not name, as far as adapters care. */
function unnamed(name: string): ToolInfo {
  return {
    name,
    class: 'irreversible',
    ledgered: true,
    onInFlight: 'coalesce',
    onAmbiguous: 'hold',
    bypass: false,
    key: { ignore: [], require: [] },
  };
}

function waitUntil(deadline: number, wait: number): number {
  return Math.max(0, Math.min(wait, Math.ceil((deadline - Date.now()) / 1000)));
}

/**
 * The text a model gets for a call that did not succeed: what happened, and what to do (or not do)
 * next. A held call must not be retried with other arguments: that would be a second action.
 */
export function textForModel(tool: string, result: Exclude<CallResult, { kind: 'succeeded' }>): string {
  const error = 'error' in result ? result.error : undefined;
  const detail = error ? `${error.code}: ${error.message}${error.correctiveAction ? ` (${error.correctiveAction})` : ''}` : '';
  switch (result.kind) {
    case 'failed':
      return (
        `${tool} failed and did not take effect: ${detail}. ` +
        (error?.retriable
          ? 'Calling it again for the same request gets the same answer; tell the user it can be tried later.'
          : 'Do not call it again with the same arguments; fix them or tell the user.')
      );
    case 'held':
      if (error?.code === 'PARTIAL_SUCCESS') {
        return (
          `${tool} took effect in part: ${detail}. Do not call ${tool} again for this request, ` +
          'not with other arguments either: tell the user which part was done.'
        );
      }
      return (
        `${tool}: it is not known yet whether this action took effect; it is held for reconciliation. ` +
        `Do not call ${tool} again for this request, not with other arguments either: tell the user it is being checked.`
      );
    case 'rejected':
      return `${tool} was refused before anything ran: ${detail}.`;
    case 'running':
      return (
        `${tool} is still running. Calling it again with the same arguments waits for the same action ` +
        '(it will not run twice); do not change the arguments.'
      );
  }
}
