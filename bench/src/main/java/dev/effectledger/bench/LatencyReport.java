package dev.effectledger.bench;

import dev.effectledger.bench.LatencyBench.Point;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The report of {@code bench/run latency}: the hops of each point, the baseline beside the ledger.
 */
final class LatencyReport {

  private LatencyReport() {}

  /** The target: the ledger's p99 at most this many times the baseline's. */
  static final double TARGET = 2.0;

  /** Writes the report of {@code rounds}, each a list of every point measured once. */
  static void write(
      List<List<Point>> rounds,
      List<List<Point>> theirs,
      String against,
      LatencyBench.Plan plan,
      String command)
      throws Exception {
    int warmup = plan.warmup();
    int seconds = plan.seconds();
    int executorMinMs = plan.executorMinMs();
    StringBuilder md =
        Bench.reportHead("Latency: intent to reply, against the baseline's single hop", command);
    md.append("  \n");
    md.append(
            "Each point on a fresh embedded broker, 8 partitions, exactly_once_v2, "
                + plan.threads()
                + " stream thread(s) on each side, "
                + plan.executors()
                + " executor(s) in one group on the ledger's, each side's producers on their own settings (Kafka Streams' linger.ms of 100 ms for the baseline, the ledger's 100 ms, the executor's Kafka default), the load's producer at linger.ms=0;"
                + " unique keys sent at a fixed rate for ")
        .append(warmup)
        .append(" s of warm-up (excluded) and ")
        .append(seconds)
        .append(
            " s measured; latency from send to the first committed answer (read_committed). The ledger's reply crosses"
                + " the ledger (dispatch) and the executor (kafka connector, no I/O), which publishes the reply in the"
                + " outcome's transaction: two transactional commits (the ledger's completion follows, off the reply's"
                + " path; its hop below is the reply's lag behind the outcome, about zero). The ledger side is"
                + " measured once per executor commit interval, each on its own fresh broker; the executor "
                + (executorMinMs < 0
                    ? "commits only at its commit interval"
                    : "commits a burst as soon as its effects are done, at most every "
                        + executorMinMs
                        + " ms (executor.commit.min.interval.ms; at or above its commit interval: only"
                        + " at that interval)")
                + ". Before the"
                + " points counted, the first point of both sides ran once, not counted (warm-up of the"
                + " JVM).\n\n");
    if (rounds.size() == 1) {
      tables(md, rounds.get(0));
    } else {
      summary(md, rounds);
      for (int r = 0; r < rounds.size(); r++) {
        md.append("\n## Round ").append(r + 1).append("\n\n");
        tables(md, rounds.get(r));
      }
    }
    if (against != null) {
      md.append('\n');
      againstTable(md, rounds, theirs, against);
    }
    Path base = Bench.reportBase("latency");
    Path chart = Charts.latency(medians(rounds), Path.of(base + ".png"));
    md.append("\n![p99 latency by offered load")
        .append(rounds.size() == 1 ? "" : ", the median of the rounds")
        .append("](")
        .append(chart.getFileName())
        .append(")\n");
    Bench.writeReport(base, md);
  }

  /**
   * Per point: each round's baseline and ledger p99 and their ratio (each round's ledger against
   * the baseline measured just before it), the median ratio, and in how many rounds it met the
   * target.
   */
  static void summary(StringBuilder md, List<List<Point>> rounds) {
    md.append(rounds.size())
        .append(
            " rounds, each measuring every point once, round after round. Per point, each round's p99 in ms"
                + " and ledger p99 / baseline p99 of that round, then the median of the rounds' ratios.\n\n")
        .append(
            "| commit.interval.ms | offered load /s | executor commits every | baseline p99, each round |"
                + " ledger p99, each round | ratio, each round | median ratio | rounds at or under "
                + TARGET
                + " |\n| ---: | ---: | ---: | --- | --- | --- | ---: | ---: |\n");
    List<Point> first = rounds.get(0);
    for (int i = 0; i < first.size(); i++) {
      if (first.get(i).executorMs() == 0) {
        continue;
      }
      List<String> baselines = new ArrayList<>();
      List<String> ledgers = new ArrayList<>();
      List<Double> ratios = new ArrayList<>();
      for (List<Point> round : rounds) {
        Point ledger = round.get(i);
        Point baseline = baselineOf(round, i);
        baselines.add(String.format("%.1f", baseline.p99()));
        ledgers.add(String.format("%.1f", ledger.p99()));
        ratios.add(ledger.p99() / baseline.p99());
      }
      Point p = first.get(i);
      md.append(
          String.format(
              "| %d | %,d | %d ms | %s | %s | %s | %.2f | %d of %d |%n",
              p.commitMs(),
              p.load(),
              p.executorMs(),
              String.join(", ", baselines),
              String.join(", ", ledgers),
              String.join(", ", ratios.stream().map(r -> String.format("%.2f", r)).toList()),
              median(ratios),
              ratios.stream().filter(r -> r <= TARGET).count(),
              ratios.size()));
    }
  }

  /**
   * This build's ledger beside another's ({@code --against}), round by round: each side's p99 and
   * this build's p99 over the other's, with the median; and each side's baseline p99, which moves
   * with the machine and with each build's Kafka.
   */
  static void againstTable(
      StringBuilder md, List<List<Point>> rounds, List<List<Point>> theirs, String against) {
    md.append("## Beside ")
        .append(against)
        .append(
            "\n\nAfter each round, the same points measured by that checkout's bench on its own")
        .append(
            " classpath (its Kafka among it), in a JVM of its own. Per point and round: the p99 in ms")
        .append(
            " of this build's ledger and of that one's, this build's over that one's (target: at most ")
        .append(String.format("%.2f", UPGRADE_TARGET))
        .append(", i.e. no worse than 0.9 of it), and each side's baseline p99.\n\n")
        .append(
            "| commit.interval.ms | offered load /s | executor commits every | this build's ledger p99 |"
                + " that build's ledger p99 | this / that, each round | median | this build's baseline p99 |"
                + " that build's baseline p99 |\n| ---: | ---: | ---: | --- | --- | --- | ---: | --- | --- |\n");
    List<Point> first = rounds.get(0);
    for (int i = 0; i < first.size(); i++) {
      Point p = first.get(i);
      if (p.executorMs() == 0) {
        continue;
      }
      List<String> ours = new ArrayList<>();
      List<String> others = new ArrayList<>();
      List<String> ourBaselines = new ArrayList<>();
      List<String> otherBaselines = new ArrayList<>();
      List<Double> ratios = new ArrayList<>();
      for (int r = 0; r < rounds.size(); r++) {
        Point mine = rounds.get(r).get(i);
        Point other = theirs.get(r).get(i);
        ours.add(String.format("%.1f", mine.p99()));
        others.add(String.format("%.1f", other.p99()));
        ourBaselines.add(String.format("%.1f", baselineOf(rounds.get(r), i).p99()));
        otherBaselines.add(String.format("%.1f", baselineOf(theirs.get(r), i).p99()));
        ratios.add(mine.p99() / other.p99());
      }
      md.append(
          String.format(
              "| %d | %,d | %d ms | %s | %s | %s | %.2f | %s | %s |%n",
              p.commitMs(),
              p.load(),
              p.executorMs(),
              String.join(", ", ours),
              String.join(", ", others),
              String.join(", ", ratios.stream().map(x -> String.format("%.2f", x)).toList()),
              median(ratios),
              String.join(", ", ourBaselines),
              String.join(", ", otherBaselines)));
    }
  }

  /** This build's p99 over the build it upgrades from: at most 1 / 0.9. */
  static final double UPGRADE_TARGET = 1 / 0.9;

  /** The baseline measured before the ledger point at {@code index} of {@code round}. */
  private static Point baselineOf(List<Point> round, int index) {
    for (int j = index; j >= 0; j--) {
      if (round.get(j).executorMs() == 0) {
        return round.get(j);
      }
    }
    throw new IllegalStateException("no baseline before point " + index);
  }

  static double median(List<Double> values) {
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /**
   * Each point with its p50, p99 and p99.9 the medians of the rounds' (for the chart); its other
   * figures (counts, hops, commits) are the first round's.
   */
  static List<Point> medians(List<List<Point>> rounds) {
    List<Point> first = rounds.get(0);
    List<Point> out = new ArrayList<>();
    for (int i = 0; i < first.size(); i++) {
      int at = i;
      Point p = first.get(i);
      out.add(
          new Point(
              p.commitMs(),
              p.executorMs(),
              p.load(),
              p.side(),
              p.sent(),
              p.answered(),
              median(rounds.stream().map(r -> r.get(at).p50()).toList()),
              median(rounds.stream().map(r -> r.get(at).p99()).toList()),
              median(rounds.stream().map(r -> r.get(at).p999()).toList()),
              p.hops(),
              p.toLastStage(),
              p.commits(),
              p.executorCommitsPerSecond(),
              p.cpu()));
    }
    return out;
  }

  /** The tables of one round: the ratios, the ledger's hops, both sides' commits. */
  static void tables(StringBuilder md, List<Point> points) {
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
              "| %d | %,d | %d ms | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f | <= %.1f |%n",
              p.commitMs(),
              p.load(),
              p.executorMs(),
              baseline.p50(),
              baseline.p99(),
              baseline.p999(),
              p.p50(),
              p.p99(),
              p.p999(),
              p.p99() / baseline.p99(),
              TARGET));
    }
    md.append(
        "\nWhere the ledger's time goes: each hop's p50 / p99 in ms, from the time the same read_committed reader"
            + " first saw the key on the dispatch topic, on tool-outcomes and on tool-results (keys whose three records it saw"
            + " in order; the reader's own poll adds up to a few ms to each); last, the executor's transactions per"
            + " second in the measured window.\n\n"
            + "| commit.interval.ms | offered load /s | executor commits every |");
    LatencyBench.HOPS.forEach(h -> md.append(' ').append(h).append(" |"));
    md.append(" sum of p50s / end-to-end p50 | executor transactions /s |\n| ---: | ---: | ---: |")
        .append(" --- |".repeat(LatencyBench.HOPS.size()))
        .append(" --- | ---: |\n");
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
      md.append(
          String.format(" %.1f / %.1f | %.0f |%n", sum, l.p50(), l.executorCommitsPerSecond()));
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
    md.append(
        "\nWhere the CPU went in the measured window, in ms per second (every part of a point runs in"
            + " the bench's one JVM, so the process is the machine but for the OS; "
            + Runtime.getRuntime().availableProcessors()
            + " cores are "
            + Runtime.getRuntime().availableProcessors() * 1000
            + " ms/s): from the threads' CPU clocks, grouped by part; the broker is every thread not"
            + " named as another part's, the JVM's own the process's CPU less its Java threads'"
            + " (garbage collection, the JIT compilers).\n\n"
            + "| commit.interval.ms | offered load /s | side | process |");
    CpuSplit.PARTS.forEach(part -> md.append(' ').append(part).append(" |"));
    md.append("\n| ---: | ---: | --- | ---: |").append(" ---: |".repeat(CpuSplit.PARTS.size()));
    md.append('\n');
    for (Point p : points) {
      md.append(
          String.format(
              "| %d | %,d | %s | %.0f |",
              p.commitMs(),
              p.load(),
              p.executorMs() == 0 ? "baseline" : "ledger (executor " + p.executorMs() + " ms)",
              p.cpu().processPerSecond()));
      CpuSplit.PARTS.forEach(
          part -> md.append(String.format(" %.0f |", p.cpu().perSecond().getOrDefault(part, 0.0))));
      md.append('\n');
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
  }
}
