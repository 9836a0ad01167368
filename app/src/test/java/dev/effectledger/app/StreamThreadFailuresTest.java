package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.testkit.FakeClock;
import java.time.Duration;
import java.time.Instant;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.junit.jupiter.api.Test;

class StreamThreadFailuresTest {

  private final FakeClock clock = new FakeClock(Instant.parse("2026-01-01T00:00:00Z"));

  @Test
  void shouldReplaceThreadsUntilTheyDieTooOftenThenShutTheClientDown() {
    StreamThreadFailures policy = new StreamThreadFailures(3, Duration.ofMinutes(5), clock);
    RuntimeException bug = new IllegalStateException("bug");

    for (int i = 0; i < 3; i++) {
      assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.REPLACE_THREAD);
      clock.advance(Duration.ofSeconds(10));
    }
    assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.SHUTDOWN_CLIENT);
  }

  @Test
  void shouldForgetDeathsOlderThanTheWindow() {
    StreamThreadFailures policy = new StreamThreadFailures(2, Duration.ofMinutes(5), clock);
    RuntimeException bug = new IllegalStateException("bug");

    policy.handle(bug);
    policy.handle(bug);
    clock.advance(Duration.ofMinutes(6));

    assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.REPLACE_THREAD);
  }
}
