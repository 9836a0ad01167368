package dev.effectledger.bench;

import dev.effectledger.bench.chaos.ChaosResult;
import dev.effectledger.bench.chaos.ChaosRun;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code bench/run chaos}: the chaos harness; exits 1 on any violation, naming the keys. */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    description =
        "Kill every moving part of a ledger under an agent workload and count effects per logical action.")
final class ChaosCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--actions",
      defaultValue = "2000",
      description = "logical actions, shared by the agents; default ${DEFAULT-VALUE}")
  int actions;

  @Option(
      names = "--agents",
      defaultValue = "4",
      description = "agent processes; default ${DEFAULT-VALUE}")
  int agents;

  @Option(
      names = "--processors",
      defaultValue = "2",
      description = "processor processes; default ${DEFAULT-VALUE}")
  int processors;

  @Option(
      names = "--executors",
      defaultValue = "2",
      description = "executor processes; default ${DEFAULT-VALUE}")
  int executors;

  @Option(
      names = "--mode",
      defaultValue = "keys",
      description =
          "keys: the payment API honours Idempotency-Key; ignore-keys: it acts on every request; default ${DEFAULT-VALUE}")
  String mode;

  @Option(
      names = "--seed",
      defaultValue = "20261122",
      description = "seed of the workload and the fault schedule; default ${DEFAULT-VALUE}")
  long seed;

  @Option(
      names = "--kill-every",
      defaultValue = "3-5",
      paramLabel = "MIN-MAX",
      description =
          "seconds between faults, counted from when every processor is ready again; default ${DEFAULT-VALUE}")
  String killEvery;

  @Option(
      names = "--fault-mix",
      defaultValue = ChaosRun.FAULT_MIX,
      description =
          "share of keys meeting each fault of the payment API on their first request (see effectledger downstream"
              + " --help); default ${DEFAULT-VALUE}")
  String faultMix;

  @Option(
      names = "--single-broker",
      description =
          "one Kafka broker with its data on disk, killed with -9 as the broker fault, instead of 3 brokers stopped in turn")
  boolean singleBroker;

  @Option(
      names = "--executor-concurrency",
      defaultValue = "32",
      description = "effects at once per executor; default ${DEFAULT-VALUE}")
  int executorConcurrency;

  @Option(
      names = "--partitions",
      defaultValue = "8",
      description = "partitions of the ledger's topics; default ${DEFAULT-VALUE}")
  int partitions;

  @Option(
      names = "--max-faults",
      defaultValue = "0",
      description = "stop injecting after this many faults (0: no limit); default ${DEFAULT-VALUE}")
  int maxFaults;

  @Option(
      names = "--min-workload",
      defaultValue = "0s",
      converter = BenchCommand.DurationConverter.class,
      description =
          "the least time the agents take to send every step once, so faults meet a running"
              + " workload on a fast machine (e.g. 90s); with --max-faults, each agent's last step"
              + " also waits until the faults are in; default ${DEFAULT-VALUE}: as fast as they can")
  Duration minWorkload;

  @Option(
      names = "--pending-timeout",
      defaultValue = "2m",
      converter = BenchCommand.DurationConverter.class,
      description =
          "the charge tool's pendingTimeout; default ${DEFAULT-VALUE}, config/tools.yaml's")
  Duration pendingTimeout;

  @Option(
      names = "--reconcile-min-age",
      defaultValue = "1m",
      converter = BenchCommand.DurationConverter.class,
      description =
          "the reconciler's --min-age; default ${DEFAULT-VALUE}, effectledger reconcile's default")
  Duration reconcileMinAge;

  @Option(
      names = "--reconcile-every",
      defaultValue = "5s",
      converter = BenchCommand.DurationConverter.class,
      description = "the reconciler's schedule; default ${DEFAULT-VALUE}")
  Duration reconcileEvery;

  @Option(
      names = "--outage",
      defaultValue = "0s",
      converter = BenchCommand.DurationConverter.class,
      description =
          "once, every executor killed with -9 and kept down this long while the agents go on (make"
              + " it longer than the pending timeout, the min age and a pass together to let the"
              + " reconciler release keys whose dispatches wait on the lane); default ${DEFAULT-VALUE}")
  Duration outage;

  @Option(names = "--report", description = "write bench/results/chaos-<date>.md")
  boolean report;

  @Override
  public Integer call() throws Exception {
    boolean ignoreKeys =
        switch (mode) {
          case "keys" -> false;
          case "ignore-keys" -> true;
          default ->
              throw new ParameterException(
                  spec.commandLine(), "--mode is keys or ignore-keys, not " + mode);
        };
    String[] range = killEvery.split("-");
    Duration minGap;
    Duration maxGap;
    try {
      minGap = Duration.ofMillis((long) (Double.parseDouble(range[0]) * 1000));
      maxGap =
          range.length > 1
              ? Duration.ofMillis((long) (Double.parseDouble(range[1]) * 1000))
              : minGap;
    } catch (NumberFormatException e) {
      throw new ParameterException(
          spec.commandLine(), "--kill-every is MIN-MAX seconds, e.g. 5-10, not " + killEvery);
    }
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    Path dir = Path.of("bench", "target", "chaos-" + stamp).toAbsolutePath();
    System.out.println("chaos: processes' logs in " + dir);
    ChaosRun.Options options =
        new ChaosRun.Options(
            agents,
            actions / agents,
            processors,
            executors,
            ignoreKeys,
            singleBroker,
            executorConcurrency,
            faultMix,
            seed,
            minGap,
            maxGap,
            partitions,
            maxFaults,
            dir,
            minWorkload,
            new ChaosRun.Timing(pendingTimeout, reconcileMinAge, reconcileEvery, outage));
    ChaosResult result = new ChaosRun(options).run();
    if (report) {
      write(options, result, BenchCommand.typed(spec));
    }
    return result.violations().isEmpty() ? 0 : 1;
  }

  private static void write(ChaosRun.Options o, ChaosResult r, String command) throws IOException {
    Path file =
        Path.of(
            Bench.reportBase(
                    "chaos"
                        + (o.ignoreKeys() ? "-ignore-keys" : "")
                        + (o.singleBroker() ? "-single-broker" : ""))
                + ".md");
    Files.createDirectories(file.getParent());
    String text =
        """
        # Chaos run, %s

        Command: `%s`

        Machine: %d cores, %d MiB max heap for the harness, Java %s, %s.

        | figure | value |
        | --- | --- |
        | mode | %s |
        | logical actions | %,d (%,d steps: every 50th action is meant to run twice) |
        | agents / processors / executors (separate OS processes) | %d / %d / %d |
        | effects at once per executor | %d |
        | Kafka | %s |
        | payment API faults (share of keys, first request) | %s; hang 12 s, slow 1 s |
        | kill -9 of a processor or executor | %d |
        | requests in flight at the payment API at each executor kill | %s |
        | kill -9 of an agent (replayed from its answers file) | %d |
        | broker faults | %d |
        | processes restarted after exiting on their own | %d |
        | effects at the payment API | %,d |
        | actions with more effects than meant | %,d |
        | double effects audited by the ledger | %,d |
        | steps with a final answer | %,d of %,d |
        | intents published / replies (each intent has at least one) | %,d / %,d |
        | keys held as UNKNOWN on the way | %,d |
        | of them held when their pending timeout passed | %,d |
        | reconciler at the end | %s |
        | reconciler resolutions replayed late, as the key's next life was dispatched | %,d |
        | transaction markers a coordinator skipped (partition leader unknown after a restart) | %,d |
        | wall time | %d s |
        | violations | %d |

        %s
        """
            .formatted(
                LocalDate.now(),
                command,
                Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() >> 20,
                System.getProperty("java.version"),
                System.getProperty("os.name"),
                o.ignoreKeys() ? "payment API ignores keys" : "payment API honours Idempotency-Key",
                r.actions(),
                r.steps(),
                o.agents(),
                o.processors(),
                o.executors(),
                o.executorConcurrency(),
                o.singleBroker()
                    ? "1 broker with its data on disk, killed with -9 and restarted as the broker fault"
                    : "3 brokers (replication 3, min.insync.replicas 2), in their own process, stopped and restarted in turn",
                o.faultMix(),
                r.processKills(),
                r.inFlightAtExecutorKills(),
                r.agentKills(),
                r.brokerFaults(),
                r.selfExits(),
                r.effects(),
                r.doubleEffects(),
                r.doubleEffectAudits(),
                r.answered(),
                r.steps(),
                r.intents(),
                r.replies(),
                r.heldUnknown(),
                r.heldAfterPendingTimeout(),
                r.reconciliation(),
                r.staleResolutionsReplayed(),
                r.skippedMarkers(),
                r.seconds(),
                r.violations().size(),
                r.violations().isEmpty()
                    ? "No violation."
                    : "Violations:\n\n- " + String.join("\n- ", r.violations()));
    Files.writeString(file, text);
    System.out.println("chaos: report written to " + file);
  }
}
