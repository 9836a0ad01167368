package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.junit.jupiter.api.Test;

class StreamThreadFailuresTest {

  private Instant now = Instant.parse("2026-01-01T00:00:00Z");
  private final Clock clock = new Clock() {
    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  };

  @Test
  void shouldReplaceThreadsUntilTheyDieTooOftenThenShutTheClientDown() {
    StreamThreadFailures policy = new StreamThreadFailures(3, Duration.ofMinutes(5), clock);
    RuntimeException bug = new IllegalStateException("bug");

    for (int i = 0; i < 3; i++) {
      assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.REPLACE_THREAD);
      now = now.plusSeconds(10);
    }
    assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.SHUTDOWN_CLIENT);
  }

  @Test
  void shouldForgetDeathsOlderThanTheWindow() {
    StreamThreadFailures policy = new StreamThreadFailures(2, Duration.ofMinutes(5), clock);
    RuntimeException bug = new IllegalStateException("bug");

    policy.handle(bug);
    policy.handle(bug);
    now = now.plus(Duration.ofMinutes(6));

    assertThat(policy.handle(bug)).isEqualTo(StreamThreadExceptionResponse.REPLACE_THREAD);
  }
}
