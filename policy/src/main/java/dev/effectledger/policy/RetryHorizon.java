package dev.effectledger.policy;

import java.time.Duration;
import java.util.Optional;

/**
 * How long after a key's first dispatch the ledger may still send that key downstream on its own:
 * the longest time a downstream that honours keys must keep it for a late send to be deduplicated
 * rather than become a second effect.
 *
 * <ul>
 *   <li>{@code dispatches}: the pending timeout times the dispatches a key may get ({@code
 *       maxAttempts} when a silent or ambiguous dispatch is re-dispatched, one when it is held);
 *   <li>{@code executorRetries}: an executor's retries of one dispatch at their longest (every
 *       backoff delay in full, no jitter);
 *   <li>{@code reconciliation}: for a tool that holds, how soon a held key is settled and may then
 *       be dispatched again: {@code reconcileWithin} when declared, else the tool's window (an
 *       operator or a reconciler may release a held key at any time while the ledger keeps it).
 * </ul>
 *
 * A bound, not a forecast: real sends stop sooner when an attempt succeeds.
 *
 * @param dispatches pending timeout × dispatches
 * @param executorRetries an executor's retries of one dispatch at their longest
 * @param reconciliation how soon a held key may be dispatched again (zero for a re-dispatching
 *     tool)
 */
public record RetryHorizon(Duration dispatches, Duration executorRetries, Duration reconciliation) {

  /** The horizon of {@code policy}. */
  public static RetryHorizon of(ToolPolicy policy) {
    boolean holds = policy.onAmbiguous() == AmbiguityPolicy.HOLD;
    int sends = holds ? 1 : policy.maxAttempts();
    Duration retries = Duration.ZERO;
    for (int retry = 1; retry < policy.retry().maxAttempts(); retry++) {
      retries = retries.plus(policy.retry().delayBefore(retry, 0));
    }
    Duration reconciliation =
        !holds
            ? Duration.ZERO
            : policy.reconcileWithin() != null ? policy.reconcileWithin() : policy.window();
    return new RetryHorizon(policy.pendingTimeout().multipliedBy(sends), retries, reconciliation);
  }

  public Duration total() {
    return dispatches.plus(executorRetries).plus(reconciliation);
  }

  /**
   * The warning for {@code policy} when its horizon can outlive the downstream's key window, with
   * the numbers and what to change; empty when it cannot, or when no key window is declared.
   */
  public static Optional<String> warning(ToolPolicy policy) {
    Duration keys = policy.downstreamKeyWindow();
    if (keys == null || !policy.isLedgered()) {
      return Optional.empty();
    }
    RetryHorizon h = of(policy);
    if (h.total().compareTo(keys) <= 0) {
      return Optional.empty();
    }
    boolean holds = policy.onAmbiguous() == AmbiguityPolicy.HOLD;
    String dispatchPart =
        "pendingTimeout "
            + human(policy.pendingTimeout())
            + (holds ? " (held after one dispatch)" : " × " + policy.maxAttempts() + " attempts");
    String reconcilePart =
        !holds
            ? ""
            : policy.reconcileWithin() != null
                ? " + held keys settled within " + human(policy.reconcileWithin())
                : " + held keys settled at any time in its window ("
                    + human(policy.window())
                    + "; declare reconcileWithin)";
    return Optional.of(
        "tools."
            + policy.name()
            + ": the downstream keeps keys for "
            + human(keys)
            + ", but the ledger may send a key again up to "
            + human(h.total())
            + " after its first dispatch ("
            + dispatchPart
            + " + executor retries "
            + human(h.executorRetries())
            + reconcilePart
            + "); a send after "
            + human(keys)
            + " would be a second effect. Shorten pendingTimeout or maxAttempts, reconcile sooner"
            + " (reconcileWithin), or use a downstream that keeps keys longer");
  }

  /**
   * {@code d} as people read it: 30d, 1d 2h, 15m 1s, 700ms (rounded up to the second above 1 s).
   */
  static String human(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    if (d.compareTo(Duration.ofSeconds(1)) < 0) {
      return d.toMillis() + "ms";
    }
    long seconds = d.toSeconds() + (d.toMillisPart() > 0 ? 1 : 0);
    StringBuilder out = new StringBuilder();
    long[] sizes = {86_400, 3_600, 60, 1};
    String[] units = {"d", "h", "m", "s"};
    for (int i = 0; i < sizes.length; i++) {
      long n = seconds / sizes[i];
      seconds %= sizes[i];
      if (n > 0) {
        out.append(out.isEmpty() ? "" : " ").append(n).append(units[i]);
      }
    }
    return out.toString();
  }
}
