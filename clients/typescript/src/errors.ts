/** Typed errors, with the codes the Java client and the ledger use. */

export class EffectLedgerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The arguments give no key: `ARGUMENTS_NOT_JSON`, `ARGUMENTS_NOT_OBJECT`, `MISSING_REQUIRED_FIELD`. */
export class KeyDerivationError extends EffectLedgerError {
  constructor(
    readonly code: 'ARGUMENTS_NOT_JSON' | 'ARGUMENTS_NOT_OBJECT' | 'MISSING_REQUIRED_FIELD',
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

/** The ledger's or the tool's error, as the gateway answers it. */
export interface CallError {
  code: string;
  message: string;
  retriable: boolean;
  correctiveAction: string;
}

export function callErrorOf(body: Record<string, unknown> | undefined | null): CallError | undefined {
  if (!body || typeof body !== 'object') return undefined;
  return {
    code: String(body.code ?? ''),
    message: String(body.message ?? body.detail ?? ''),
    retriable: Boolean(body.retriable ?? false),
    correctiveAction: String(body.correctiveAction ?? ''),
  };
}

/**
 * The gateway refused the request itself (an RFC 9457 problem): a bad credential (401/403), an
 * unknown tool (404), an invalid body or header (400), too large (413), wrong media type (415).
 * Nothing was published.
 */
export class GatewayError extends EffectLedgerError {
  readonly code: string;
  readonly field?: string;
  constructor(
    readonly status: number,
    readonly problem: Record<string, unknown>,
  ) {
    const code = String(problem.code ?? String(problem.type ?? '').split(':').pop() ?? '');
    super(`HTTP ${status} ${code}: ${String(problem.detail ?? '')}`);
    this.code = code;
    this.field = typeof problem.field === 'string' ? problem.field : undefined;
  }
}

/**
 * No answer within the client's retries (lost connections, timeouts, 503). The call may or may
 * not have been published: call again with the same step (the same key), never a new one.
 */
export class Unavailable extends EffectLedgerError {}

/** Raised by a wrapped tool when its call did not succeed; `result` has the details. */
export class CallNotDone extends EffectLedgerError {
  readonly key: string;
  constructor(
    message: string,
    readonly result: { key: string; error?: CallError },
  ) {
    super(message);
    this.key = result.key;
  }
}
/** The tool failed for good; the same step gets the same failure. */
export class ToolFailed extends CallNotDone {}
/** Whether the effect happened is unknown: held for reconciliation. Attach to `key` later. */
export class EffectHeld extends CallNotDone {}
/** The ledger refused the call (a key reused with other arguments, policy). */
export class CallRejected extends CallNotDone {}
/** Still in flight at the end of the wait: attach to `key` for the result. */
export class CallStillRunning extends CallNotDone {}
