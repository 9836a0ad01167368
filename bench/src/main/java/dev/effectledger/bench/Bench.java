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
import java.lang.management.ThreadMXBean;
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
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.openjdk.jmh.Main;

/**
 * {@code bench/run throughput}: the ledger gate's throughput against the baseline dedup topology,
 * and exactly_once_v2 against at_least_once, on one embedded broker, same input, in one run.
 */
public final class Bench {

  static final int PARTITIONS = 8;
  static final String BASELINE_INPUT = "baseline-events";
  private static final String REGISTRY = "mock://bench";

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

  /** {@code bench/run throughput}: see the class comment. */
  static int throughput(int intents, int repeats) throws Exception {
    say("starting an embedded broker");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      createTopics(kafka);
      int distinct = produce(kafka.bootstrapServers(), intents).distinct();
      say(
          "produced "
              + intents
              + " intents ("
              + distinct
              + " distinct keys, "
              + (intents - distinct) * 100 / intents
              + "% duplicates) to "
              + Topics.INTENTS
              + " and "
              + BASELINE_INPUT);
      List<Run> runs = new ArrayList<>();
      // A warm-up round, not counted: the first round ran at half the later rounds' rate on every
      // side (JIT, the broker's page cache), which made a median of three a coin toss. The JIT
      // compilers stay busy for about two rounds more (each run reports their time per intent):
      // the later rounds are the steady ones.
      say("warm-up round, not counted");
      measure(
          kafka,
          "baseline",
          StreamsConfig.EXACTLY_ONCE_V2,
          BaselineDedupTopology.build(BASELINE_INPUT, "baseline-out"),
          BASELINE_INPUT,
          "baseline-warm-up",
          intents);
      measureLedger(kafka, StreamsConfig.EXACTLY_ONCE_V2, "ledger-warm-up", intents);
      int round = 0;
      for (int r = 0; r < repeats; r++) {
        for (String guarantee :
            List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE)) {
          round++;
          runs.add(
              measure(
                  kafka,
                  "baseline",
                  guarantee,
                  BaselineDedupTopology.build(BASELINE_INPUT, "baseline-out"),
                  BASELINE_INPUT,
                  "baseline-" + round,
                  intents));
          runs.add(measureLedger(kafka, guarantee, "ledger-" + round, intents));
          if (guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2)) {
            runs.add(
                measure(
                    kafka,
                    BASELINE_BATCHED,
                    guarantee,
                    BaselineDedupTopology.build(BASELINE_INPUT, "baseline-out"),
                    BASELINE_INPUT,
                    "baseline-128k-" + round,
                    intents));
            runs.add(
                measure(
                    kafka,
                    SMALL_BATCHES,
                    guarantee,
                    LedgerTopology.build(LedgerConfig.of(POLICIES, REGISTRY)),
                    Topics.INTENTS,
                    "ledger-16k-" + round,
                    intents));
            // What checking each intent's arguments hash costs: the same ledger without the check.
            runs.add(
                measure(
                    kafka,
                    UNCHECKED,
                    guarantee,
                    LedgerTopology.build(
                        LedgerConfig.of(POLICIES, REGISTRY).withArgumentsHashCheck(false)),
                    Topics.INTENTS,
                    "ledger-unchecked-" + round,
                    intents));
          }
          // The stores with Kafka Streams' record cache (ledger.store.caching=true; off by
          // default).
          runs.add(
              measure(
                  kafka,
                  CACHED,
                  guarantee,
                  LedgerTopology.build(LedgerConfig.of(POLICIES, REGISTRY).withStoreCaching(true)),
                  Topics.INTENTS,
                  "ledger-cached-" + round,
                  intents));
        }
      }
      ThroughputReport.write(runs, intents, distinct, repeats);
    }
    return 0;
  }

  /**
   * {@code bench/run scaling}: the ledger with 1, 2 and 4 instances (one stream thread each) on 8
   * partitions.
   */
  static int scaling(int intents, int repeats) throws Exception {
    List<Integer> sizes = List.of(1, 2, 4);
    Map<Integer, List<Double>> results = new TreeMap<>();
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      createTopics(kafka);
      Workload workload = produce(kafka.bootstrapServers(), intents);
      say("warm-up run (2 instances), not counted");
      double warmUp =
          measure(
                  kafka.bootstrapServers(),
                  "ledger",
                  StreamsConfig.EXACTLY_ONCE_V2,
                  () -> LedgerTopology.build(LedgerConfig.of(POLICIES, REGISTRY)),
                  Topics.INTENTS,
                  "scaling-warm-up",
                  intents,
                  2,
                  1)
              .perSecond();
      for (int r = 0; r < repeats; r++) {
        // Each repeat starts at another size, so JIT warm-up within a repeat favours none of them.
        for (int i = 0; i < sizes.size(); i++) {
          int n = sizes.get((i + r) % sizes.size());
          Run run =
              measure(
                  kafka.bootstrapServers(),
                  "ledger",
                  StreamsConfig.EXACTLY_ONCE_V2,
                  () -> LedgerTopology.build(LedgerConfig.of(POLICIES, REGISTRY)),
                  Topics.INTENTS,
                  "scaling-" + n + "-" + r,
                  intents,
                  n,
                  1);
          results.computeIfAbsent(n, k -> new ArrayList<>()).add(run.perSecond());
        }
      }
      double one = medianOf(results.get(1));
      StringBuilder md = new StringBuilder("# Scaling: ledger instances on 8 partitions\n\n");
      md.append("Command: `bench/run scaling --intents ")
          .append(intents)
          .append(" --repeats ")
          .append(repeats)
          .append("`  \n");
      md.append(machine()).append("  \n");
      md.append(
              "One embedded broker (in the same JVM), 8 partitions, exactly_once_v2, commit.interval.ms=100, each instance a"
                  + " Kafka Streams client with one stream thread and its own state directory; ")
          .append(intents)
          .append(" intents, ")
          .append((intents - workload.distinct()) * 100 / intents)
          .append("% duplicates. A warm-up run of 2 instances first (")
          .append(String.format("%,.0f", warmUp))
          .append(" intents/s, not counted); then ")
          .append(repeats)
          .append(" repeats, each starting at another size; the median is reported.\n\n");
      md.append(
          "| instances | intents/s (median) | speed-up over 1 | all runs |\n| ---: | ---: | ---: | --- |\n");
      for (int n : sizes) {
        double v = medianOf(results.get(n));
        md.append(
            String.format(
                "| %d | %,.0f | %.2f | %s |%n",
                n,
                v,
                v / one,
                results.get(n).stream().map(x -> String.format("%,.0f", x)).toList()));
      }
      Path base = reportBase("scaling");
      Path chart = Charts.scaling(results, Path.of(base + ".png"));
      md.append("\n![throughput by instances](").append(chart.getFileName()).append(")\n");
      writeReport(base, md);
    }
    return 0;
  }

  private static double medianOf(List<Double> values) {
    return values.stream().sorted().toList().get(values.size() / 2);
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
  private static Run measure(
      EmbeddedKafkaCluster kafka,
      String name,
      String guarantee,
      Topology topology,
      String input,
      String applicationId,
      int records)
      throws Exception {
    return measure(
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

  /**
   * Runs {@code instances} Kafka Streams clients of one application, {@code threads} stream threads
   * each, on the cluster at {@code bootstrap}, from the start of the input until they have
   * committed past every record.
   */
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
    List<KafkaStreams> clients = new ArrayList<>();
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    // The same commit interval for both guarantees (at_least_once defaults to 30 s, which would
    // measure the interval, not the work); progress is read from committed offsets.
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    if (name.equals(SMALL_BATCHES)) {
      props.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 16 * 1024);
    } else if (name.equals(BASELINE_BATCHED)) {
      props.put(
          StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG),
          LedgerTopology.PRODUCER_BATCH_BYTES);
    }
    Properties effective =
        name.startsWith("ledger") ? LedgerTopology.streamsProperties(props) : props;
    for (int i = 0; i < instances; i++) {
      Properties own = new Properties();
      own.putAll(effective);
      own.put(StreamsConfig.STATE_DIR_CONFIG, stateDir("bench-state").toString());
      clients.add(new KafkaStreams(topology.get(), own));
    }
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      Map<TopicPartition, Long> end = new HashMap<>();
      for (int p = 0; p < PARTITIONS; p++) {
        TopicPartition tp = new TopicPartition(input, p);
        end.put(
            tp, admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset());
      }
      long total = end.values().stream().mapToLong(Long::longValue).sum();
      SteadyRate steady = new SteadyRate(total);
      long start = System.nanoTime();
      clients.forEach(KafkaStreams::start);
      long done;
      while ((done = committed(admin, applicationId, end)) < total) {
        steady.sample(System.nanoTime(), done, processCpuNanos(), compileNanos());
        // Polling the committed offsets: the measure's resolution, a request to the broker each.
        TimeUnit.MILLISECONDS.sleep(20);
      }
      long finished = System.nanoTime();
      double processMicros = steady.cpuMicrosPerRecord(processCpuNanos());
      double compileMicros = steady.compileMicrosPerRecord(compileNanos());
      double seconds = (finished - start) / 1e9;
      double wholeRun = records / seconds;
      double perSecond = steady.perSecond(finished, wholeRun);
      double cpuMicros = streamThreadCpuNanos(applicationId) / 1e3 / records;
      say(
          String.format(
              "%-8s %-16s %d×%d threads %,10.0f intents/s past start-up (%,.0f over the whole %.1f"
                  + " s), stream threads %.1f µs CPU per intent, the process %.1f past start-up"
                  + " (JIT compiling %.1f)",
              name,
              guarantee,
              instances,
              threads,
              perSecond,
              wholeRun,
              seconds,
              cpuMicros,
              processMicros,
              compileMicros));
      return new Run(name, guarantee, perSecond, wholeRun, cpuMicros, processMicros, compileMicros);
    } finally {
      clients.forEach(KafkaStreams::close);
    }
  }

  /** The CPU time so far of this whole process: the broker, the clients, the JIT, the GC. */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /**
   * The time the JVM's JIT compilers have spent so far ({@link
   * java.lang.management.CompilationMXBean#getTotalCompilationTime}, summed over the compiler
   * threads); 0 where the JVM does not tell.
   */
  static long compileNanos() {
    var jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported()
        ? TimeUnit.MILLISECONDS.toNanos(jit.getTotalCompilationTime())
        : 0;
  }

  /**
   * The CPU time so far of the live stream threads of application {@code applicationId} (Kafka
   * Streams names them {@code <application id>-<uuid>-StreamThread-<n>}).
   */
  static long streamThreadCpuNanos(String applicationId) {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long total = 0;
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      String name = thread.getName();
      if (name.startsWith(applicationId + "-") && name.contains("-StreamThread-")) {
        long cpu = threads.getThreadCpuTime(thread.getId());
        total += Math.max(0, cpu);
      }
    }
    return total;
  }

  /** Whether group {@code group} has committed every partition up to its {@code end}. */
  static boolean caughtUp(Admin admin, String group, Map<TopicPartition, Long> end)
      throws Exception {
    return committed(admin, group, end) >= end.values().stream().mapToLong(Long::longValue).sum();
  }

  /**
   * How many of the input's records group {@code group} has committed: its committed offsets, each
   * partition's counted up to its {@code end}.
   */
  static long committed(Admin admin, String group, Map<TopicPartition, Long> end) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    long done = 0;
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      OffsetAndMetadata offset = committed.get(e.getKey());
      done += offset == null ? 0 : Math.min(offset.offset(), e.getValue());
    }
    return done;
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
