package dev.effectledger.client;

import java.time.Duration;
import java.util.Optional;

/**
 * Settings of one call that differ from the client's.
 *
 * @param timeout how long this call waits for a final answer; empty: the client's timeout
 */
public record CallOptions(Optional<Duration> timeout) {

  private static final CallOptions DEFAULTS = new CallOptions(Optional.empty());

  public CallOptions {
    timeout.ifPresent(
        t -> {
          if (t.isNegative() || t.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, was " + t);
          }
        });
  }

  /** The client's settings. */
  public static CallOptions defaults() {
    return DEFAULTS;
  }

  /** Waits up to {@code wait} for this call's final answer. */
  public static CallOptions timeout(Duration wait) {
    return new CallOptions(Optional.of(wait));
  }
}
