package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.app.StoreLags.Reading;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class StoreLagsTest {

  @Test
  void shouldSumEachStoresLagsAndCountItsPartitionsByTheRoleOfTheirTask() {
    Reading reading =
        StoreLags.split(
            Map.of(
                "ledger", Map.of(0, 5L, 1, 700L, 2, 0L, 3, 40L),
                "ledger-policy", Map.of(1, 3L, 3, 1L)),
            Set.of(1, 3));

    assertThat(reading).isEqualTo(new Reading(5, 744, 2, 4));
  }

  @Test
  void shouldCountANegativeLagAsNone() {
    assertThat(StoreLags.split(Map.of("ledger", Map.of(0, -1L, 1, 9L)), Set.of(0, 1)))
        .isEqualTo(new Reading(0, 9, 0, 2));
  }

  @Test
  void shouldReadNotANumberWhileStreamsCannotTellNotTheLastReadingOrZero() {
    Deque<Object> readings =
        new ArrayDeque<>(
            List.of(
                new Reading(1, 100, 4, 4),
                new IllegalStateException("KafkaStreams is not running. State is ERROR."),
                new Reading(0, 2, 4, 4)));
    StoreLags lags =
        new StoreLags(
            () -> {
              Object next = readings.pop();
              if (next instanceof RuntimeException e) {
                throw e;
              }
              return (Reading) next;
            });
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    lags.register(registry);

    assertThat(standbyLag(registry)).as("before the first reading").isNaN();
    lags.refresh();
    assertThat(standbyLag(registry)).isEqualTo(100.0);
    lags.refresh();
    assertThat(standbyLag(registry)).as("Streams refused").isNaN();
    assertThat(registry.get("effectledger.store.partitions").tag("role", "standby").gauge().value())
        .isNaN();
    lags.refresh();
    assertThat(standbyLag(registry)).isEqualTo(2.0);
    assertThat(registry.get("effectledger.store.lag.records").tag("role", "active").gauge().value())
        .isEqualTo(0.0);
    assertThat(registry.get("effectledger.store.partitions").tag("role", "active").gauge().value())
        .isEqualTo(4.0);
  }

  @Test
  void shouldKeepReadingOnceNothingButTheRegistryHoldsIt() throws InterruptedException {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    register(registry);

    for (int i = 0; i < 3; i++) {
      System.gc(); // a weakly held gauge object would be gone: the gauge would read NaN
      Thread.sleep(50);
    }

    assertThat(standbyLag(registry)).isEqualTo(300.0);
  }

  /** Registers a reading's gauges and lets go of the instance. */
  private static void register(MeterRegistry registry) {
    StoreLags lags = new StoreLags(() -> new Reading(7, 300, 4, 4));
    lags.refresh();
    lags.register(registry);
  }

  private static double standbyLag(SimpleMeterRegistry registry) {
    return registry.get("effectledger.store.lag.records").tag("role", "standby").gauge().value();
  }
}
