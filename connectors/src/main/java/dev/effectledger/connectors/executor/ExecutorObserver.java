package dev.effectledger.connectors.executor;

import java.time.Duration;

/**
 * What an executor tells about its effects, for metrics: each connector call from its start to its
 * outcome, and each retry in between. Called on the effect's worker thread: quick and non-blocking.
 */
public interface ExecutorObserver {

  /** Observes nothing. */
  ExecutorObserver NONE = new ExecutorObserver() {};

  /** An effect of {@code tool} starts (its first connector call). */
  default void started(String tool) {}

  /** The connector is called again for the same effect, after a backoff. */
  default void retried(String tool) {}

  /**
   * The effect of {@code tool} ended: {@code outcome} is {@code succeeded}, {@code failed}, {@code
   * retryable} or {@code ambiguous}; {@code took} runs from its start, retries included.
   */
  default void finished(String tool, String outcome, Duration took) {}
}
