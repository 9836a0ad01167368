package dev.effectledger.app;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * How far this processor's local stores are behind their changelogs: {@code
 * effectledger_store_lag_records{role="active"|"standby"}}, the sum of the offset lags of its
 * stores' partitions by the role of their task here, and {@code
 * effectledger_store_partitions{role}}, how many store partitions it holds in each role. A standby
 * near 0 is warm: a takeover of its tasks starts without restoring. Under exactly_once_v2 a
 * caught-up partition still counts one offset, its last transaction's commit marker, so a warm
 * processor reads about one per partition. The sum, not a series per partition, keeps the number of
 * series fixed; which partition lags is in Kafka Streams' own restore metrics.
 *
 * <p>{@link KafkaStreams#allLocalStorePartitionLags()} asks the brokers for the changelogs' end
 * offsets, which can block while they are unreachable: a thread of its own reads it once a second
 * and a scrape returns the last reading, never waiting on Kafka. While Kafka Streams cannot tell
 * (starting, shut down, in error, or the brokers out of reach) every series reads NaN, never a
 * stale or a made-up 0. A processor between assignments holds no partitions: 0 partitions, lag 0.
 */
final class StoreLags implements AutoCloseable {

  static final Duration EVERY = Duration.ofSeconds(1);

  /** One reading: the summed offset lags and the partition counts, by role. */
  record Reading(long active, long standby, int activePartitions, int standbyPartitions) {}

  private final Supplier<Reading> source;
  private final ScheduledExecutorService refresher;
  private volatile Reading last; // null: unknown

  /** Without a refresher: {@link #refresh()} is called by the caller (tests). */
  StoreLags(Supplier<Reading> source) {
    this(source, null);
  }

  private StoreLags(Supplier<Reading> source, ScheduledExecutorService refresher) {
    this.source = source;
    this.refresher = refresher;
  }

  /** Registers the gauges for {@code streams} and starts reading them once a second. */
  static StoreLags bind(KafkaStreams streams, MeterRegistry registry) {
    ScheduledExecutorService refresher =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "store-lags");
              t.setDaemon(true);
              return t;
            });
    StoreLags lags = new StoreLags(() -> read(streams), refresher);
    lags.register(registry);
    refresher.scheduleWithFixedDelay(lags::refresh, 0, EVERY.toMillis(), TimeUnit.MILLISECONDS);
    return lags;
  }

  void register(MeterRegistry registry) {
    gauge(
        registry,
        "effectledger.store.lag.records",
        "active",
        Reading::active,
        "Offset lag of this processor's active store partitions, summed");
    gauge(
        registry,
        "effectledger.store.lag.records",
        "standby",
        Reading::standby,
        "Offset lag of this processor's standby store partitions, summed: near 0 when warm");
    gauge(
        registry,
        "effectledger.store.partitions",
        "active",
        Reading::activePartitions,
        "Store partitions this processor holds for its active tasks");
    gauge(
        registry,
        "effectledger.store.partitions",
        "standby",
        Reading::standbyPartitions,
        "Store partitions this processor holds as standbys");
  }

  private void gauge(
      MeterRegistry registry,
      String name,
      String role,
      ToDoubleFunction<Reading> figure,
      String description) {
    Gauge.builder(
            name,
            this,
            l -> {
              Reading r = l.last;
              return r == null ? Double.NaN : figure.applyAsDouble(r);
            })
        .description(description)
        .tag("role", role)
        // the registry holds gauges' objects weakly; nothing else holds this one
        .strongReference(true)
        .register(registry);
  }

  /** Reads the lags now; unknown (NaN) when Kafka Streams cannot tell. */
  void refresh() {
    try {
      last = source.get();
    } catch (RuntimeException cannotTell) {
      // not RUNNING or REBALANCING, or the brokers did not answer: unknown, not 0
      last = null;
    }
  }

  /** The last reading; null while unknown. */
  Reading current() {
    return last;
  }

  @Override
  public void close() {
    if (refresher != null) {
      refresher.shutdownNow();
    }
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
   * standbyPartitions}, the partitions of the tasks this processor holds as standbys, and counts
   * the store partitions of each. The ledger's stores are all in one sub-topology, so a partition
   * number names one task.
   */
  static Reading split(Map<String, Map<Integer, Long>> lags, Set<Integer> standbyPartitions) {
    long active = 0;
    long standby = 0;
    int activeCount = 0;
    int standbyCount = 0;
    for (Map<Integer, Long> store : lags.values()) {
      for (Map.Entry<Integer, Long> partition : store.entrySet()) {
        long lag = Math.max(0, partition.getValue());
        if (standbyPartitions.contains(partition.getKey())) {
          standby += lag;
          standbyCount++;
        } else {
          active += lag;
          activeCount++;
        }
      }
    }
    return new Reading(active, standby, activeCount, standbyCount);
  }
}
