/**
 * The agent-runtime eval (the orchestration contract's "boring eval"): scripted agents in each
 * framework's own loop, each user request meaning one payment, counted at the payment API.
 *
 * A request's scenario says what its scripted model does: re-plan the same payment 1-3 more times
 * with new tool-call ids, its arguments in another order and another memo (`replan`); emit the same
 * call twice in one turn (`parallel`); hand the request to two subagents that both decide to pay
 * (`subagents`); LangGraph's adds an approval interrupt and resume (`interrupt`) and a crash of
 * the agent's process after the payment went out, resumed by a new process from the PostgreSQL
 * checkpointer (`crash`). With the ledger, `pay_invoice` goes through the gateway; without it
 * (`direct`), the same agent's tool posts to the payment API itself, keyed by the model's tool-call
 * id and retrying that key on a timeout or a 5xx, as a careful hand-written tool would.
 */
import { GatewayClient } from '../src/gateway.js';
import { ToolLedger } from '../src/agents/ledger.js';

export type Mode = 'ledger' | 'direct';
export type Scenario = 'replan' | 'parallel' | 'subagents' | 'interrupt' | 'crash';

export interface Request {
  /** The user's request id: the step every call for it belongs to. */
  id: string;
  invoice: string;
  amount: number;
  scenario: Scenario;
  /** How many more times the model emits the payment after the first (replan). */
  replans: number;
}

export interface PayArgs {
  invoice: string;
  amount: number;
  currency: string;
  memo: string;
}

export interface Env {
  gatewayUrl: string;
  token: string;
  /** The payment API's POST /charges. */
  paymentsUrl: string;
  postgresUrl?: string;
}

export function env(): Env {
  const need = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set: the eval is started by AgentRuntimesIT or bench/run agents`);
    return value;
  };
  return {
    gatewayUrl: need('EFFECTLEDGER_GATEWAY_URL'),
    token: need('EFFECTLEDGER_TOKEN'),
    paymentsUrl: need('EVAL_PAYMENTS_URL'),
    postgresUrl: process.env.EVAL_POSTGRES_URL,
  };
}

export function ledgerOf(e: Env): ToolLedger {
  return new ToolLedger({
    client: new GatewayClient({ url: e.gatewayUrl, token: e.token }), // the client's default wait, 30 s
    scopes: { pay_invoice: (a) => `invoice:${String(a.invoice)}` },
    direct: ['ask_approval'], // a person's approval (LangGraph's interrupt), not an effect
  });
}

/** A small seeded generator (mulberry32): the same requests for the same seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` requests, their scenarios taken in turn from `scenarios`. */
export function requests(tag: string, count: number, seed: number, scenarios: readonly Scenario[]): Request[] {
  const next = random(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: `${tag}-req-${i}`,
    invoice: `${tag}-inv-${i}`,
    amount: 100 + Math.floor(next() * 9900),
    scenario: scenarios[i % scenarios.length],
    replans: 1 + Math.floor(next() * 3),
  }));
}

/** The n-th rendering of the payment: keys in another order, another memo; the same action. */
export function payArgs(r: Request, n: number): Record<string, unknown> {
  const memo = ['paying as asked', `settling ${r.invoice}`, 'retrying the payment', 'one more try'][n % 4];
  return n % 2 === 0
    ? { invoice: r.invoice, amount: r.amount, currency: 'EUR', memo }
    : { memo, currency: 'EUR', amount: r.amount, invoice: r.invoice };
}

/** The request as the user says it; the scripted models read the invoice back from it. */
export function userText(r: Request): string {
  return `Please pay invoice ${r.invoice} (${r.amount} EUR). [scenario ${r.scenario}]`;
}

/** The request a user text stands for (the scripted models' only input besides the turn). */
export function parseUserText(text: string, all: Map<string, Request>): Request {
  const invoice = /invoice (\S+) /.exec(text)?.[1];
  const r = invoice ? all.get(invoice) : undefined;
  if (!r) throw new Error(`scripted model: no request for ${JSON.stringify(text)}`);
  return r;
}

/**
 * The tool without the ledger: POST /charges keyed by the model's tool-call id, the same key again
 * after a timeout or a 5xx (three tries), as a hand-written tool does.
 */
export async function payDirectly(e: Env, args: PayArgs, toolCallId: string): Promise<unknown> {
  let last = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const response = await fetch(e.paymentsUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': toolCallId },
        body: JSON.stringify(args),
        signal: AbortSignal.timeout(1_500),
      });
      const body = await response.text();
      if (response.status < 300) return JSON.parse(body);
      last = `HTTP ${response.status}`;
      if (response.status < 500 && response.status !== 409 && response.status !== 429) break;
    } catch (error) {
      last = String((error as Error).message);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`pay_invoice failed: ${last}`);
}

/** What get_invoice (a read tool, class read in the policy) answers. */
export function invoiceOf(invoice: string, all: Map<string, Request>): Record<string, unknown> {
  const r = all.get(invoice);
  return r ? { invoice, amount: r.amount, currency: 'EUR', status: 'open' } : { invoice, status: 'unknown' };
}

/** Effects per invoice at the payment API (`GET /effects?by=invoice`). */
export async function effectsByInvoice(e: Env): Promise<Record<string, number>> {
  const url = new URL(e.paymentsUrl);
  url.pathname = '/effects';
  url.search = 'by=invoice';
  const response = await fetch(url);
  return (await response.json()) as Record<string, number>;
}

/** Runs `work` over `items`, `parallel` at a time. */
export async function inParallel<T>(items: readonly T[], parallel: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(parallel, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  });
  await Promise.all(workers);
}

export interface Row {
  runtime: string;
  mode: Mode;
  scenario: Scenario;
  requests: number;
  /** Requests whose payment took effect exactly once, more than once, and never. */
  once: number;
  more: number;
  none: number;
  effects: number;
  /** Requests whose agent run failed (an error out of the framework's loop). */
  errors: string[];
}

/** The table rows of one runtime and mode, from the payment API's counts. */
export async function rows(
  e: Env,
  runtime: string,
  mode: Mode,
  done: readonly Request[],
  errors: Map<string, string>,
): Promise<Row[]> {
  const counts = await effectsByInvoice(e);
  const byScenario = new Map<Scenario, Row>();
  for (const r of done) {
    const row = byScenario.get(r.scenario) ?? {
      runtime,
      mode,
      scenario: r.scenario,
      requests: 0,
      once: 0,
      more: 0,
      none: 0,
      effects: 0,
      errors: [],
    };
    const n = counts[r.invoice] ?? 0;
    row.requests++;
    row.effects += n;
    if (n === 1) row.once++;
    else if (n > 1) row.more++;
    else row.none++;
    const error = errors.get(r.id);
    if (error) row.errors.push(`${r.id}: ${error}`);
    byScenario.set(r.scenario, row);
  }
  return [...byScenario.values()];
}
