/**
 * Calls through Effect Ledger's HTTP gateway (`effectledger gateway`), on `fetch`.
 *
 * A call is `POST /v1/tools/{tool}/calls` with the step and the arguments; the gateway derives the
 * key (with the tool's key rules) and takes the tenant from the token, so a retry of the same call,
 * from this process or another, is the same key. The client retries what is safe to retry, the
 * same request each time (a lost connection, a timeout, 502/503); it never re-keys.
 */
import {
  type CallError,
  callErrorOf,
  GatewayError,
  KeyDerivationError,
  Unavailable,
} from './errors.js';
import { type StepContext, stepContext } from './keys.js';
import { traceHeaders } from './trace.js';

export type CallResult =
  | { kind: 'succeeded'; key: string; result: unknown; effectId?: string; replayed: boolean; attempts: number }
  | { kind: 'failed'; key: string; error?: CallError; replayed: boolean }
  | { kind: 'held'; key: string; error?: CallError; replayed: boolean }
  /** `status`: the gateway's HTTP status (422, 409, ...); absent in the native mode. */
  | { kind: 'rejected'; key: string; error?: CallError; status?: number }
  /** `location`: where the gateway lets you attach; absent in the native mode. */
  | { kind: 'running'; key: string; location?: string };

export interface GatewayClientOptions {
  /** The gateway, or a load balancer in front of several: `http://127.0.0.1:8088`. */
  url: string;
  /** A bearer token the gateway maps to a tenant. */
  token: string;
  /** Seconds a call waits at the gateway for its result (`Prefer: wait`); default 30. */
  wait?: number;
  /** Times a request is sent again after a lost connection or a 502/503; default 4. */
  retries?: number;
  /** First pause between tries, ms, doubling (at least Retry-After, at most 30 s); default 500. */
  backoffMs?: number;
  /** Added to the wait for the request's own timeout, ms; default 10,000. */
  marginMs?: number;
}

/** A tool as `GET /v1/tools` lists it: what an agent runtime's adapter routes by. */
export interface ToolInfo {
  name: string;
  class: 'read' | 'write-idempotent' | 'write-non-idempotent' | 'irreversible';
  /** false for read tools: no ledger entry, no dedup; call them directly. */
  ledgered: boolean;
  onInFlight: 'coalesce' | 'refuse';
  /** `hold`: an ambiguous outcome is held for a human or the reconciler (`held`). */
  onAmbiguous: 'redispatch' | 'hold';
  bypass: boolean;
  key: { ignore: string[]; require: string[] };
}

export interface CallOptions {
  wait?: number;
  /** The caller's own key instead of the derived one (`Idempotency-Key`). */
  idempotencyKey?: string;
  /**
   * An operator's approval for a deliberate second execution of a settled call: once per
   * approval, where the tool's policy allows bypass; otherwise `rejected` with BYPASS_NOT_ALLOWED.
   */
  bypassApproval?: string;
}

const KEY_ERRORS = new Set(['ARGUMENTS_NOT_JSON', 'ARGUMENTS_NOT_OBJECT', 'MISSING_REQUIRED_FIELD']);
type Answer = { status: number; headers: Headers; body: Record<string, unknown> };

export class GatewayClient {
  readonly url: string;
  private readonly token: string;
  readonly wait: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly marginMs: number;

  constructor(options: GatewayClientOptions) {
    if (!/^https?:\/\//.test(options.url)) throw new TypeError(`url must be http(s)://, not ${options.url}`);
    this.url = options.url.replace(/\/+$/, '');
    this.token = options.token;
    this.wait = options.wait ?? 30;
    this.retries = options.retries ?? 4;
    this.backoffMs = options.backoffMs ?? 500;
    this.marginMs = options.marginMs ?? 10_000;
  }

  /**
   * Calls `tool` once for `step`: a retry of this call gets the first call's result, never a
   * second effect. Rejects with {@link GatewayError}, {@link KeyDerivationError} or
   * {@link Unavailable}.
   */
  async call(
    step: StepContext,
    tool: string,
    args: Record<string, unknown> | string,
    options: CallOptions = {},
  ): Promise<CallResult> {
    const s = stepContext(step);
    if (typeof tool !== 'string' || tool === '') throw new TypeError('tool must be set');
    if (
      options.bypassApproval !== undefined &&
      (typeof options.bypassApproval !== 'string' || options.bypassApproval.trim() === '')
    ) {
      throw new TypeError("bypassApproval must be an operator's approval; leave it out for a normal call");
    }
    let argumentsValue: unknown = args;
    if (typeof args === 'string') {
      try {
        argumentsValue = JSON.parse(args);
      } catch (e) {
        throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are not JSON: ${(e as Error).message}`);
      }
    }
    let body: string;
    try {
      body = JSON.stringify(
        {
          arguments: argumentsValue,
          step: { run: s.runId, step: s.stepId, scope: s.scope },
          ...(options.bypassApproval === undefined ? {} : { bypassApproval: options.bypassApproval }),
        },
        (_k, v: unknown) => {
          // JSON.stringify would write NaN and Infinity as null: another call than the one meant.
          if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${v} is not JSON`);
          return v;
        },
      );
    } catch (e) {
      throw new KeyDerivationError('ARGUMENTS_NOT_JSON', `arguments are not JSON: ${(e as Error).message}`);
    }
    // the agent's span, so the call's spans join its trace
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...traceHeaders() };
    if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = options.idempotencyKey;
    const wait = options.wait ?? this.wait;
    const answer = await this.send('POST', `/v1/tools/${encodeURIComponent(tool)}/calls`, wait, body, headers);
    if (answer.status === 409 && typeof answer.body.key === 'string') {
      // The same call is in flight (a retry raced the first): wait for it by key.
      return this.attach(answer.body.key, { wait });
    }
    return result(answer);
  }

  /**
   * Waits for the call with `key`, published through any gateway instance, and returns it. Pass a
   * `running` result's `location` to attach to that call's own intent: the gateway then does not
   * take a release of the key's earlier life (made before the ledger read this call's intent) as
   * the call's answer. Without it, any final answer of the key is taken.
   */
  async attach(key: string, options: { wait?: number; location?: string } = {}): Promise<CallResult> {
    const wait = options.wait ?? this.wait;
    if (options.location !== undefined && !options.location.startsWith('/v1/calls/')) {
      throw new Error(`location is a gateway's /v1/calls/... Location, got ${JSON.stringify(options.location)}`);
    }
    const path = options.location ?? `/v1/calls/${encodeURIComponent(key)}`;
    return result(await this.send('GET', path, wait, undefined, {}));
  }

  /**
   * The tools this client's token may call, from the gateway's live policy (`GET /v1/tools`).
   * Rejects with {@link GatewayError} (401) or {@link Unavailable}.
   */
  async tools(): Promise<ToolInfo[]> {
    return (await this.catalogue()).tools;
  }

  /**
   * `GET /v1/tools` whole: the tools, and what a tool the policy does not name gets (`ledgered`
   * under a top-level `unknownTool` entry, else `rejected`).
   */
  async catalogue(): Promise<{ tools: ToolInfo[]; unknownTools: 'ledgered' | 'rejected' }> {
    const answer = await this.send('GET', '/v1/tools', 0, undefined, {});
    if (answer.status !== 200 || !Array.isArray(answer.body.tools)) throw new GatewayError(answer.status, answer.body);
    return {
      tools: answer.body.tools as ToolInfo[],
      unknownTools: answer.body.unknownTools === 'ledgered' ? 'ledgered' : 'rejected',
    };
  }

  private async send(
    method: string,
    path: string,
    wait: number,
    body: string | undefined,
    extra: Record<string, string>,
  ): Promise<Answer> {
    const headers = {
      ...extra,
      Authorization: `Bearer ${this.token}`,
      Accept: 'application/json, application/problem+json',
      Prefer: `wait=${Math.max(0, Math.floor(wait))}`,
    };
    let pause = this.backoffMs;
    let last = 'no attempt';
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) {
        await new Promise((r) => setTimeout(r, pause));
        pause = Math.min(pause * 2, 30_000);
      }
      let response: Response;
      try {
        response = await fetch(this.url + path, {
          method,
          headers,
          body,
          signal: AbortSignal.timeout(wait * 1000 + this.marginMs),
        });
      } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause;
        last = `${(e as Error).name}: ${cause?.code ?? (e as Error).message}`;
        continue;
      }
      const answer = { status: response.status, headers: response.headers, body: await json(response) };
      if ((answer.status === 502 || answer.status === 503) && attempt < this.retries) {
        last = `HTTP ${answer.status}: ${String(answer.body.detail ?? '')}`;
        const after = Number(answer.headers.get('Retry-After') ?? '0');
        if (Number.isFinite(after)) pause = Math.max(pause, Math.min(after * 1000, 30_000));
        continue;
      }
      return answer;
    }
    throw new Unavailable(
      `${method} ${path}: no answer after ${this.retries + 1} attempts (${last}); ` +
        'call again with the same step, never a new one',
    );
  }
}

async function json(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  if (text === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { detail: String(value) };
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

function result({ status, headers, body }: Answer): CallResult {
  const replayed = (headers.get('Idempotent-Replayed') ?? '').toLowerCase() === 'true';
  const call = (body.call ?? {}) as Record<string, unknown>;
  const key = String(body.key ?? call.key ?? '');
  if (status === 200) {
    return {
      kind: 'succeeded',
      key,
      result: body.result,
      effectId: typeof body.effectId === 'string' ? body.effectId : undefined,
      replayed: replayed || body.replayed === true,
      attempts: Number(body.attempts ?? 0),
    };
  }
  if (status === 202) {
    if (body.status === 'UNKNOWN') {
      return { kind: 'held', key, error: callErrorOf(body.error as Record<string, unknown>), replayed };
    }
    return { kind: 'running', key, location: headers.get('Location') ?? `/v1/calls/${encodeURIComponent(key)}` };
  }
  if (status === 424) return { kind: 'failed', key, error: callErrorOf(body), replayed };
  if (body.call) return { kind: 'rejected', key, error: callErrorOf(body), status };
  if (status === 400 && KEY_ERRORS.has(String(body.code))) {
    throw new KeyDerivationError(
      body.code as 'ARGUMENTS_NOT_JSON' | 'ARGUMENTS_NOT_OBJECT' | 'MISSING_REQUIRED_FIELD',
      String(body.detail ?? ''),
    );
  }
  throw new GatewayError(status, body);
}
