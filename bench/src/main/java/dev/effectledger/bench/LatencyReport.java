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
            "Each point on a fresh embedded broker, 8 partitions, exactly_once_v2, 2 stream threads, each side's producers on their own settings (Kafka Streams' linger.ms of 100 ms for the baseline, the ledger's 100 ms, the executor's Kafka default), the load's producer at linger.ms=0;"
                + " unique keys sent at a fixed rate for ")
        .append(warmup)
        .append(" s of warm-up (excluded) and ")
        .append(seconds)
        .append(
            " s measured; latency from send to the first committed answer (read_committed). The ledger's reply crosses"
                + " the ledger (dispatch) and the executor (kafka connector, no I/O), which publishes the reply in the"
                + " outcome's transaction: two transactional commits (the ledger's completion follows, off the reply's"
                + " path; its hop below is the reply's lag behind the outcome, about zero). The ledger side is"
                + " measured once per executor commit interval, each on its own fresh broker.\n\n");
    md.append(
        "| commit.interval.ms | offered load /s | executor commits every | baseline p50 / p99 / p99.9 ms"
            + " | ledger p50 / p99 / p99.9 ms | ledger p99 / baseline p99 | target |\n"
            + "| ---: | ---: | ---: | --- | --- | ---: | --- |\n");
    Point baseline = null;
    for (Point p : points) {
      if (p.executorMs() == 0) {
        baseline = p;
        continue;
      }
      md.append(
          String.format(
              "| %d | %,d | %d ms | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f | <= 2.0 |%n",
              p.commitMs(),
              p.load(),
              p.executorMs(),
              baseline.p50(),
              baseline.p99(),
              baseline.p999(),
              p.p50(),
              p.p99(),
              p.p999(),
              p.p99() / baseline.p99()));
    }
    md.append(
        "\nWhere the ledger's time goes: each hop's p50 / p99 in ms, from the time the same read_committed reader"
            + " first saw the key on the dispatch topic, on tool-outcomes and on tool-results (keys whose three records it saw"
            + " in order; the reader's own poll adds up to a few ms to each).\n\n"
            + "| commit.interval.ms | offered load /s | executor commits every |");
    LatencyBench.HOPS.forEach(h -> md.append(' ').append(h).append(" |"));
    md.append(" sum of p50s / end-to-end p50 |\n| ---: | ---: | ---: |")
        .append(" --- |".repeat(LatencyBench.HOPS.size()))
        .append(" --- |\n");
    for (Point l : points) {
      if (l.hops().isEmpty()) {
        continue;
      }
      md.append(String.format("| %d | %,d | %d ms |", l.commitMs(), l.load(), l.executorMs()));
      double sum = 0;
      for (double[] hop : l.hops()) {
        md.append(String.format(" %.1f / %.1f |", hop[0], hop[1]));
        sum += hop[0];
      }
      md.append(String.format(" %.1f / %.1f |%n", sum, l.p50()));
    }
    md.append(
        "\nThe Kafka Streams side's commits in the measured window (the baseline's topology; the ledger's, not"
            + " its executor's), from the totals of its stream threads and producers: commits (all threads),"
            + " records sent per commit, milliseconds per commit flushing the producer, adding the offsets and"
            + " committing the transaction, punctuations per second, and the threads' time blocked on Kafka"
            + " (polls and commits) in ms per second; then the longest commit and punctuation of any"
            + " thread (Kafka Streams' windowed maxima, which may reach back into the warm-up).\n\n"
            + "| commit.interval.ms | offered load /s | side | commits | records per commit |"
            + " flush ms | offsets ms | commit ms | punctuations /s | blocked ms/s | longest commit ms |"
            + " longest punctuation ms |\n"
            + "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (Point p : points) {
      CommitProfile c = p.commits();
      md.append(
          String.format(
              "| %d | %,d | %s | %,d | %.0f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f |%n",
              p.commitMs(),
              p.load(),
              p.executorMs() == 0 ? "baseline" : "ledger (executor " + p.executorMs() + " ms)",
              c.commits(),
              c.recordsPerCommit(),
              c.flushMs(),
              c.offsetsMs(),
              c.commitMs(),
              c.punctuationsPerSecond(),
              c.blockedMsPerSecond(),
              c.longestCommitMs(),
              c.longestPunctuationMs()));
    }
    md.append("\nAnswered of sent (measured window): ");
    points.forEach(
        p ->
            md.append(
                String.format(
                    "%s@%d/%d: %,d/%,d; ",
                    p.executorMs() == 0 ? "baseline" : "ledger(executor " + p.executorMs() + " ms)",
                    p.commitMs(),
                    p.load(),
                    p.answered(),
                    p.sent())));
    md.append("\n");
    Path chart =
        Charts.latency(points, Path.of("bench/results/latency-" + LocalDate.now() + ".png"));
    md.append("\n![p99 latency by offered load](").append(chart.getFileName()).append(")\n");
    Bench.writeReport("latency", md);
  }
}
