package dev.effectledger.bench;

import dev.effectledger.bench.Bench.Run;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * {@code bench/run throughput --workers}: the baseline and the ledger each in a JVM of its own, the
 * broker and the schema registry in this one.
 *
 * <p>{@code bench/run throughput} runs every topology in the JVM that runs the broker, so the JIT
 * compilers meet the baseline's, the ledger's and the variants' types at Kafka Streams' and the
 * clients' shared call sites, and compile and throw code away as each topology brings others
 * (docs/performance.md, section "The drift is the JIT compilers"). A deployed ledger runs alone in
 * its JVM, away from the broker. Here each side has a worker JVM that keeps its compiled code from
 * round to round; the rounds still alternate the sides, one run at a time, on the same broker and
 * input, under {@code exactly_once_v2}. A worker is told on its standard input to run once under a
 * new application id and answers one {@code result} line on its standard output.
 */
final class ThroughputWorkers {

  private ThroughputWorkers() {}

  /** One side's run, and the CPU this JVM (the broker, the registry) spent per intent meanwhile. */
  record Side(Run run, double brokerMicrosPerRecord) {}

  /**
   * One round: a baseline run, then a ledger run, then (with {@code --against}) a run of the ledger
   * of another build, else null.
   */
  record Round(Side baseline, Side ledger, Side before) {
    double ratio() {
      return ledger.run().perSecond() / baseline.run().perSecond();
    }

    double againstBefore() {
      return ledger.run().perSecond() / before.run().perSecond();
    }
  }

  /**
   * As above, and with {@code against} (a checkout of another commit, its bench module built) a
   * third worker runs that build's ledger, on its own classpath (its Kafka clients and Streams
   * included), against this run's broker: a release measured beside the one before it.
   */
  static int run(int intents, int repeats, Path against) throws Exception {
    Bench.say("starting an embedded broker and a schema registry");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
        SchemaRegistryServer registry = SchemaRegistryServer.start()) {
      Bench.createTopics(kafka);
      int distinct = Bench.produce(kafka.bootstrapServers(), registry.url(), intents).distinct();
      Bench.say("produced " + intents + " intents; starting a worker JVM per side");
      List<Round> rounds = new ArrayList<>();
      try (Worker baseline = Worker.start("baseline", kafka.bootstrapServers(), registry, intents);
          Worker ledger = Worker.start("ledger", kafka.bootstrapServers(), registry, intents);
          Worker before =
              against == null
                  ? null
                  : Worker.start(
                      "ledger",
                      "ledger-before",
                      classpathOf(against),
                      kafka.bootstrapServers(),
                      registry,
                      intents)) {
        for (int r = 0; r <= repeats; r++) {
          Bench.say(r == 0 ? "warm-up round, not counted" : "round " + r);
          Side b = side(baseline, "workers-baseline-" + r, intents);
          Side l = side(ledger, "workers-ledger-" + r, intents);
          Side o = before == null ? null : side(before, "workers-ledger-before-" + r, intents);
          if (r > 0) {
            rounds.add(new Round(b, l, o));
          }
        }
      }
      Bench.writeReport(
          "throughput-workers",
          report(rounds, intents, distinct, repeats, against == null ? null : describe(against)));
    }
    return 0;
  }

  private static Side side(Worker worker, String applicationId, int intents) throws IOException {
    long before = Bench.processCpuNanos();
    Run run = worker.run(applicationId);
    return new Side(run, (Bench.processCpuNanos() - before) / 1e3 / intents);
  }

  /** The classpath of the bench module built in checkout {@code dir}. */
  static String classpathOf(Path dir) throws IOException {
    Path classes = dir.resolve("bench/target/classes");
    Path deps = dir.resolve("bench/target/classpath.txt");
    if (!Files.isDirectory(classes) || !Files.isRegularFile(deps)) {
      throw new IOException(
          dir
              + " has no built bench module; build it there first: ./mvnw -q -DskipTests -pl bench"
              + " -am package");
    }
    return classes + File.pathSeparator + Files.readString(deps).trim();
  }

  /** The commit checked out in {@code dir}, and its Kafka Streams jar, for the report. */
  static String describe(Path dir) throws IOException {
    String streams =
        Arrays.stream(
                Files.readString(dir.resolve("bench/target/classpath.txt"))
                    .trim()
                    .split(File.pathSeparator))
            .map(p -> Path.of(p).getFileName().toString())
            .filter(n -> n.startsWith("kafka-streams-"))
            .findFirst()
            .orElse("kafka-streams (not found)");
    String commit = dir.toString(); // named instead when git cannot tell
    try {
      Process git =
          new ProcessBuilder("git", "-C", dir.toString(), "rev-parse", "--short", "HEAD").start();
      String out = new String(git.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (git.waitFor(10, TimeUnit.SECONDS) && git.exitValue() == 0) {
        commit = out;
      }
    } catch (IOException e) {
      // no git here: the directory is named
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return commit + ", " + streams;
  }

  /** The report: every round's runs, each round's ratio, and the median of those. */
  static String report(List<Round> rounds, int intents, int distinct, int repeats, String before) {
    StringBuilder md = new StringBuilder();
    md.append("# Throughput, each side in a JVM of its own\n\n")
        .append("Command: `bench/run throughput --workers --intents ")
        .append(intents)
        .append(" --repeats ")
        .append(repeats)
        .append(before == null ? "" : " --against <checkout>")
        .append("`  \n")
        .append("Machine: ")
        .append(Runtime.getRuntime().availableProcessors())
        .append(" cores, Java ")
        .append(System.getProperty("java.version"))
        .append(
            "; one embedded broker and the schema registry in the benchmark's JVM, the baseline")
        .append(" and the ledger each in a worker JVM of its own (-Xmx4g), ")
        .append(Bench.PARTITIONS)
        .append(" partitions, 2 stream threads, exactly_once_v2, commit.interval.ms=100; date ")
        .append(LocalDate.now())
        .append(".  \n")
        .append(Bench.input(intents, distinct))
        .append(
            ". A warm-up round not counted, then rounds of one baseline run and one ledger run, one"
                + " at a time. Rates past each run's start-up (as in `bench/run throughput`); a"
                + " worker's CPU per intent over the same stretch; the broker's JVM's CPU per intent"
                + " over the whole run.")
        .append(
            before == null
                ? ""
                : " Each round ends with a run of `ledger-before`: the ledger of "
                    + before
                    + ", in a worker on that build's classpath (its Kafka clients and Streams),"
                    + " against the same broker.")
        .append("\n\n")
        .append(
            "| round | side | intents/s | stream threads' CPU µs per intent | the worker's CPU µs"
                + " per intent | of which the JIT compilers | the broker's JVM, µs per intent |\n"
                + "| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    List<Run> runs = new ArrayList<>();
    for (int i = 0; i < rounds.size(); i++) {
      Round round = rounds.get(i);
      List<Side> sides = new ArrayList<>(List.of(round.baseline(), round.ledger()));
      if (round.before() != null) {
        sides.add(round.before());
      }
      for (Side side : sides) {
        Run r = side.run();
        runs.add(r);
        md.append(
            String.format(
                Locale.ROOT,
                "| %d | %s | %,.0f | %.1f | %.1f | %.1f | %.1f |%n",
                i + 1,
                r.name(),
                r.perSecond(),
                r.cpuMicrosPerRecord(),
                r.processCpuMicrosPerRecord(),
                r.compileMicrosPerRecord(),
                side.brokerMicrosPerRecord()));
      }
    }
    List<Double> ratios = rounds.stream().map(Round::ratio).toList();
    md.append("\n| ratio | value | target |\n| --- | ---: | --- |\n")
        .append(
            String.format(
                Locale.ROOT,
                "| ledger / baseline, exactly_once_v2, median of the rounds | %.2f | >= 0.6 (toward"
                    + " 0.8) |%n",
                ratios.isEmpty() ? Double.NaN : LatencyReport.median(ratios)))
        .append("| ledger / baseline by round | ")
        .append(ThroughputReport.byRound(runs))
        .append(" | (each round's two runs back to back) |\n");
    if (before != null) {
      List<Double> upgrade = rounds.stream().map(Round::againstBefore).toList();
      md.append(
          String.format(
              Locale.ROOT,
              "| ledger / ledger-before, median of the rounds | %.2f | >= 0.9 |%n"
                  + "| ledger / ledger-before by round | %s | (each round's runs back to back) |%n",
              LatencyReport.median(upgrade),
              String.join(
                  ", ",
                  upgrade.stream().map(v -> String.format(Locale.ROOT, "%.2f", v)).toList())));
    }
    return md.toString();
  }

  /** A side's worker JVM. */
  private static final class Worker implements AutoCloseable {

    private final String side;
    private final Process process;
    private final BufferedWriter in;
    private final BufferedReader out;

    private Worker(String side, Process process) {
      this.side = side;
      this.process = process;
      this.in =
          new BufferedWriter(
              new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
      this.out =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    static Worker start(String side, String bootstrap, SchemaRegistryServer registry, int intents)
        throws IOException {
      return start(side, side, System.getProperty("java.class.path"), bootstrap, registry, intents);
    }

    /** A worker running {@code side} on {@code classpath}, named {@code label} in the report. */
    static Worker start(
        String side,
        String label,
        String classpath,
        String bootstrap,
        SchemaRegistryServer registry,
        int intents)
        throws IOException {
      List<String> command =
          List.of(
              Processes.java(),
              "-Xmx4g",
              "-cp",
              classpath,
              ThroughputWorkers.class.getName(),
              side,
              bootstrap,
              registry.url(),
              Integer.toString(intents));
      return new Worker(
          label,
          new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }

    /**
     * Runs the side once under {@code applicationId}; its progress lines are shown as they come.
     */
    Run run(String applicationId) throws IOException {
      in.write("run " + applicationId + "\n");
      in.flush();
      String line;
      while ((line = out.readLine()) != null) {
        if (line.startsWith("result ")) {
          return parse(side, line);
        }
        System.out.println("  " + side + " | " + line);
      }
      throw new IOException(
          "the " + side + " worker ended without a result; its errors are printed above");
    }

    @Override
    public void close() throws InterruptedException {
      try {
        in.close();
      } catch (IOException e) {
        // it is gone already
      }
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    }
  }

  /** Parses a worker's {@code result} line. */
  static Run parse(String side, String line) {
    String[] f = line.trim().split(" ");
    if (f.length != 6) {
      throw new IllegalArgumentException("not a worker's result line: " + line);
    }
    return new Run(
        side,
        StreamsConfig.EXACTLY_ONCE_V2,
        Double.parseDouble(f[1]),
        Double.parseDouble(f[2]),
        Double.parseDouble(f[3]),
        Double.parseDouble(f[4]),
        Double.parseDouble(f[5]));
  }

  /** The {@code result} line a worker answers with. */
  static String format(Run run) {
    return String.format(
        Locale.ROOT,
        "result %f %f %f %f %f",
        run.perSecond(),
        run.wholeRunPerSecond(),
        run.cpuMicrosPerRecord(),
        run.processCpuMicrosPerRecord(),
        run.compileMicrosPerRecord());
  }

  /** A worker: {@code <baseline|ledger> <bootstrap servers> <registry url> <intents>}. */
  public static void main(String[] args) throws Exception {
    String side = args[0];
    String bootstrap = args[1];
    String registry = args[2];
    int intents = Integer.parseInt(args[3]);
    boolean ledger = side.equals("ledger");
    Supplier<Topology> topology =
        ledger
            ? () -> LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, registry))
            : () -> BaselineDedupTopology.build(Bench.BASELINE_INPUT, "baseline-out");
    String input = ledger ? Topics.INTENTS : Bench.BASELINE_INPUT;
    BufferedReader commands =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = commands.readLine()) != null) {
      String[] command = line.trim().split(" ");
      if (command.length != 2 || !command[0].equals("run")) {
        System.err.println("[worker] expected 'run <application id>', got: " + line);
        System.exit(2);
      }
      Run run =
          Bench.measure(
              bootstrap,
              side,
              StreamsConfig.EXACTLY_ONCE_V2,
              topology,
              input,
              command[1],
              intents,
              1,
              2);
      System.out.println(format(run));
      System.out.flush();
    }
    System.exit(0);
  }
}
