package dev.effectledger.app;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The processor's answer to a stream thread that died: replace it (a record that keeps failing is
 * dead-lettered after a few attempts by the ledger's processing handler), unless threads keep
 * dying. More than {@code max} deaths within {@code window} shut the client down, and the processor
 * exits with status 1 for its supervisor to restart it and someone to look: a thread that dies
 * whatever it reads is not helped by being replaced for ever.
 */
final class StreamThreadFailures implements StreamsUncaughtExceptionHandler {

  private static final Logger log = LoggerFactory.getLogger(StreamThreadFailures.class);

  private final int max;
  private final Duration window;
  private final Clock clock;
  private final Deque<Long> failures = new ArrayDeque<>();

  StreamThreadFailures(int max, Duration window, Clock clock) {
    this.max = max;
    this.window = window;
    this.clock = clock;
  }

  @Override
  public synchronized StreamThreadExceptionResponse handle(Throwable exception) {
    long now = clock.millis();
    failures.addLast(now);
    while (!failures.isEmpty() && failures.peekFirst() <= now - window.toMillis()) {
      failures.removeFirst();
    }
    if (failures.size() > max) {
      log.error(
          "Stream threads died {} times within {}; stopping the processor rather than replacing them again. The last"
              + " cause follows; restart the processor once it is understood.",
          failures.size(),
          window,
          exception);
      return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    }
    log.warn(
        "A stream thread died ({} of at most {} within {}); replacing it: {}",
        failures.size(),
        max,
        window,
        exception.toString());
    return StreamThreadExceptionResponse.REPLACE_THREAD;
  }
}
