package dev.effectledger.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.policy.ArgumentRules;
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
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.Topology;
import org.openjdk.jmh.Main;

/**
 * The entry point of {@code bench/run} and what the benchmarks share: the topics, the workload of
 * intents, the policies, one measured {@link Run}, and the reports' paths and lines. The throughput
 * run itself is {@link ThroughputBench}, the scaling run {@link ScalingBench}, the measurement loop
 * {@link StreamsMeter}.
 */
public final class Bench {

  static final int PARTITIONS = 8;
  static final String BASELINE_INPUT = "baseline-events";
  static final String REGISTRY = "mock://bench";

  /**
   * One measured run: its rate past its start-up ({@link SteadyRate}), its rate over the whole run,
   * and the CPU its stream threads spent per input record (their own time, not the broker's or the
   * JVM's: steadier than the rate on a machine where the broker shares the cores), the whole
   * process's CPU per record past start-up, and the part of that stretch the JIT compilers spent
   * compiling ({@link SteadyRate#compileMicrosPerRecord}).
   */
  record Run(
      String name,
      String guarantee,
      double perSecond,
      double wholeRunPerSecond,
      double cpuMicrosPerRecord,
      double processCpuMicrosPerRecord,
      double compileMicrosPerRecord) {}

  /** The ledger without the arguments-hash check, measured beside the ledger to price the check. */
  static final String UNCHECKED = "ledger-unchecked";

  /** The ledger with its stores' record cache on (off by default), measured beside the ledger. */
  static final String CACHED = "ledger-cached";

  /**
   * The ledger with the producer's own default batch size (16 KiB) instead of the ledger's ({@link
   * LedgerTopology#PRODUCER_BATCH_BYTES}), measured beside the ledger under exactly_once_v2.
   */
  static final String SMALL_BATCHES = "ledger-16k";

  /**
   * The ledger with {@code enable.transactional.statestores=false}, as until 2026-11-29 (the ledger
   * turns them on since), measured beside the ledger under both guarantees: what keeping
   * uncommitted writes out of RocksDB (Kafka 4.4, KIP-892) costs per intent.
   */
  static final String TRANSACTIONAL_STORES_OFF = "ledger-tss-off";

  /**
   * The baseline with the ledger's producer batch size, measured beside the baseline under
   * exactly_once_v2: how much of the ledger's gain from larger batches any topology gets.
   */
  static final String BASELINE_BATCHED = "baseline-128k";

  /** The intents produced: each one's key, in order, and how many distinct keys there are. */
  record Workload(List<String> keys, int distinct) {}

  static final ToolPolicies POLICIES =
      ToolPolicies.of(
          ToolPolicy.builder("charge_card", ToolClass.WRITE_IDEMPOTENT)
              .pendingTimeout(Duration.ofMinutes(30))
              .lane("bench")
              .build()
              .withKey(new ArgumentRules(List.of("/reason"), List.of())));

  /**
   * {@code bench/run <command> [options]}: see {@link BenchCommand}; {@code jmh} hands its
   * arguments to JMH.
   */
  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("jmh")) {
      Main.main(Arrays.copyOfRange(args, 1, args.length));
      return;
    }
    System.exit(new picocli.CommandLine(new BenchCommand()).execute(args));
  }

  /** {@code bench/run throughput}: see {@link ThroughputBench}. */
  static int throughput(int intents, int repeats) throws Exception {
    return ThroughputBench.run(intents, repeats);
  }

  /** {@code bench/run scaling}: see {@link ScalingBench}. */
  static int scaling(int intents, int repeats) throws Exception {
    return ScalingBench.run(intents, repeats);
  }

  static void createTopics(EmbeddedKafkaCluster kafka, String... extra) {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, PARTITIONS);
    }
    for (String t : List.of(Topics.dispatch("bench"), BASELINE_INPUT, "baseline-out")) {
      topics.put(t, PARTITIONS);
    }
    for (String t : extra) {
      topics.put(t, PARTITIONS);
    }
    kafka.createTopics(topics);
  }

  static Run measureLedger(
      EmbeddedKafkaCluster kafka, String guarantee, String applicationId, int intents)
      throws Exception {
    return measure(
        kafka,
        "ledger",
        guarantee,
        LedgerTopology.build(LedgerConfig.of(POLICIES, REGISTRY)),
        Topics.INTENTS,
        applicationId,
        intents);
  }

  /** The input line of a report: how many intents, how many distinct keys, the duplicates. */
  static String input(int intents, int distinct) {
    return String.format(
        "Input: %d intents, %d distinct keys (%d%% duplicates)",
        intents, distinct, (intents - distinct) * 100 / intents);
  }

  /**
   * A report's head: its title, the command that made it and the machine it ran on (each report
   * goes on from the machine's line).
   */
  static StringBuilder reportHead(String title, String command) {
    return new StringBuilder("# ")
        .append(title)
        .append("\n\nCommand: `")
        .append(command)
        .append("`  \n")
        .append(machine());
  }

  static String machine() {
    return "Machine: "
        + Runtime.getRuntime().availableProcessors()
        + " cores, "
        + (((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize()
            >> 30)
        + " GiB memory, Java "
        + System.getProperty("java.version")
        + ", "
        + Runtime.getRuntime().maxMemory() / (1024 * 1024)
        + " MiB heap; date "
        + LocalDate.now();
  }

  /** Intents with ~25% duplicates: every fourth intent repeats an earlier key. */
  static Workload produce(String bootstrap, int count) {
    return produce(bootstrap, REGISTRY, count);
  }

  /** As above, the intents' schema registered at {@code registry}. */
  static Workload produce(String bootstrap, String registry, int count) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    RegistryAvroSerde<ToolIntent> serde =
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), ToolIntent.class);
    Random random = new Random(7);
    int distinct = 0;
    List<String> keys = new ArrayList<>(count);
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < count; i++) {
        int id = i % 4 == 3 && distinct > 0 ? random.nextInt(distinct) : distinct++;
        String key = "v1:bench-" + id;
        keys.add(key);
        String args = "{\"amount\":" + id + ",\"to\":\"cus_" + id + "\",\"reason\":\"as asked\"}";
        ToolIntent intent =
            ToolIntent.newBuilder()
                .setIdempotencyKey(key)
                .setTenant("bench")
                .setRunId("run-" + id)
                .setStepId("step")
                .setTool("charge_card")
                .setArguments(args)
                .setArgumentsHash(ArgumentsHash.of(args, List.of("/reason")))
                .setRequestedAt(Instant.now())
                .build();
        byte[] value = serde.serialize(Topics.INTENTS, intent);
        producer.send(new ProducerRecord<>(Topics.INTENTS, key, value));
        producer.send(new ProducerRecord<>(BASELINE_INPUT, key, value));
      }
    }
    return new Workload(keys, distinct);
  }

  /** Runs one topology from the start of its input until it has committed past every record. */
  static Run measure(
      EmbeddedKafkaCluster kafka,
      String name,
      String guarantee,
      Topology topology,
      String input,
      String applicationId,
      int records)
      throws Exception {
    return StreamsMeter.measure(
        kafka.bootstrapServers(),
        name,
        guarantee,
        () -> topology,
        input,
        applicationId,
        records,
        1,
        2);
  }

  /** See {@link StreamsMeter#measure}. */
  static Run measure(
      String bootstrap,
      String name,
      String guarantee,
      Supplier<Topology> topology,
      String input,
      String applicationId,
      int records,
      int instances,
      int threads)
      throws Exception {
    return StreamsMeter.measure(
        bootstrap, name, guarantee, topology, input, applicationId, records, instances, threads);
  }

  /** See {@link StreamsMeter#processCpuNanos}. */
  static long processCpuNanos() {
    return StreamsMeter.processCpuNanos();
  }

  /** See {@link StreamsMeter#caughtUp}. */
  static boolean caughtUp(Admin admin, String group, Map<TopicPartition, Long> end)
      throws Exception {
    return StreamsMeter.caughtUp(admin, group, end);
  }

  /** Writes {@code md} as a new report {@code name}, beside no chart; see {@link #reportBase}. */
  static void writeReport(String name, CharSequence md) throws IOException {
    writeReport(reportBase(name), md);
  }

  /** Writes {@code md} to {@code base}.md (the chart written before it, if any, is base.png). */
  static void writeReport(Path base, CharSequence md) throws IOException {
    Path out = Path.of(base + ".md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, md.toString());
    System.out.println();
    System.out.println(md);
    say("report written to " + out);
  }

  /** Where today's report {@code name} goes in bench/results/; see the three-argument form. */
  static Path reportBase(String name) {
    return reportBase(Path.of("bench/results"), name, LocalDate.now());
  }

  /**
   * {@code dir/name-day}, or {@code dir/name-day-2}, {@code -3}, ... when a report or chart of that
   * name is there already: a second run of a benchmark on one day does not overwrite the first's
   * report, which the docs may link to.
   */
  static Path reportBase(Path dir, String name, LocalDate day) {
    String base = name + "-" + day;
    Path candidate = dir.resolve(base);
    for (int n = 2;
        Files.exists(Path.of(candidate + ".md")) || Files.exists(Path.of(candidate + ".png"));
        n++) {
      candidate = dir.resolve(base + "-" + n);
    }
    return candidate;
  }

  /**
   * A new temporary state directory for a benchmark's Kafka Streams client, deleted when the JVM
   * exits: a throughput run alone opens about twenty of them at some 60 MB each, which earlier runs
   * left behind in the temporary directory.
   */
  static Path stateDir(String prefix) throws IOException {
    Path dir = Files.createTempDirectory(prefix);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    Utils.delete(dir.toFile());
                  } catch (IOException e) {
                    System.err.println("[bench] could not delete " + dir + ": " + e);
                  }
                }));
    return dir;
  }

  static void say(String line) {
    System.out.println("[bench] " + line);
    System.out.flush();
  }
}
