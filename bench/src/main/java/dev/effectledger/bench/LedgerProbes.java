package dev.effectledger.bench;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerTopology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * What the state benchmarks read of a running ledger and its cluster: the client's settings, when
 * it has settled, the entries in its store, RocksDB's metrics, bytes on disk and in changelogs, end
 * offsets and a group's lag.
 */
final class LedgerProbes {

  private LedgerProbes() {}

  /**
   * A ledger client's properties: exactly_once_v2, 2 stream threads, commits every 100 ms, from the
   * earliest offset.
   */
  static Properties props(EmbeddedKafkaCluster kafka, String app, Path dir) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    return LedgerTopology.streamsProperties(props);
  }

  /**
   * Waits until every stream thread runs tasks and the client has stayed RUNNING for 5 s: the load
   * starts once the group has settled.
   */
  static void awaitRunning(KafkaStreams streams) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    long settledSince = 0;
    while (settledSince == 0 || System.nanoTime() - settledSince < TimeUnit.SECONDS.toNanos(5)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "the ledger did not settle within 2 minutes; it is " + streams.state());
      }
      boolean settled =
          streams.state() == KafkaStreams.State.RUNNING
              && streams.metadataForLocalThreads().stream()
                  .allMatch(t -> !t.activeTasks().isEmpty());
      settledSince = settled ? (settledSince == 0 ? System.nanoTime() : settledSince) : 0;
      TimeUnit.MILLISECONDS.sleep(100); // polling the state
    }
  }

  /**
   * Entries in the ledger store, counted by reading it whole (interactive queries): what expiry
   * left, independent of the decisions counted. RocksDB's own key estimate counts deletes not yet
   * compacted away, so it cannot tell a bounded store from a growing one.
   */
  static long stored(KafkaStreams streams) {
    ReadOnlyKeyValueStore<Object, Object> store =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.NAME, QueryableStoreTypes.keyValueStore()));
    long entries = 0;
    try (KeyValueIterator<Object, Object> all = store.all()) {
      while (all.hasNext()) {
        all.next();
        entries++;
      }
    }
    return entries;
  }

  /**
   * The sum of a RocksDB property metric over both ledger stores of every task; -1 when Kafka
   * Streams does not report it.
   */
  static long rocksDb(KafkaStreams streams, String name) {
    long sum = 0;
    boolean seen = false;
    for (Metric metric : streams.metrics().values()) {
      if (metric.metricName().name().equals(name)) {
        seen = true;
        sum += ((Number) metric.metricValue()).longValue();
      }
    }
    return seen ? sum : -1;
  }

  /** Records of tool-intents and tool-outcomes the group has not committed past. */
  static long lag(Admin admin, String group) throws Exception {
    Map<TopicPartition, Long> ends = ends(admin, Topics.INTENTS, Topics.OUTCOMES);
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    long lag = 0;
    for (var end : ends.entrySet()) {
      OffsetAndMetadata at = committed.get(end.getKey());
      lag += end.getValue() - (at == null ? 0 : at.offset());
    }
    return lag;
  }

  static Map<TopicPartition, Long> ends(Admin admin, String... topics) throws Exception {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (String topic : topics) {
      for (int p = 0; p < Bench.PARTITIONS; p++) {
        latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
      }
    }
    Map<TopicPartition, Long> ends = new HashMap<>();
    admin.listOffsets(latest).all().get().forEach((tp, info) -> ends.put(tp, info.offset()));
    return ends;
  }

  /** Bytes of every RocksDB directory of {@code store} under the state directory. */
  static long size(Path stateDir, String store) throws IOException {
    List<Path> stores;
    try (Stream<Path> paths = Files.walk(stateDir)) {
      stores =
          paths
              .filter(p -> Files.isDirectory(p) && p.getFileName().toString().equals(store))
              .toList();
    }
    long bytes = 0;
    for (Path dir : stores) {
      try (Stream<Path> files = Files.walk(dir)) {
        bytes += files.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
      }
    }
    return bytes;
  }

  static long changelogBytes(Admin admin, String topic) throws Exception {
    List<Integer> brokers = new ArrayList<>();
    admin.describeCluster().nodes().get().forEach(n -> brokers.add(n.id()));
    long bytes = 0;
    for (var dirs : admin.describeLogDirs(brokers).allDescriptions().get().values()) {
      for (var dir : dirs.values()) {
        for (var e : dir.replicaInfos().entrySet()) {
          if (e.getKey().topic().equals(topic)) {
            bytes += e.getValue().size();
          }
        }
      }
    }
    return bytes;
  }
}
