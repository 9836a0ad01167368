package dev.effectledger.bench;

import dev.effectledger.bench.chaos.ChaosRun;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/**
 * {@code bench/run chaos [--actions N] [--agents A] [--mode keys|ignore-keys] [--seed S]
 * [--kill-every MIN-MAX seconds] [--fault-percent P] [--report]}: the chaos harness; exits 1 on any
 * violation, naming the keys.
 */
final class ChaosCommand {

  private static final String USAGE = "usage: bench/run chaos [--actions N] [--agents A] [--processors P] [--executors E]"
      + " [--mode keys|ignore-keys] [--seed S] [--kill-every MIN-MAX] [--fault-percent P] [--partitions N] [--max-faults F]"
      + " [--report]";

  private ChaosCommand() {}

  static int run(String[] args) throws Exception {
    int actions = 2_000;
    int agents = 4;
    int processors = 2;
    int executors = 2;
    boolean ignoreKeys = false;
    long seed = 20261122L;
    Duration minGap = Duration.ofSeconds(3);
    Duration maxGap = Duration.ofSeconds(5);
    int faultPercent = 12;
    int partitions = 8;
    int maxFaults = 0;
    boolean report = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--actions" -> actions = Integer.parseInt(args[++i]);
        case "--agents" -> agents = Integer.parseInt(args[++i]);
        case "--processors" -> processors = Integer.parseInt(args[++i]);
        case "--executors" -> executors = Integer.parseInt(args[++i]);
        case "--mode" -> ignoreKeys = switch (args[++i]) {
          case "keys" -> false;
          case "ignore-keys" -> true;
          default -> throw new IllegalArgumentException("--mode is keys or ignore-keys, not " + args[i]);
        };
        case "--seed" -> seed = Long.parseLong(args[++i]);
        case "--kill-every" -> {
          String[] range = args[++i].split("-");
          minGap = Duration.ofMillis((long) (Double.parseDouble(range[0]) * 1000));
          maxGap = range.length > 1 ? Duration.ofMillis((long) (Double.parseDouble(range[1]) * 1000)) : minGap;
        }
        case "--fault-percent" -> faultPercent = Integer.parseInt(args[++i]);
        case "--partitions" -> partitions = Integer.parseInt(args[++i]);
        case "--max-faults" -> maxFaults = Integer.parseInt(args[++i]);
        case "--report" -> report = true;
        default -> {
          System.err.println(USAGE);
          return 2;
        }
      }
    }
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    Path dir = Path.of("bench", "target", "chaos-" + stamp).toAbsolutePath();
    System.out.println("chaos: processes' logs in " + dir);
    ChaosRun.Options options = new ChaosRun.Options(agents, actions / agents, processors, executors, ignoreKeys, seed, minGap, maxGap,
        faultPercent, partitions, maxFaults, dir);
    ChaosRun.Result result = new ChaosRun(options).run();
    if (report) {
      write(options, result, String.join(" ", args));
    }
    return result.violations().isEmpty() ? 0 : 1;
  }

  private static void write(ChaosRun.Options o, ChaosRun.Result r, String args) throws IOException {
    Path file = Path.of("bench", "results", "chaos-" + (o.ignoreKeys() ? "ignore-keys-" : "") + LocalDate.now() + ".md");
    Files.createDirectories(file.getParent());
    String text = """
        # Chaos run, %s

        Command: `bench/run chaos %s`

        Machine: %d cores, %d MiB max heap for the harness, Java %s, %s.

        | figure | value |
        | --- | --- |
        | mode | %s |
        | logical actions | %,d (%,d steps: every 50th action is meant to run twice) |
        | agents / processors / executors (separate OS processes) | %d / %d / %d |
        | brokers | 3 (replication 3, min.insync.replicas 2), in their own process |
        | faulty keys at the payment API | %d%% (503 before, or held / dropped / 500 after the effect) |
        | kill -9 of a processor or executor | %d |
        | kill -9 of an agent (replayed from its answers file) | %d |
        | broker stopped and restarted | %d |
        | effects at the payment API | %,d |
        | steps with a final answer | %,d of %,d |
        | intents published / replies (each intent has at least one) | %,d / %,d |
        | keys held as UNKNOWN on the way | %,d |
        | reconciler at the end | %s |
        | wall time | %d s |
        | violations | %d |

        %s
        """.formatted(LocalDate.now(), args, Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20,
        System.getProperty("java.version"), System.getProperty("os.name"), o.ignoreKeys() ? "payment API ignores keys" : "payment API honours Idempotency-Key",
        r.actions(), r.steps(), o.agents(), o.processors(), o.executors(), o.faultPercent(), r.processKills(), r.agentKills(),
        r.brokerStops(), r.effects(), r.answered(), r.steps(), r.intents(), r.replies(), r.heldUnknown(), r.reconciliation(), r.seconds(),
        r.violations().size(), r.violations().isEmpty() ? "No violation." : "Violations:\n\n- " + String.join("\n- ", r.violations()));
    Files.writeString(file, text);
    System.out.println("chaos: report written to " + file);
  }
}
