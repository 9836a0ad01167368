package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.executor.Sleeper;
import dev.effectledger.policy.RetryPolicy;
import java.time.Duration;
import java.util.function.DoubleSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls a connector until its answer is final or the retry policy is spent, always with the same
 * key. A {@code Retry-After} longer than the policy's cap ends the retries (the outcome stays
 * retryable, so the ledger releases the key) rather than being shortened. Retryable answers are
 * retried; ambiguous ones only where repeating the key cannot act twice; an exception from the
 * connector is an ambiguous answer, never a crash.
 */
public final class Invoker {

  private static final Logger log = LoggerFactory.getLogger(Invoker.class);

  private final Sleeper sleeper;
  private final DoubleSupplier random;

  public Invoker(Sleeper sleeper, DoubleSupplier random) {
    this.sleeper = sleeper;
    this.random = random;
  }

  public EffectOutcome invoke(Connector connector, EffectRequest request, RetryPolicy retry) {
    return invoke(connector, request, retry, () -> {});
  }

  /** As {@link #invoke(Connector, EffectRequest, RetryPolicy)}, telling {@code onRetry} of each. */
  public EffectOutcome invoke(
      Connector connector, EffectRequest request, RetryPolicy retry, Runnable onRetry) {
    boolean mayRepeatAmbiguous = connector.capabilities().safeToRepeat();
    EffectOutcome outcome = null;
    EffectOutcome.Ambiguous earlierAmbiguous = null;
    for (int call = 1; call <= retry.maxAttempts(); call++) {
      outcome = callOnce(connector, request);
      if (outcome instanceof EffectOutcome.Ambiguous a) {
        earlierAmbiguous = a;
      }
      boolean retryable =
          outcome instanceof EffectOutcome.Retryable
              || (outcome instanceof EffectOutcome.Ambiguous && mayRepeatAmbiguous);
      if (!retryable || call == retry.maxAttempts()) {
        return settle(outcome, earlierAmbiguous);
      }
      Duration delay = retry.delayBefore(call, random.getAsDouble());
      if (outcome instanceof EffectOutcome.Retryable r && r.retryAfter().isPresent()) {
        Duration asked = r.retryAfter().get();
        if (asked.compareTo(retry.cap()) > 0) {
          // Honour the downstream: no retry sooner than it asked, and none held longer than the
          // cap.
          return settle(outcome, earlierAmbiguous);
        }
        delay = asked.compareTo(delay) > 0 ? asked : delay;
      }
      log.debug("Retrying key {} after {} in {}", request.effectKey(), outcome.code(), delay);
      try {
        sleeper.sleep(delay);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return settle(outcome, earlierAmbiguous);
      }
      onRetry.run();
    }
    return settle(outcome, earlierAmbiguous);
  }

  /**
   * A final "retryable" proves only that the last call did nothing; after an ambiguous call the
   * effect may still have happened (a request stalled downstream answers 409 to its retries), so
   * the answer stays ambiguous and the key is never released.
   */
  private static EffectOutcome settle(EffectOutcome last, EffectOutcome.Ambiguous earlier) {
    if (last instanceof EffectOutcome.Retryable r && earlier != null) {
      return new EffectOutcome.Ambiguous(
          earlier.code(), earlier.message() + "; later retries answered " + r.code());
    }
    return last;
  }

  private static EffectOutcome callOnce(Connector connector, EffectRequest request) {
    try {
      EffectOutcome outcome = connector.execute(request);
      return outcome != null
          ? outcome
          : new EffectOutcome.Ambiguous("CONNECTOR_ERROR", "the connector answered nothing");
    } catch (RuntimeException e) {
      log.warn(
          "Connector for tool {} threw on key {}: {}",
          request.tool(),
          request.effectKey(),
          e.toString());
      return new EffectOutcome.Ambiguous(
          "CONNECTOR_ERROR", "the connector threw " + e.getClass().getSimpleName());
    }
  }
}
