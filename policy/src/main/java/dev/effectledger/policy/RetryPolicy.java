package dev.effectledger.policy;

import java.time.Duration;
import java.util.Objects;

/**
 * How an executor retries one dispatch whose effect provably did not happen (or, for key-honouring
 * downstreams, may have): capped exponential backoff with jitter, always with the same key.
 *
 * @param maxAttempts calls to the connector per dispatch, at least 1
 * @param base delay before the first retry
 * @param cap largest delay
 * @param jitter fraction of each delay drawn at random, in [0, 1]: 0.2 means 80-100% of the delay
 */
public record RetryPolicy(int maxAttempts, Duration base, Duration cap, double jitter) {

  /**
   * The longest base or cap: an hour (an executor holds the effect's slot while it waits). Declared
   * before DEFAULT, which checks against it.
   */
  public static final Duration MAX_DELAY = Duration.ofHours(1);

  public static final RetryPolicy DEFAULT =
      new RetryPolicy(4, Duration.ofMillis(100), Duration.ofSeconds(10), 0.2);

  public RetryPolicy {
    Objects.requireNonNull(base, "base");
    Objects.requireNonNull(cap, "cap");
    if (maxAttempts < 1) {
      throw new IllegalArgumentException(
          "retry.maxAttempts must be at least 1, was " + maxAttempts);
    }
    if (base.isNegative() || cap.isNegative()) {
      throw new IllegalArgumentException("retry.base and retry.cap must not be negative");
    }
    if (cap.compareTo(MAX_DELAY) > 0) {
      throw new IllegalArgumentException(
          "retry cap " + cap + " is above the longest allowed, " + MAX_DELAY);
    }
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(
          "retry.cap (" + cap + ") is below retry.base (" + base + ")");
    }
    if (!(jitter >= 0 && jitter <= 1)) {
      throw new IllegalArgumentException("retry.jitter must be within [0, 1], was " + jitter);
    }
  }

  /**
   * Delay before retry number {@code retry} (1 for the first retry): {@code min(cap, base *
   * 2^(retry-1))}, less up to {@code jitter} of it drawn from {@code random} in [0, 1).
   */
  public Duration delayBefore(int retry, double random) {
    long baseMs = base.toMillis();
    long exp = retry <= 1 ? baseMs : baseMs << Math.min(retry - 1, 30);
    long capped = Math.min(cap.toMillis(), exp < 0 ? Long.MAX_VALUE : exp);
    return Duration.ofMillis(Math.round(capped * (1 - jitter * random)));
  }
}
