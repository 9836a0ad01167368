package dev.effectledger.app;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * How far this processor's local stores are behind their changelogs: {@code
 * effectledger_store_lag_records{role="active"|"standby"}}, the sum of the offset lags of its
 * stores' partitions by the role of their task here. A standby near 0 is warm: a takeover of its
 * tasks starts without restoring. Under exactly_once_v2 a caught-up partition still counts one
 * offset, its last transaction's commit marker, so a warm processor reads about one per partition.
 * The sum, not a series per partition, keeps the number of series fixed; which partition lags is in
 * Kafka Streams' own restore metrics.
 *
 * <p>{@link KafkaStreams#allLocalStorePartitionLags()} asks the brokers for the changelogs' end
 * offsets: a scrape reads figures at most one second old instead of asking again. While the client
 * is not running (rebalancing, starting) the last figures stand.
 */
final class StoreLags {

  static final Duration FRESH_FOR = Duration.ofSeconds(1);

  /** One reading: the summed offset lags of active and standby store partitions. */
  record Reading(long active, long standby) {
    static final Reading NONE = new Reading(0, 0);
  }

  private final Supplier<Reading> source;
  private final Clock clock;
  private Reading last = Reading.NONE;
  private Instant readAt = Instant.MIN;

  StoreLags(Supplier<Reading> source, Clock clock) {
    this.source = source;
    this.clock = clock;
  }

  /** Registers the two gauges for {@code streams}. */
  static StoreLags bind(KafkaStreams streams, MeterRegistry registry) {
    StoreLags lags = new StoreLags(() -> read(streams), Clock.systemUTC());
    lags.register(registry);
    return lags;
  }

  void register(MeterRegistry registry) {
    Gauge.builder("effectledger.store.lag.records", this, l -> l.current().active())
        .description("Offset lag of this processor's active store partitions, summed")
        .tag("role", "active")
        .register(registry);
    Gauge.builder("effectledger.store.lag.records", this, l -> l.current().standby())
        .description(
            "Offset lag of this processor's standby store partitions, summed: near 0 when warm")
        .tag("role", "standby")
        .register(registry);
  }

  /** The last reading, read again when older than {@link #FRESH_FOR}. */
  synchronized Reading current() {
    Instant now = clock.instant();
    if (readAt.plus(FRESH_FOR).isBefore(now)) {
      try {
        last = source.get();
      } catch (RuntimeException notRunning) {
        // Kafka Streams refuses while it is not RUNNING or REBALANCING: keep the last reading
      }
      readAt = now;
    }
    return last;
  }

  static Reading read(KafkaStreams streams) {
    Set<Integer> standby = new HashSet<>();
    for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
      for (TaskMetadata task : thread.standbyTasks()) {
        standby.add(task.taskId().partition());
      }
    }
    Map<String, Map<Integer, Long>> lags = new HashMap<>();
    streams
        .allLocalStorePartitionLags()
        .forEach(
            (store, partitions) -> {
              Map<Integer, Long> offsets = new HashMap<>();
              partitions.forEach((partition, lag) -> offsets.put(partition, lag.offsetLag()));
              lags.put(store, offsets);
            });
    return split(lags, standby);
  }

  /**
   * Sums {@code lags} (offset lags by store, then partition) into active and standby by {@code
   * standbyPartitions}, the partitions of the tasks this processor holds as standbys. The ledger's
   * stores are all in one sub-topology, so a partition number names one task.
   */
  static Reading split(Map<String, Map<Integer, Long>> lags, Set<Integer> standbyPartitions) {
    long active = 0;
    long standby = 0;
    for (Map<Integer, Long> store : lags.values()) {
      for (Map.Entry<Integer, Long> partition : store.entrySet()) {
        long lag = Math.max(0, partition.getValue());
        if (standbyPartitions.contains(partition.getKey())) {
          standby += lag;
        } else {
          active += lag;
        }
      }
    }
    return new Reading(active, standby);
  }
}
