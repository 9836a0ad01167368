package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.app.StoreLags.Reading;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class StoreLagsTest {

  @Test
  void shouldSumEachStoresLagsByTheRoleOfThePartitionsTask() {
    Reading reading =
        StoreLags.split(
            Map.of(
                "ledger", Map.of(0, 5L, 1, 700L, 2, 0L, 3, 40L),
                "ledger-policy", Map.of(1, 3L, 3, 1L)),
            Set.of(1, 3));

    assertThat(reading).isEqualTo(new Reading(5, 744));
  }

  @Test
  void shouldCountAnUnknownEndAsNoLag() {
    // Kafka Streams reports -1 for a partition whose end it could not read
    assertThat(StoreLags.split(Map.of("ledger", Map.of(0, -1L, 1, 9L)), Set.of(0, 1)))
        .isEqualTo(new Reading(0, 9));
  }

  @Test
  void shouldReadAgainOnlyOnceTheLastReadingIsASecondOld() {
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-11-29T06:00:00Z"));
    Clock clock =
        new Clock() {
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
            return this;
          }
        };
    Deque<Object> readings =
        new ArrayDeque<>(
            List.of(
                new Reading(1, 100), new IllegalStateException("REBALANCING"), new Reading(0, 0)));
    StoreLags lags =
        new StoreLags(
            () -> {
              Object next = readings.pop();
              if (next instanceof RuntimeException e) {
                throw e;
              }
              return (Reading) next;
            },
            clock);

    assertThat(lags.current()).isEqualTo(new Reading(1, 100));
    now.set(now.get().plusMillis(900));
    assertThat(lags.current()).as("fresh for a second").isEqualTo(new Reading(1, 100));
    now.set(now.get().plusMillis(200));
    assertThat(lags.current())
        .as("Streams refused: the last reading stands")
        .isEqualTo(new Reading(1, 100));
    now.set(now.get().plusMillis(1100));
    assertThat(lags.current()).isEqualTo(new Reading(0, 0));
  }

  @Test
  void shouldExposeBothRolesAsGauges() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    StoreLags lags = new StoreLags(() -> new Reading(7, 300), Clock.systemUTC());
    lags.register(registry);

    assertThat(
            registry.get("effectledger.store.lag.records").tag("role", "standby").gauge().value())
        .isEqualTo(300.0);
    assertThat(registry.get("effectledger.store.lag.records").tag("role", "active").gauge().value())
        .isEqualTo(7.0);
  }
}
