package dev.effectledger.bench;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Dispatch;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;

/**
 * {@code bench/run sustain}: the ledger under a constant load for many dedup windows, to show that
 * its state stops growing once the first window has passed. Expiry must keep pace with completions
 * whatever the rate: a purge capped per punctuation (the old 1,000 entries per 60 s per task) falls
 * behind above a fixed rate and the store grows without bound while dedup stays correct.
 *
 * <p>First a calibration: pre-produced intents and their outcomes, read as fast as the ledger can,
 * give its capacity in completed keys per second. Then a fresh ledger gets {@code load} of that
 * capacity for {@code minutes}: intents at a constant rate, each answered with a SUCCEEDED outcome
 * as soon as its dispatch is committed, by a consumer of the dispatch topic standing in for the
 * executors (no connector runs: the bench measures the ledger's state, not a downstream). Once a
 * minute it records the entries in the ledger store (read whole, and dispatched minus expired from
 * the ledger's decisions), RocksDB's memtables and the stores' bytes on disk, the expiries, and the
 * lag of the ledger's group. The run holds when, after the first window and purge, the entries in
 * the store stay within 10%, the peak of memtables and disk in the later half of those minutes is
 * at most 25% above the earlier half's, and the lag stays under five seconds of load.
 */
final class SustainBench {

  private static final String REGISTRY = "mock://sustain";
  private static final String TOOL = "charge_card";

  /**
   * The ledger's decisions, counted. Under exactly_once_v2 an aborted transaction's decisions are
   * heard again.
   */
  static final class Counts implements LedgerObserver {
    final AtomicLong dispatched = new AtomicLong();
    final AtomicLong completed = new AtomicLong();
    final AtomicLong expired = new AtomicLong();
    final AtomicLong late = new AtomicLong();
    final AtomicLong firstDispatchNanos = new AtomicLong();

    @Override
    public void decided(String tool, AuditType type) {
      switch (type) {
        case DISPATCHED -> {
          firstDispatchNanos.compareAndSet(0, System.nanoTime());
          dispatched.incrementAndGet();
        }
        case COMPLETED -> completed.incrementAndGet();
        case EXPIRED -> expired.incrementAndGet();
        case LATE_OUTCOME -> late.incrementAndGet();
        default -> {}
      }
    }
  }

  private SustainBench() {}

  static int run(
      int minutes, Duration window, double load, int fixedRate, int calibrationKeys, String command)
      throws Exception {
    ToolPolicies policies =
        ToolPolicies.of(
            ToolPolicy.builder(TOOL, ToolClass.WRITE_IDEMPOTENT)
                .window(window)
                .pendingTimeout(Duration.ofMinutes(30))
                .lane("bench")
                .build());
    Path work = Files.createTempDirectory("sustain-bench");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
        Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      Bench.createTopics(kafka);
      double capacity =
          fixedRate > 0
              ? 0
              : calibrate(kafka, admin, policies, calibrationKeys, work.resolve("calibration"));
      int rate = fixedRate > 0 ? fixedRate : (int) Math.max(1, capacity * load);
      Bench.say(
          String.format("sustain: %,d keys/s for %d minutes, window %s", rate, minutes, window));

      Counts counts = new Counts();
      LedgerConfig config = LedgerConfig.of(policies, REGISTRY).withObserver(counts);
      Path stateDir = Files.createDirectories(work.resolve("sustain"));
      List<SustainReport.Minute> samples = new ArrayList<>();
      // The ledger starts where the calibration's records end: committed offsets set before it
      // joins,
      // not auto.offset.reset=latest, which positions each partition only when first fetched and
      // would skip the first intents of some partitions and not their outcomes.
      Map<TopicPartition, OffsetAndMetadata> from = new HashMap<>();
      LedgerProbes.ends(admin, Topics.INTENTS, Topics.OUTCOMES)
          .forEach((tp, end) -> from.put(tp, new OffsetAndMetadata(end)));
      admin.alterConsumerGroupOffsets("sustain", from).all().get();
      try (KafkaStreams streams =
          new KafkaStreams(
              LedgerTopology.build(config), LedgerProbes.props(kafka, "sustain", stateDir))) {
        streams.start();
        LedgerProbes.awaitRunning(streams);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong produced = new AtomicLong();
        Map<TopicPartition, Long> dispatchEnds = LedgerProbes.ends(admin, Topics.dispatch("bench"));
        Thread executor =
            new Thread(
                () -> answer(kafka.bootstrapServers(), dispatchEnds, stop), "sustain-executor");
        executor.start();
        Thread generator =
            new Thread(
                () -> generate(kafka.bootstrapServers(), rate, stop, produced), "sustain-load");
        generator.start();
        try {
          long start = System.nanoTime();
          for (int m = 1; m <= minutes; m++) {
            long until = start + TimeUnit.MINUTES.toNanos(m);
            while (System.nanoTime() < until && generator.isAlive() && executor.isAlive()) {
              TimeUnit.MILLISECONDS.sleep(
                  Math.min(1000, Math.max(1, (until - System.nanoTime()) / 1_000_000)));
            }
            if (!generator.isAlive() || !executor.isAlive()) {
              throw new IllegalStateException(
                  "the load generator or the stand-in executor stopped early; see its error above");
            }
            SustainReport.Minute sample =
                new SustainReport.Minute(
                    m,
                    produced.get(),
                    counts.completed.get(),
                    counts.expired.get(),
                    counts.dispatched.get() - counts.expired.get(),
                    LedgerProbes.stored(streams),
                    LedgerProbes.rocksDb(streams, "cur-size-all-mem-tables"),
                    LedgerProbes.size(stateDir, LedgerStore.NAME)
                        + LedgerProbes.size(stateDir, LedgerStore.DEADLINES),
                    LedgerProbes.lag(admin, "sustain"));
            samples.add(sample);
            Bench.say(
                String.format(
                        "sustain: minute %d: %,d keys produced, %,d completed, %,d expired, %,d live (%,d in the"
                            + " store), %.1f MiB in memtables, %.1f MiB on disk, lag %,d",
                        m,
                        sample.produced(),
                        sample.completed(),
                        sample.expired(),
                        sample.live(),
                        sample.stored(),
                        sample.memtableBytes() / 1048576.0,
                        sample.diskBytes() / 1048576.0,
                        sample.lag())
                    + ", late outcomes "
                    + counts.late.get());
          }
        } finally {
          stop.set(true);
          generator.join(TimeUnit.SECONDS.toMillis(30));
          executor.join(TimeUnit.SECONDS.toMillis(30));
        }
      }
      return SustainReport.write(samples, rate, capacity, load, window, counts.late.get(), command)
          ? 0
          : 1;
    } finally {
      Utils.delete(work.toFile());
    }
  }

  /**
   * The ledger's capacity in completed keys per second: {@code keys} intents, then their outcomes,
   * read from the start.
   */
  private static double calibrate(
      EmbeddedKafkaCluster kafka, Admin admin, ToolPolicies policies, int keys, Path dir)
      throws Exception {
    Bench.say(String.format("sustain: calibrating on %,d keys", keys));
    long base = System.currentTimeMillis() - TimeUnit.MINUTES.toMillis(10);
    try (Producer producer = new Producer(kafka.bootstrapServers())) {
      // Every outcome's time is after every intent's: the ledger reads a task's partitions in time
      // order.
      for (int i = 0; i < keys; i++) {
        producer.intent("v1:calibration-" + i, i, base + i);
      }
      for (int i = 0; i < keys; i++) {
        producer.outcome("v1:calibration-" + i, 1, base + keys + i);
      }
    }
    Map<TopicPartition, Long> ends = LedgerProbes.ends(admin, Topics.INTENTS, Topics.OUTCOMES);
    Counts counts = new Counts();
    try (KafkaStreams streams =
        new KafkaStreams(
            LedgerTopology.build(LedgerConfig.of(policies, REGISTRY).withObserver(counts)),
            LedgerProbes.props(kafka, "sustain-calibration", Files.createDirectories(dir)))) {
      streams.start();
      while (!Bench.caughtUp(admin, "sustain-calibration", ends)) {
        TimeUnit.MILLISECONDS.sleep(100); // polling the committed offsets
      }
      // From the first decision: the group's start-up is not the ledger's work.
      double seconds = (System.nanoTime() - counts.firstDispatchNanos.get()) / 1e9;
      double capacity = counts.completed.get() / seconds;
      Bench.say(
          String.format(
              "sustain: %,d keys completed in %.1f s: %,.0f keys/s",
              counts.completed.get(), seconds, capacity));
      return capacity;
    }
  }

  /** Intents at {@code rate} keys per second until {@code stop}. */
  private static void generate(
      String bootstrap, int rate, AtomicBoolean stop, AtomicLong produced) {
    try (Producer producer = new Producer(bootstrap)) {
      long start = System.nanoTime();
      long sent = 0;
      while (!stop.get()) {
        long due = (System.nanoTime() - start) * rate / 1_000_000_000L;
        for (; sent < due; sent++) {
          producer.intent("v1:sustain-" + sent, sent, System.currentTimeMillis());
        }
        produced.set(sent);
        LockSupport.parkNanos(1_000_000); // one millisecond between rounds of sends
      }
    } catch (RuntimeException e) {
      Bench.say("sustain: the load generator failed: " + e);
      throw e;
    }
  }

  /**
   * Stands in for the executors: reads committed dispatches from {@code from} on and answers each
   * with a SUCCEEDED outcome for its attempt, until {@code stop}. An outcome so never precedes its
   * intent, as with real executors.
   */
  private static void answer(String bootstrap, Map<TopicPartition, Long> from, AtomicBoolean stop) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    RegistryAvroSerde<Dispatch> dispatches =
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), Dispatch.class);
    try (Producer producer = new Producer(bootstrap);
        KafkaConsumer<String, byte[]> consumer =
            new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      consumer.assign(from.keySet());
      from.forEach(consumer::seek);
      while (!stop.get()) {
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(100))) {
          Dispatch dispatch = dispatches.deserialize(record.topic(), record.value());
          producer.outcome(
              dispatch.getIdempotencyKey(), dispatch.getAttempt(), System.currentTimeMillis());
        }
      }
    } catch (RuntimeException e) {
      Bench.say("sustain: the stand-in executor failed: " + e);
      throw e;
    }
  }

  /** Sends intents and SUCCEEDED outcomes as bytes, like the client and an executor do. */
  private static final class Producer implements AutoCloseable {
    private final KafkaProducer<String, byte[]> producer;
    private final RegistryAvroSerde<ToolIntent> intents;
    private final RegistryAvroSerde<Outcome> outcomes;

    Producer(String bootstrap) {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      var registry = SchemaRegistries.forUrl(REGISTRY);
      intents = new RegistryAvroSerde<>(registry, ToolIntent.class);
      outcomes = new RegistryAvroSerde<>(registry, Outcome.class);
      producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
    }

    void intent(String key, long i, long at) {
      String arguments = "{\"amount\":" + i + ",\"to\":\"cus_" + i + "\"}";
      producer.send(
          new ProducerRecord<>(
              Topics.INTENTS,
              null,
              at,
              key,
              intents.serialize(
                  Topics.INTENTS,
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("bench")
                      .setRunId("run-" + i)
                      .setStepId("step")
                      .setTool(TOOL)
                      .setArguments(arguments)
                      .setArgumentsHash(ArgumentsHash.of(arguments, List.of()))
                      .setRequestedAt(Instant.ofEpochMilli(at))
                      .build())));
    }

    void outcome(String key, int attempt, long at) {
      producer.send(
          new ProducerRecord<>(
              Topics.OUTCOMES,
              null,
              at,
              key,
              outcomes.serialize(
                  Topics.OUTCOMES,
                  Outcome.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("bench")
                      .setTool(TOOL)
                      .setAttempt(attempt)
                      .setStatus(OutcomeStatus.SUCCEEDED)
                      .setResultJson("{\"id\":\"ch_" + key + "\"}")
                      .setEffectId("ch_" + key)
                      .setCompletedAt(Instant.ofEpochMilli(at))
                      .build())));
    }

    @Override
    public void close() {
      producer.close();
    }
  }
}
