package dev.effectledger.bench;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerObserver;
import dev.effectledger.topology.LedgerTopology;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * {@code bench/run state}: bytes per ledger entry on disk and in the changelog, store size at 10
 * million keys (24 h window), restore time from the changelog, and the purge cost per expired entry
 * in a small store and in a large one. Entries are completed by outcomes produced directly (no
 * executor), all with record times two days ago, so that ticks on every partition can move stream
 * time past the window and drive the expiry purge.
 */
final class StateBench {

  private static final String REGISTRY = "mock://state";
  private static final int PARTITIONS = 8;
  private static final long T0 = Instant.now().minus(Duration.ofDays(2)).toEpochMilli();

  /** One store's figures. */
  record Figures(
      long keys,
      long expired,
      long diskBytes,
      long deadlineDiskBytes,
      long changelogBytes,
      double restoreSeconds,
      long restoredRecords,
      double purgeMicrosPerEntry,
      double purgeCpuMicrosPerEntry,
      double compactionSettleSeconds) {}

  private StateBench() {}

  static int run(long large, long small, String command) throws Exception {
    Figures smallStore = measure(small, small);
    Figures largeStore = measure(large, small);
    StateReport.write(smallStore, largeStore, command);
    return 0;
  }

  /** A store of {@code keys} completed entries of which {@code expiring} fall out of the window. */
  private static Figures measure(long keys, long expiring) throws Exception {
    Bench.say(String.format("state: %,d keys, %,d of them to expire", keys, expiring));
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka);
      String app = "state-" + keys;
      AtomicLong expired = new AtomicLong();
      AtomicLong firstExpiry = new AtomicLong();
      AtomicLong lastExpiry = new AtomicLong();
      // Per stream thread, its CPU time at its first and at its latest expiry: the purge's own
      // work,
      // RocksDB reads included (JNI on the same thread), background compactions and the broker not.
      Map<Long, long[]> streamThreadCpu = new ConcurrentHashMap<>();
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      LedgerObserver observer =
          new LedgerObserver() {
            @Override
            public void decided(String tool, AuditType type) {
              if (type == AuditType.EXPIRED) {
                long now = System.nanoTime();
                long cpu = threads.getCurrentThreadCpuTime();
                streamThreadCpu
                        .computeIfAbsent(
                            Thread.currentThread().getId(), id -> new long[] {cpu, cpu})[1] =
                    cpu;
                firstExpiry.compareAndSet(0, now);
                lastExpiry.set(now);
                expired.incrementAndGet();
              }
            }
          };
      LedgerConfig config = LedgerConfig.of(Bench.POLICIES, REGISTRY).withObserver(observer);
      Path work = Files.createTempDirectory("state-bench");
      Path loadDir = Files.createDirectories(work.resolve("load"));
      try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
        long loadStart = System.nanoTime();
        KafkaStreams loading =
            new KafkaStreams(LedgerTopology.build(config), LedgerProbes.props(kafka, app, loadDir));
        loading.start();
        // Intents first, outcomes once every intent is in the ledger: an outcome read before its
        // intent would find no entry and be dropped as late.
        for (String topic : List.of(Topics.INTENTS, Topics.OUTCOMES)) {
          produce(kafka.bootstrapServers(), topic, keys, expiring);
          Map<TopicPartition, Long> ends = LedgerProbes.ends(admin, topic);
          long lastReport = System.nanoTime();
          while (!Bench.caughtUp(admin, app, ends)) {
            TimeUnit.MILLISECONDS.sleep(500); // polling the committed offsets
            if (System.nanoTime() - lastReport > TimeUnit.SECONDS.toNanos(30)) {
              Bench.say(
                  String.format(
                      "state: loading %s, %d s",
                      topic, TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - loadStart)));
              lastReport = System.nanoTime();
            }
          }
        }
        Bench.say(String.format("state: loaded in %.0f s", (System.nanoTime() - loadStart) / 1e9));
        loading.close(
            new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofSeconds(60)));
        long disk = LedgerProbes.size(loadDir, LedgerStore.NAME);
        long deadlineDisk = LedgerProbes.size(loadDir, LedgerStore.DEADLINES);
        long changelog =
            LedgerProbes.changelogBytes(admin, app + "-" + LedgerStore.NAME + "-changelog");

        // Restore: a new instance with an empty state directory reads the changelogs back.
        Path restoreDir = Files.createDirectories(work.resolve("restore"));
        AtomicLong restored = new AtomicLong();
        AtomicLong restoreFirst = new AtomicLong();
        AtomicLong restoreLast = new AtomicLong();
        long restoreStart = System.nanoTime();
        try (KafkaStreams streams =
            new KafkaStreams(
                LedgerTopology.build(config), LedgerProbes.props(kafka, app, restoreDir))) {
          streams.setGlobalStateRestoreListener(
              new StateRestoreListener() {
                @Override
                public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                  restoreFirst.compareAndSet(0, System.nanoTime());
                }

                @Override
                public void onBatchRestored(
                    TopicPartition tp, String store, long batchEnd, long count) {
                  restored.addAndGet(count);
                }

                @Override
                public void onRestoreEnd(TopicPartition tp, String store, long total) {
                  restoreLast.set(System.nanoTime());
                }
              });
          streams.start();
          while (streams.state() != KafkaStreams.State.RUNNING) {
            TimeUnit.MILLISECONDS.sleep(100); // polling the restore's end
          }
          double untilRunning = (System.nanoTime() - restoreStart) / 1e9;
          double restoreSeconds = (restoreLast.get() - restoreFirst.get()) / 1e9;
          Bench.say(
              String.format(
                  "state: restored %,d changelog records in %.1f s (%.1f s from start to RUNNING)",
                  restored.get(), restoreSeconds, untilRunning));

          // The restore leaves RocksDB compacting what it wrote; the purge is timed once that is
          // done.
          double settleSeconds = awaitCompactions(streams);

          // Purge: ticks on every partition move stream time past the window, one punctuation each.
          long ticksPerPartition = expiring / PARTITIONS / 1000 + 20;
          tick(kafka.bootstrapServers(), ticksPerPartition);
          long waitStart = System.nanoTime();
          long seen = -1;
          while (expired.get() < expiring
              && System.nanoTime() - waitStart < TimeUnit.MINUTES.toNanos(10)) {
            TimeUnit.SECONDS.sleep(10); // polling the expiry count
            if (expired.get() == seen && seen > 0) {
              Bench.say(String.format("state: expiry stopped at %,d of %,d", seen, expiring));
              break; // no progress in 10 s: the ticks are used up
            }
            seen = expired.get();
          }
          double purgeMicros =
              (lastExpiry.get() - firstExpiry.get()) / 1e3 / Math.max(1, expired.get());
          double cpuMicros =
              streamThreadCpu.values().stream().mapToLong(c -> c[1] - c[0]).sum()
                  / 1e3
                  / Math.max(1, expired.get());
          Bench.say(
              String.format(
                  "state: %,d entries expired, %.1f µs each (%.1f µs of stream-thread CPU)",
                  expired.get(), purgeMicros, cpuMicros));
          return new Figures(
              keys,
              expired.get(),
              disk,
              deadlineDisk,
              changelog,
              restoreSeconds,
              restored.get(),
              purgeMicros,
              cpuMicros,
              settleSeconds);
        }
      } finally {
        Utils.delete(work.toFile()); // both state directories: about 5 GB at 10 million keys
      }
    }
  }

  /**
   * Waits (at most 10 minutes) until no ledger store reports a pending or running compaction (Kafka
   * Streams' RocksDB property metrics), and returns how long that took; negative when it gave up
   * waiting.
   */
  private static double awaitCompactions(KafkaStreams streams) throws InterruptedException {
    long start = System.nanoTime();
    int quiet = 0;
    while (quiet < 3 && System.nanoTime() - start < TimeUnit.MINUTES.toNanos(10)) {
      double busy = 0;
      int seen = 0;
      for (Metric metric : streams.metrics().values()) {
        String name = metric.metricName().name();
        if (name.equals("compaction-pending") || name.equals("num-running-compactions")) {
          seen++;
          busy += ((Number) metric.metricValue()).doubleValue();
        }
      }
      if (seen == 0) {
        Bench.say("state: no RocksDB compaction metrics; timing the purge at once");
        return 0;
      }
      quiet = busy == 0 ? quiet + 1 : 0;
      TimeUnit.SECONDS.sleep(1); // polling the compaction metrics
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    Bench.say(
        String.format(
            quiet >= 3
                ? "state: RocksDB compactions settled after %.0f s"
                : "state: RocksDB still compacting after %.0f s; timing the purge anyway",
            seconds));
    return quiet >= 3 ? seconds : -seconds;
  }

  /**
   * Intents for {@code keys} keys, or their SUCCEEDED outcomes; the first {@code expiring} complete
   * 12 h earlier than the rest.
   */
  private static void produce(String bootstrap, String topic, long keys, long expiring) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    var registry = SchemaRegistries.forUrl(REGISTRY);
    RegistryAvroSerde<ToolIntent> intents = new RegistryAvroSerde<>(registry, ToolIntent.class);
    RegistryAvroSerde<Outcome> outcomes = new RegistryAvroSerde<>(registry, Outcome.class);
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      {
        for (long i = 0; i < keys; i++) {
          long at = i < expiring ? T0 : T0 + TimeUnit.HOURS.toMillis(12);
          String key = "v1:state-" + i;
          byte[] value =
              topic.equals(Topics.INTENTS)
                  ? intents.serialize(
                      topic,
                      ToolIntent.newBuilder()
                          .setIdempotencyKey(key)
                          .setTenant("bench")
                          .setRunId("run-" + i)
                          .setStepId("step")
                          .setTool("charge_card")
                          .setArguments("{\"amount\":" + i + ",\"to\":\"cus_" + i + "\"}")
                          .setArgumentsHash(
                              ArgumentsHash.of(
                                  "{\"amount\":" + i + ",\"to\":\"cus_" + i + "\"}", List.of()))
                          .setRequestedAt(Instant.ofEpochMilli(at))
                          .build())
                  : outcomes.serialize(
                      topic,
                      Outcome.newBuilder()
                          .setIdempotencyKey(key)
                          .setTenant("bench")
                          .setTool("charge_card")
                          .setAttempt(1)
                          .setStatus(OutcomeStatus.SUCCEEDED)
                          .setResultJson("{\"id\":\"ch_" + i + "\"}")
                          .setEffectId("ch_" + i)
                          .setCompletedAt(Instant.ofEpochMilli(at + 1000))
                          .build());
          producer.send(
              new ProducerRecord<>(
                  topic, null, topic.equals(Topics.INTENTS) ? at : at + 1000, key, value));
          if (i > 0 && i % 2_000_000 == 0) {
            Bench.say(String.format("state: produced %,d %s", i, topic));
          }
        }
      }
    }
  }

  private static void tick(String bootstrap, long perPartition) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    RegistryAvroSerde<ToolIntent> intents =
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolIntent.class);
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      for (long j = 1; j <= perPartition; j++) {
        long at = T0 + TimeUnit.HOURS.toMillis(25) + j * 60_000;
        for (int p = 0; p < PARTITIONS; p++) {
          String key = "v1:tick-" + p;
          byte[] value =
              intents.serialize(
                  Topics.INTENTS,
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("bench")
                      .setRunId("tick")
                      .setStepId("tick")
                      .setTool("charge_card")
                      .setArguments("{}")
                      .setArgumentsHash(ArgumentsHash.of("{}", List.of()))
                      .setRequestedAt(Instant.ofEpochMilli(at))
                      .build());
          producer.send(new ProducerRecord<>(Topics.INTENTS, p, at, key, value));
        }
      }
    }
  }
}
