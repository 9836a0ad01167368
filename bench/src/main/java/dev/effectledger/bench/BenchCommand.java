package dev.effectledger.bench;

import dev.effectledger.policy.Durations;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code bench/run}: the benchmarks and the chaos harness, one subcommand each. */
@Command(
    name = "bench/run",
    mixinStandardHelpOptions = true,
    description =
        "Run a benchmark or the chaos harness; each writes a Markdown report to bench/results/."
            + " (bench/run jmh [JMH options] runs the JMH micro-benchmarks.)",
    subcommands = {
      BenchCommand.Throughput.class,
      BenchCommand.Scaling.class,
      BenchCommand.Latency.class,
      BenchCommand.Postgres.class,
      BenchCommand.State.class,
      BenchCommand.Sustain.class,
      BenchCommand.Failover.class,
      BenchCommand.GatewayOverhead.class,
      ChaosCommand.class
    })
final class BenchCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  /** Without a subcommand: the usage, and status 2. */
  @Override
  public Integer call() {
    spec.commandLine().usage(System.err);
    return 2;
  }

  /** The command line as typed, for the report: {@code bench/run <subcommand> <options>}. */
  static String typed(CommandSpec spec) {
    return "bench/run "
        + String.join(" ", spec.root().commandLine().getParseResult().originalArgs());
  }

  /** How long each point of a fixed-load measurement runs. */
  static final class Points {
    @Option(
        names = "--seconds",
        defaultValue = "20",
        description = "measured seconds per point; default ${DEFAULT-VALUE}")
    int seconds;

    @Option(
        names = "--warmup",
        defaultValue = "5",
        description = "warm-up seconds per point (excluded); default ${DEFAULT-VALUE}")
    int warmup;
  }

  /** The workload options of the side-by-side throughput comparisons. */
  static final class Workload {
    @Option(
        names = "--intents",
        defaultValue = "200000",
        description = "intents produced (25%% duplicates); default ${DEFAULT-VALUE}")
    int intents;

    @Option(
        names = "--repeats",
        defaultValue = "3",
        description = "runs of each side; the median is reported; default ${DEFAULT-VALUE}")
    int repeats;
  }

  @Command(
      name = "throughput",
      mixinStandardHelpOptions = true,
      description =
          "The ledger against the baseline dedup topology, exactly_once_v2 and at_least_once, same input.")
  static final class Throughput implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin Workload workload;

    @Option(
        names = "--workers",
        description =
            "the baseline and the ledger each in a JVM of its own (the broker in this one),"
                + " exactly_once_v2 only, no variants")
    boolean workers;

    @Option(
        names = "--against",
        description =
            "with --workers: a checkout of another commit with its bench module built (./mvnw"
                + " -q -DskipTests -pl bench -am package); its ledger runs in a third worker on its"
                + " own classpath, beside this build's, against the same broker")
    Path against;

    @Option(
        names = "--tracing",
        description =
            "instead: the ledger with tracing off, at 1% sampling and at 100%, in turn every round"
                + " (OTLP/HTTP to a receiver in this process)")
    boolean tracing;

    @Override
    public Integer call() throws Exception {
      if (against != null && !workers) {
        throw new ParameterException(spec.commandLine(), "--against needs --workers");
      }
      if (tracing) {
        return TracingBench.run(workload.intents, workload.repeats);
      }
      return workers
          ? ThroughputWorkers.run(workload.intents, workload.repeats, against)
          : Bench.throughput(workload.intents, workload.repeats);
    }
  }

  @Command(
      name = "scaling",
      mixinStandardHelpOptions = true,
      description =
          "The ledger with 1, 2 and 4 instances (one stream thread each) on 8 partitions.")
  static final class Scaling implements Callable<Integer> {
    @Option(
        names = "--intents",
        defaultValue = "400000",
        description = "intents produced; default ${DEFAULT-VALUE}")
    int intents;

    @Option(
        names = "--repeats",
        defaultValue = "3",
        description = "runs of each size; default ${DEFAULT-VALUE}")
    int repeats;

    @Override
    public Integer call() throws Exception {
      return Bench.scaling(intents, repeats);
    }
  }

  @Command(
      name = "gateway",
      mixinStandardHelpOptions = true,
      description =
          "Calls through the HTTP gateway (HTTP/1.1 and HTTP/2) against the Java client, and many calls waiting on one gateway.")
  static final class GatewayOverhead implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin Points points;

    @Option(
        names = "--loads",
        split = ",",
        defaultValue = "500,2000",
        description = "offered loads, calls/s; default ${DEFAULT-VALUE}")
    List<Integer> loads;

    @Option(
        names = "--waiting",
        defaultValue = "10000",
        description = "calls waiting at once on one gateway; default ${DEFAULT-VALUE}")
    int waiting;

    @Option(
        names = "--fair-share",
        description =
            "instead: one tenant flooding at --flood-times its --limit while another calls at"
                + " --quiet calls/s, on a gateway with fair share and one without")
    boolean fairShare;

    @Option(
        names = "--limit",
        defaultValue = "100",
        description = "with --fair-share: each tenant's calls/s; default ${DEFAULT-VALUE}")
    int limit;

    @Option(
        names = "--flood-times",
        defaultValue = "10",
        description =
            "with --fair-share: the flood's rate in times the limit; default ${DEFAULT-VALUE}")
    int floodTimes;

    @Option(
        names = "--quiet",
        defaultValue = "50",
        description = "with --fair-share: the quiet tenant's calls/s; default ${DEFAULT-VALUE}")
    int quiet;

    @Option(
        names = "--rounds",
        defaultValue = "3",
        description = "with --fair-share: rounds; default ${DEFAULT-VALUE}")
    int rounds;

    @Override
    public Integer call() throws Exception {
      FairShareRun.Plan fair =
          fairShare
              ? new FairShareRun.Plan(
                  points.seconds, points.warmup, rounds, limit, floodTimes, quiet)
              : null;
      return GatewayBench.run(points.seconds, points.warmup, loads, waiting, fair, typed(spec));
    }
  }

  @Command(
      name = "latency",
      mixinStandardHelpOptions = true,
      description =
          "Intent to reply through the ledger and an executor, against the baseline's single hop.")
  static final class Latency implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin Points points;

    @Option(
        names = "--loads",
        split = ",",
        defaultValue = "500,2000,10000",
        description = "offered loads, intents/s; default ${DEFAULT-VALUE}")
    List<Integer> loads;

    @Option(
        names = "--intervals",
        split = ",",
        defaultValue = "100,20,5",
        description = "commit.interval.ms values; default ${DEFAULT-VALUE}")
    List<Integer> intervals;

    @Option(
        names = "--executor-intervals",
        split = ",",
        defaultValue = "0",
        description =
            "the executor's commit intervals (ms) to measure the ledger with, each on its own broker; 0: the"
                + " ledger's commit.interval.ms; default ${DEFAULT-VALUE}")
    List<Integer> executorIntervals;

    @Option(
        names = "--executor-min-interval",
        defaultValue = "10",
        description =
            "the executor's executor.commit.min.interval.ms: it commits a burst as soon as its effects are"
                + " done, at most this often; -1: only at its commit interval, as before 2026-11-27; default"
                + " ${DEFAULT-VALUE}, the executor's own")
    int executorMinInterval;

    @Option(
        names = "--rounds",
        defaultValue = "1",
        description =
            "measure every point this many times, round after round; the report gives each round and, per"
                + " point, the median of the rounds' ratios; default ${DEFAULT-VALUE}")
    int rounds;

    @Option(
        names = "--threads",
        defaultValue = "1",
        description =
            "stream threads of both sides' Kafka Streams; default ${DEFAULT-VALUE}, Kafka Streams' own, which"
                + " effectledger processor keeps unless num.stream.threads is set")
    int threads;

    @Option(
        names = "--executors",
        defaultValue = "1",
        description =
            "executors in one group behind the ledger (each a poll thread of its own); default"
                + " ${DEFAULT-VALUE}")
    int executors;

    @Option(
        names = "--against",
        description =
            "another checkout (its bench module built: ./mvnw -q -DskipTests -pl bench -am package):"
                + " after each round, the same points measured by its bench, on its own classpath")
    Path against;

    @Option(
        names = "--tracing",
        description =
            "instead: the ledger at the first --loads, 100 ms commits, with tracing off, at 1%"
                + " and at 100%, in turn every round")
    boolean tracing;

    @Override
    public Integer call() throws Exception {
      if (tracing) {
        return TracingBench.latency(
            points.seconds, points.warmup, loads.get(0), rounds, typed(spec));
      }
      return LatencyBench.run(
          new LatencyBench.Plan(
              points.seconds,
              points.warmup,
              loads,
              intervals,
              executorIntervals,
              executorMinInterval,
              threads,
              executors),
          rounds,
          against,
          typed(spec));
    }
  }

  @Command(
      name = "postgres",
      mixinStandardHelpOptions = true,
      description =
          "The ledger against per-request idempotency and the batched inbox on PostgreSQL, durable and relaxed.")
  static final class Postgres implements Callable<Integer> {
    @Mixin Workload workload;

    @Override
    public Integer call() throws Exception {
      return PostgresBench.run(workload.intents, workload.repeats);
    }
  }

  @Command(
      name = "state",
      mixinStandardHelpOptions = true,
      description =
          "Bytes per ledger entry on disk and in the changelog, restore time, purge cost in a small and a large store.")
  static final class State implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--keys",
        defaultValue = "10000000",
        description = "entries in the large store; default ${DEFAULT-VALUE}")
    long keys;

    @Option(
        names = "--expire",
        defaultValue = "1000000",
        description =
            "entries that expire in each store (the small store has only these); default ${DEFAULT-VALUE}")
    long expire;

    @Override
    public Integer call() throws Exception {
      return StateBench.run(keys, expire, typed(spec));
    }
  }

  @Command(
      name = "sustain",
      mixinStandardHelpOptions = true,
      description =
          "The ledger under a constant load (a share of its measured capacity) for many dedup windows: live"
              + " entries, disk, expiries and lag each minute, and whether they hold steady.")
  static final class Sustain implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--minutes",
        defaultValue = "10",
        description = "minutes under load; default ${DEFAULT-VALUE}")
    int minutes;

    @Option(
        names = "--window",
        defaultValue = "PT1M",
        converter = DurationConverter.class,
        description = "the tool's dedup window (1m, PT1M); default 1m")
    Duration window;

    @Option(
        names = "--load",
        defaultValue = "0.7",
        description = "share of the calibrated capacity; default ${DEFAULT-VALUE}")
    double load;

    @Option(
        names = "--rate",
        defaultValue = "0",
        description = "keys per second instead of calibrating (0: calibrate)")
    int rate;

    @Option(
        names = "--calibration-keys",
        defaultValue = "100000",
        description = "keys of the calibration; default ${DEFAULT-VALUE}")
    int calibrationKeys;

    @Override
    public Integer call() throws Exception {
      if (minutes < 4) {
        throw new ParameterException(
            spec.commandLine(),
            "--minutes must be at least 4: the first window"
                + " and purge pass before state can be steady");
      }
      return SustainBench.run(minutes, window, load, rate, calibrationKeys, typed(spec));
    }
  }

  /** Durations as tools.yaml writes them (30s, 15m, 24h, 7d) or ISO-8601 (PT15M). */
  static final class DurationConverter implements picocli.CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return Durations.parse(value)
          .orElseThrow(
              () ->
                  new picocli.CommandLine.TypeConversionException(
                      "'" + value + "' is not a duration; use e.g. 30s, 1m, 24h or PT1M"));
    }
  }

  @Command(
      name = "failover",
      mixinStandardHelpOptions = true,
      description =
          "Time from kill -9 of an executor or a processor to every partition answering again, with and without"
              + " stable instance ids, each part its own OS process.")
  static final class Failover implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--kills",
        defaultValue = "3",
        description = "kills per scenario; default ${DEFAULT-VALUE}")
    int kills;

    @Option(
        names = "--partitions",
        defaultValue = "8",
        description = "partitions of the ledger's topics; default ${DEFAULT-VALUE}")
    int partitions;

    @Option(
        names = "--rate",
        defaultValue = "50",
        description = "probe calls per second; default ${DEFAULT-VALUE}")
    int rate;

    @Option(
        names = "--entries",
        defaultValue = "0",
        description =
            "settled entries loaded into the ledger's changelog before the processors first start"
                + " (a store of that size to restore); default ${DEFAULT-VALUE}")
    long entries;

    // Split at commas not followed by a space: scenario names hold ", ".
    @Option(
        names = "--only",
        split = ",(?! )",
        description =
            "run only the scenarios whose names start with these (e.g. executor,processor)")
    List<String> only = List.of();

    @Override
    public Integer call() throws Exception {
      return FailoverBench.run(kills, partitions, rate, entries, only, typed(spec));
    }
  }
}
