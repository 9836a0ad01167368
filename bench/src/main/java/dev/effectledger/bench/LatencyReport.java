package dev.effectledger.bench;

import dev.effectledger.bench.LatencyBench.Point;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.List;

/**
 * The report of {@code bench/run latency}: the hops of each point, the baseline beside the ledger.
 */
final class LatencyReport {

  private LatencyReport() {}

  static void write(List<Point> points, int warmup, int seconds, String command) throws Exception {
    StringBuilder md =
        new StringBuilder("# Latency: intent to reply, against the baseline's single hop\n\n");
    md.append("Command: `").append(command).append("`  \n");
    md.append(Bench.machine()).append("  \n");
    md.append(
            "Each point on a fresh embedded broker, 8 partitions, exactly_once_v2, 2 stream threads, producer linger.ms=0;"
                + " unique keys sent at a fixed rate for ")
        .append(warmup)
        .append(" s of warm-up (excluded) and ")
        .append(seconds)
        .append(
            " s measured; latency from send to the first committed answer (read_committed). The ledger's reply crosses"
                + " the ledger (dispatch), the executor (kafka connector, no I/O; its commit interval set to the same value)"
                + ", which publishes the reply in the outcome's transaction: two transactional commits (the"
                + " ledger's completion follows, off the reply's path; its hop below is the reply's lag behind"
                + " the outcome, about zero).\n\n");
    md.append(
        "| commit.interval.ms | offered load /s | baseline p50 / p99 / p99.9 ms | ledger p50 / p99 / p99.9 ms"
            + " | ledger p99 / baseline p99 | target |\n| ---: | ---: | --- | --- | ---: | --- |\n");
    for (int i = 0; i + 1 < points.size(); i += 2) {
      Point b = points.get(i);
      Point l = points.get(i + 1);
      md.append(
          String.format(
              "| %d | %,d | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f | <= 2.0 |%n",
              b.commitMs(),
              b.load(),
              b.p50(),
              b.p99(),
              b.p999(),
              l.p50(),
              l.p99(),
              l.p999(),
              l.p99() / b.p99()));
    }
    md.append(
        "\nWhere the ledger's time goes: each hop's p50 / p99 in ms, from the time the same read_committed reader"
            + " first saw the key on the dispatch topic, on tool-outcomes and on tool-results (keys whose three records it saw"
            + " in order; the reader's own poll adds up to a few ms to each).\n\n| commit.interval.ms | offered load /s |");
    LatencyBench.HOPS.forEach(h -> md.append(' ').append(h).append(" |"));
    md.append(" sum of p50s / end-to-end p50 |\n| ---: | ---: |")
        .append(" --- |".repeat(LatencyBench.HOPS.size()))
        .append(" --- |\n");
    for (Point l : points) {
      if (l.hops().isEmpty()) {
        continue;
      }
      md.append(String.format("| %d | %,d |", l.commitMs(), l.load()));
      double sum = 0;
      for (double[] hop : l.hops()) {
        md.append(String.format(" %.1f / %.1f |", hop[0], hop[1]));
        sum += hop[0];
      }
      md.append(String.format(" %.1f / %.1f |%n", sum, l.p50()));
    }
    md.append(
        "\nThe proposed change (the executor publishes the reply in the outcome's transaction) would make the"
            + " reply visible when the outcome is: send to the first committed outcome, measured in the same runs, against"
            + " the baseline's single hop.\n\n| commit.interval.ms | offered load /s | baseline p99 ms"
            + " | ledger to committed outcome p50 / p99 / p99.9 ms | to outcome p99 / baseline p99 | target |\n"
            + "| ---: | ---: | ---: | --- | ---: | --- |\n");
    for (int i = 0; i + 1 < points.size(); i += 2) {
      Point b = points.get(i);
      double[] o = points.get(i + 1).toLastStage();
      md.append(
          String.format(
              "| %d | %,d | %.1f | %.1f / %.1f / %.1f | %.2f | <= 2.0 |%n",
              b.commitMs(), b.load(), b.p99(), o[0], o[1], o[2], o[1] / b.p99()));
    }
    md.append("\nAnswered of sent (measured window): ");
    points.forEach(
        p ->
            md.append(
                String.format(
                    "%s@%d/%d: %,d/%,d; ",
                    p.side().split(" ")[0], p.commitMs(), p.load(), p.answered(), p.sent())));
    md.append("\n");
    Path chart =
        Charts.latency(points, Path.of("bench/results/latency-" + LocalDate.now() + ".png"));
    md.append("\n![p99 latency by offered load](").append(chart.getFileName()).append(")\n");
    Bench.writeReport("latency", md);
  }
}
