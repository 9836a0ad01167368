package dev.effectledger.bench;

import dev.effectledger.bench.LatencyBench.Point;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * {@code bench/run latency --against DIR}: the same points measured by another checkout's bench
 * (its bench module built), in a JVM of its own on that build's classpath (its Kafka among it),
 * round after round beside this build's: a release's latency beside the one before it on the same
 * machine minutes apart. Its report's first table is read back from the report file it names, and
 * its points must be this build's, in the same order.
 */
final class LatencyAgainst {

  private LatencyAgainst() {}

  /**
   * The other build's bench, run once for every point; its points, its baselines among them, which
   * must be those of {@code ours} (this build's round), in the same order.
   */
  static List<Point> round(Path dir, LatencyBench.Plan plan, List<Point> ours)
      throws IOException, InterruptedException {
    List<String> command =
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx4g",
            "-cp",
            ThroughputWorkers.classpathOf(dir),
            "dev.effectledger.bench.Bench",
            "latency",
            "--seconds=" + plan.seconds(),
            "--warmup=" + plan.warmup(),
            "--loads=" + join(plan.loads()),
            "--intervals=" + join(plan.intervals()),
            "--executor-intervals=" + join(plan.executorIntervals()),
            "--executor-min-interval=" + plan.executorMinMs(),
            "--threads=" + plan.threads());
    Process process =
        new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    List<String> lines = new ArrayList<>();
    Path report = null;
    try (BufferedReader out =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = out.readLine()) != null; ) {
        lines.add(line);
        if (line.startsWith("[bench] commit.interval.ms=")) {
          Bench.say("against: " + line.substring("[bench] ".length()));
        } else if (line.startsWith(REPORT_WRITTEN)) {
          report = dir.resolve(line.substring(REPORT_WRITTEN.length()).trim());
        }
      }
    } finally {
      process.destroy(); // its output ended: it has exited or it is being given up on
    }
    if (process.waitFor() != 0 || report == null) {
      throw new IOException(
          "the bench of "
              + dir
              + " failed or wrote no report; its last lines:\n"
              + String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size())));
    }
    // its report file, not its output, where a log line could land inside the table
    List<Point> points = points(Files.readAllLines(report));
    if (!keys(points).equals(keys(ours))) {
      throw new IOException(
          "the bench of "
              + dir
              + " measured "
              + keys(points)
              + ", not this build's "
              + keys(ours)
              + ": "
              + report);
    }
    return points;
  }

  private static final String REPORT_WRITTEN = "[bench] report written to ";

  /** The (commit interval, load, executor interval) of each point, in order. */
  static List<String> keys(List<Point> points) {
    return points.stream()
        .map(p -> p.commitMs() + "/" + p.load() + "/" + p.executorMs())
        .collect(Collectors.toList());
  }

  /**
   * The points of a latency report's first table, one row a ledger point with the baseline measured
   * before it: for each row a baseline point (executor 0) and a ledger point, in the order this
   * build's bench lists its own. Only p50, p99 and p99.9 are known; the other figures are empty.
   */
  static List<Point> points(List<String> report) {
    List<Point> points = new ArrayList<>();
    Point baselineBefore = null;
    boolean inTable = false;
    for (String line : report) {
      if (line.startsWith("| commit.interval.ms | offered load /s | executor commits every |")
          && line.contains("baseline p50")) {
        inTable = true;
        continue;
      }
      if (!inTable || line.startsWith("| ---")) {
        continue;
      }
      if (!line.startsWith("|")) {
        break;
      }
      String[] cells = line.split("\\|");
      int commitMs = Integer.parseInt(cells[1].trim());
      int load = Integer.parseInt(cells[2].trim().replace(",", ""));
      int executorMs = Integer.parseInt(cells[3].trim().replace(" ms", ""));
      double[] baseline = percentiles(cells[4]);
      double[] ledger = percentiles(cells[5]);
      if (baselineBefore == null
          || baselineBefore.commitMs() != commitMs
          || baselineBefore.load() != load) {
        baselineBefore = point(commitMs, 0, load, "baseline", baseline);
        points.add(baselineBefore);
      }
      points.add(point(commitMs, executorMs, load, "ledger", ledger));
    }
    if (points.isEmpty()) {
      throw new IllegalArgumentException("no latency table in the other build's output");
    }
    return points;
  }

  private static Point point(int commitMs, int executorMs, int load, String side, double[] p) {
    return new Point(
        commitMs,
        executorMs,
        load,
        side,
        0,
        0,
        p[0],
        p[1],
        p[2],
        List.of(),
        new double[0],
        CommitProfile.NONE,
        0,
        CpuSplit.NONE);
  }

  private static double[] percentiles(String cell) {
    String[] parts = cell.trim().split(" / ");
    return new double[] {
      Double.parseDouble(parts[0]), Double.parseDouble(parts[1]), Double.parseDouble(parts[2])
    };
  }

  private static String join(List<Integer> values) {
    return values.stream().map(String::valueOf).collect(Collectors.joining(","));
  }
}
