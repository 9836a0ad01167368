package dev.effectledger.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * {@code bench/run latency}: intent to reply through the ledger and a zero-latency executor (the
 * {@code kafka} connector), against the baseline dedup topology's single hop, at fixed offered
 * loads and commit intervals, both under exactly_once_v2, each point on a fresh broker.
 */
final class LatencyBench {

  private static final String REGISTRY = "mock://latency";
  private static final String BASELINE_IN = "baseline-events";
  private static final String BASELINE_OUT = "baseline-out";

  /** The ledger's three hops, in the order a reply crosses them. */
  static final List<String> HOPS =
      List.of(
          "intent to committed dispatch (ledger)",
          "dispatch to committed outcome (executor)",
          "outcome to committed reply (ledger)");

  /**
   * One measured point; {@code hops} holds, for the ledger, p50 and p99 in ms of each of {@link
   * #HOPS} (empty for the baseline); {@code toLastStage} p50, p99 and p99.9 in ms from the send to
   * the last stage (for the ledger the committed outcome: when a reply the executor published in
   * the outcome's transaction would be visible; empty for the baseline). {@code executorMs} is the
   * executor's commit interval (0 for the baseline); {@code executorCommitsPerSecond} the
   * executor's transactions per second in the measured window (0 for the baseline); {@code cpu}
   * where the JVM's CPU went in the window (every part of a point runs in it).
   */
  record Point(
      int commitMs,
      int executorMs,
      int load,
      String side,
      long sent,
      long answered,
      double p50,
      double p99,
      double p999,
      List<double[]> hops,
      double[] toLastStage,
      CommitProfile commits,
      double executorCommitsPerSecond,
      CpuSplit cpu) {}

  private LatencyBench() {}

  /**
   * What one run measures: {@code seconds} measured after {@code warmup} per point, at each of
   * {@code loads} (intents/s) and {@code intervals} (the Streams commit interval), the ledger with
   * its executor committing at each of {@code executorIntervals} (0: at the ledger's own commit
   * interval) and at most every {@code executorMinMs}; both sides' Kafka Streams with {@code
   * threads} stream threads, {@code executors} executors in one group behind the ledger.
   */
  record Plan(
      int seconds,
      int warmup,
      List<Integer> loads,
      List<Integer> intervals,
      List<Integer> executorIntervals,
      int executorMinMs,
      int threads,
      int executors) {

    /** The first point alone: the warm-up point, not counted. */
    Plan first() {
      return new Plan(
          seconds,
          warmup,
          List.of(loads.get(0)),
          List.of(intervals.get(0)),
          List.of(executorIntervals.get(0)),
          executorMinMs,
          threads,
          executors);
    }
  }

  /**
   * Runs every point of {@code plan} {@code rounds} times, round after round: the baseline, then
   * the ledger at each executor interval, each ledger run on a fresh broker (the baseline shares
   * the first). First, one point of both sides that is not counted: in the first round of runs
   * without it, both sides' first points were slower (the JVM compiling their code), the ledger's
   * more. With {@code against} (another checkout, its bench built), each round is followed by the
   * same points measured by that build ({@link LatencyAgainst}).
   */
  static int run(Plan plan, int rounds, Path against, String command) throws Exception {
    if (rounds < 1 || plan.threads() < 1 || plan.executors() < 1) {
      throw new IllegalArgumentException(
          "--rounds, --threads and --executors must be at least 1, were "
              + rounds
              + ", "
              + plan.threads()
              + " and "
              + plan.executors());
    }
    if (against != null && plan.executors() != 1) {
      throw new IllegalArgumentException(
          "--against runs the other build's bench with one executor: leave --executors at 1");
    }
    Bench.say(
        "warm-up, not counted: both sides at "
            + plan.intervals().get(0)
            + " ms and "
            + plan.loads().get(0)
            + "/s");
    round(plan.first());
    List<List<Point>> all = new ArrayList<>();
    List<List<Point>> theirs = new ArrayList<>();
    for (int round = 1; round <= rounds; round++) {
      Bench.say("round " + round + " of " + rounds);
      all.add(round(plan));
      if (against != null) {
        Bench.say("round " + round + " of " + rounds + ": the same points by " + against);
        theirs.add(LatencyAgainst.round(against, plan, all.get(all.size() - 1)));
      }
    }
    LatencyReport.write(
        all, theirs, against == null ? null : ThroughputWorkers.describe(against), plan, command);
    return 0;
  }

  /** Every point once. */
  private static List<Point> round(Plan plan) throws Exception {
    List<Point> points = new ArrayList<>();
    for (int commitMs : plan.intervals()) {
      for (int load : plan.loads()) {
        List<Integer> executors =
            plan.executorIntervals().stream()
                .map(ms -> ms == 0 ? commitMs : ms)
                .distinct()
                .toList();
        for (int e = 0; e < executors.size(); e++) {
          try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
            Bench.createTopics(kafka, "latency-effects");
            if (e == 0) {
              points.add(baseline(kafka, commitMs, load, plan));
            }
            points.add(ledger(kafka, commitMs, executors.get(e), load, plan));
          }
        }
      }
    }
    return points;
  }

  private static Properties streamsProps(
      EmbeddedKafkaCluster kafka, String applicationId, int commitMs, int threads)
      throws Exception {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(StreamsConfig.STATE_DIR_CONFIG, Bench.stateDir("latency-state").toString());
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // Each side's producer on its own defaults (Kafka Streams' linger.ms of 100 ms for the
    // baseline, the ledger's pinned 100 ms): under exactly_once_v2 a record is readable only at its
    // transaction's commit, which flushes the producer. Until 2026-11-26 both ran at 0, which no
    // one ships (docs/performance.md).
    return props;
  }

  private static Point baseline(EmbeddedKafkaCluster kafka, int commitMs, int load, Plan plan)
      throws Exception {
    Topology topology = BaselineDedupTopology.build(BASELINE_IN, BASELINE_OUT);
    try (KafkaStreams streams =
        new KafkaStreams(
            topology, streamsProps(kafka, "baseline-latency", commitMs, plan.threads()))) {
      return LatencyProbe.measure(
          kafka,
          streams,
          commitMs,
          0,
          load,
          plan.warmup(),
          plan.seconds(),
          "baseline (1 hop)",
          BASELINE_IN,
          BASELINE_OUT,
          List.of(),
          (key, id) -> ("{\"id\":" + id + "}").getBytes(StandardCharsets.UTF_8),
          () -> 0);
    }
  }

  static Point ledger(EmbeddedKafkaCluster kafka, int commitMs, int executorMs, int load, Plan plan)
      throws Exception {
    int executorMinMs = plan.executorMinMs();
    ToolPolicies policies =
        ToolPolicies.of(
            ToolPolicy.builder("charge_card", ToolClass.WRITE_IDEMPOTENT)
                .pendingTimeout(Duration.ofMinutes(30))
                .lane("bench")
                .connector("kafka")
                .build()
                .withSettings(
                    "kafka", new ObjectMapper().readTree("{\"topic\":\"latency-effects\"}")));
    Properties kafkaProps = new Properties();
    kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
    ExecutorConfig executorConfig =
        ExecutorConfig.of(kafkaProps, List.of("bench"), REGISTRY)
            .withCommitInterval(Duration.ofMillis(executorMs))
            .withMinCommitInterval(
                Duration.ofMillis(executorMinMs < 0 ? executorMs : executorMinMs))
            .withGroupId("latency-executor-" + executorMs);
    RegistryAvroSerde<ToolIntent> serde =
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolIntent.class);
    Properties streamsProps =
        streamsProps(kafka, "ledger-latency-" + executorMs, commitMs, plan.threads());
    List<EffectExecutor> executors = new ArrayList<>();
    try (KafkaStreams streams =
            LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), streamsProps);
        AutoCloseable closeExecutors = () -> closeAll(executors)) {
      for (int i = 0; i < plan.executors(); i++) {
        // one group: the dispatch partitions are shared among them, as among executor processes
        executors.add(
            EffectExecutor.start(
                executorConfig,
                Connectors.forLanes(policies, List.of("bench"), Clock.systemUTC()),
                policies));
      }
      return LatencyProbe.measure(
          kafka,
          streams,
          commitMs,
          executorMs,
          load,
          plan.warmup(),
          plan.seconds(),
          "ledger, executor commits every " + executorMs + " ms",
          Topics.INTENTS,
          Topics.RESULTS,
          List.of(Topics.dispatch("bench"), Topics.OUTCOMES),
          (key, id) ->
              serde.serialize(
                  Topics.INTENTS,
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("bench")
                      .setRunId("run-" + id)
                      .setStepId("step")
                      .setTool("charge_card")
                      .setArguments("{\"amount\":" + id + "}")
                      .setArgumentsHash(ArgumentsHash.of("{\"amount\":" + id + "}", List.of()))
                      .setRequestedAt(Instant.now())
                      .build()),
          () -> executors.stream().mapToLong(EffectExecutor::transactionsCommitted).sum());
    }
  }

  private static void closeAll(List<EffectExecutor> executors) {
    for (EffectExecutor executor : executors) {
      executor.close();
    }
  }
}
