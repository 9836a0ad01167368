package dev.effectledger.client;

import java.util.Objects;

/**
 * What became of one tool call: a value to switch on, never an exception for an expected answer.
 *
 * <pre>{@code
 * CallResult result = client.invokeAndWait(call);
 * if (result instanceof CallResult.Succeeded s) {
 *   use(s.resultJson());
 * } else if (result instanceof CallResult.Failed f) {
 *   report(f.error());                 // no effect; f.error().retriable(): the same call may run later
 * } else if (result instanceof CallResult.HeldUnknown h) {
 *   escalate(h.error());               // may have happened: held for reconciliation
 * } else if (result instanceof CallResult.Rejected r) {
 *   fix(r.error());                    // refused before anything ran
 * } else if (result instanceof CallResult.StillRunning s) {
 *   client.attach(s);                  // wait on; the action happens once either way
 * }
 * }</pre>
 */
public sealed interface CallResult {

  /** The idempotency key the call was published under; the same for every retry of it. */
  String key();

  /**
   * The effect happened, once.
   *
   * @param resultJson the tool's result as JSON text
   * @param effectId the downstream's id of the effect (a charge id, a row id), or null
   * @param replayed true when the ledger replayed a stored result to a repeat of the call
   * @param attempts dispatch attempts the ledger made for the key
   */
  record Succeeded(String key, String resultJson, String effectId, boolean replayed, int attempts)
      implements CallResult {
    public Succeeded {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * The effect did not happen: the downstream refused it (not retriable: fix the arguments, as a
   * new step), or retries were spent on failures that provably did not act ({@code
   * RETRIES_EXHAUSTED}, retriable: the same call later runs once).
   */
  record Failed(String key, CallError error, boolean replayed) implements CallResult {
    public Failed {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(error, "error");
    }
  }

  /**
   * The effect may have happened and the ledger holds the key for reconciliation; calling again
   * replays this answer until the reconciler settles it. Never retry it under a new key.
   *
   * <p>A multi-write tool that did some of its writes is held the same way, with error code {@code
   * PARTIAL_SUCCESS} ({@link #partial()}) and {@code reportJson} naming the writes done and not
   * done and the corrective action; an operator settles it.
   *
   * @param reportJson the partial success's report, or null
   */
  record HeldUnknown(String key, CallError error, boolean replayed, String reportJson)
      implements CallResult {
    public HeldUnknown {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(error, "error");
    }

    public HeldUnknown(String key, CallError error, boolean replayed) {
      this(key, error, replayed, null);
    }

    /** Whether some of the tool's writes took effect and some did not. */
    public boolean partial() {
      return "PARTIAL_SUCCESS".equals(error.code());
    }
  }

  /**
   * The ledger refused the call before anything ran: bad input, a key reused with other arguments,
   * an unknown tool, a bypass the policy forbids, or a repeat while the original runs under a
   * {@code refuse} policy ({@code DUPLICATE_IN_FLIGHT} is waited out by the client, not returned).
   */
  record Rejected(String key, CallError error) implements CallResult {
    public Rejected {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(error, "error");
    }
  }

  /**
   * No final answer yet: the call's timeout passed, or the client was closed first. The action may
   * still happen, once. {@link ToolCalls#attach} waits on for it; calling again with the same step
   * context anywhere (another process, after a restart) does the same, never a second effect.
   */
  record StillRunning(String key, ToolCall call, Reason reason) implements CallResult {
    public StillRunning {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(call, "call");
      Objects.requireNonNull(reason, "reason");
    }

    /** Why the wait ended. */
    public enum Reason {
      /** The call's timeout passed. */
      TIMED_OUT,
      /** The client was closed while the call waited. */
      CLIENT_CLOSED
    }
  }
}
