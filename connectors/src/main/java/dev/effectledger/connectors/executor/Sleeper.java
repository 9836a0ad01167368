package dev.effectledger.connectors.executor;

import java.time.Duration;

/** Waits between retries; injected so tests run without real delays. */
@FunctionalInterface
public interface Sleeper {

  Sleeper REAL = duration -> Thread.sleep(duration.toMillis());

  void sleep(Duration duration) throws InterruptedException;
}
