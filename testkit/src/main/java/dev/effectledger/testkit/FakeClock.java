package dev.effectledger.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A clock that moves only when a test moves it, for code that takes a {@link Clock} (connectors,
 * the client, the processor's thread-failure policy). Safe to read from other threads.
 */
public final class FakeClock extends Clock {

  private final AtomicReference<Instant> now;

  public FakeClock(Instant start) {
    this.now = new AtomicReference<>(start);
  }

  /** Moves the clock forward by {@code step}. */
  public FakeClock advance(Duration step) {
    if (step.isNegative()) {
      throw new IllegalArgumentException("a clock does not go back: " + step);
    }
    now.updateAndGet(t -> t.plus(step));
    return this;
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    if (!ZoneOffset.UTC.equals(zone)) {
      throw new UnsupportedOperationException("FakeClock runs in UTC only, not " + zone);
    }
    return this;
  }
}
