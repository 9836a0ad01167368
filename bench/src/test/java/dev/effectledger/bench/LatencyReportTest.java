package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.effectledger.bench.LatencyBench.Point;
import java.util.List;
import org.junit.jupiter.api.Test;

class LatencyReportTest {

  @Test
  void shouldTakeTheMiddleValueOrTheMeanOfTheTwoMiddleOnes() {
    assertThat(LatencyReport.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
    assertThat(LatencyReport.median(List.of(4.0, 1.0, 3.0, 2.0))).isEqualTo(2.5);
  }

  @Test
  void shouldPairEachRoundsLedgerWithThatRoundsBaselineAndCountTheRoundsThatMetTheTarget() {
    List<List<Point>> rounds =
        List.of(
            List.of(baseline(20, 50), ledger(20, 90), baseline(100, 200), ledger(100, 500)),
            List.of(baseline(20, 40), ledger(20, 100), baseline(100, 100), ledger(100, 150)),
            List.of(baseline(20, 60), ledger(20, 90), baseline(100, 300), ledger(100, 450)));

    StringBuilder md = new StringBuilder();
    LatencyReport.summary(md, rounds);

    assertThat(md.toString())
        .contains(
            "| 20 | 500 | 20 ms | 50.0, 40.0, 60.0 | 90.0, 100.0, 90.0 | 1.80, 2.50, 1.50 | 1.80 | 2 of 3 |")
        .contains(
            "| 100 | 500 | 100 ms | 200.0, 100.0, 300.0 | 500.0, 150.0, 450.0 | 2.50, 1.50, 1.50 | 1.50 | 2 of 3 |")
        .doesNotContain("| 0 ms |");
  }

  @Test
  void shouldChartEachPercentileAsTheMedianOfTheRounds() {
    List<List<Point>> rounds =
        List.of(
            List.of(baseline(20, 40), ledger(20, 100)), // the first round is not the median
            List.of(baseline(20, 50), ledger(20, 90)),
            List.of(baseline(20, 60), ledger(20, 80)));

    List<Point> medians = LatencyReport.medians(rounds);

    assertThat(medians).extracting(Point::p99).containsExactly(50.0, 90.0);
    assertThat(medians).extracting(Point::p50).containsExactly(25.0, 45.0);
    assertThat(medians.get(1).p999()).isEqualTo(90.0 * 1.2);
  }

  @Test
  void shouldReadBackTheFirstTableOfAReportAsItsPoints() {
    List<Point> written =
        List.of(
            baseline(100, 150),
            ledger(100, 280),
            point(100, 20, 300), // a second executor interval on the same baseline
            baseline(20, 60),
            ledger(20, 110));
    StringBuilder md = new StringBuilder("# Latency\n\nCommand: ...\n\n");
    LatencyReport.tables(md, written);

    List<Point> read = LatencyAgainst.points(List.of(md.toString().split("\n")));

    assertThat(read)
        .extracting(Point::commitMs, Point::executorMs, Point::load, Point::p50, Point::p99)
        .containsExactly(
            tuple(100, 0, 500, 75.0, 150.0),
            tuple(100, 100, 500, 140.0, 280.0),
            tuple(100, 20, 500, 150.0, 300.0),
            tuple(20, 0, 500, 30.0, 60.0),
            tuple(20, 20, 500, 55.0, 110.0));
    assertThat(read.get(1).p999()).isEqualTo(336.0);
    assertThat(LatencyAgainst.keys(read))
        .as("what --against compares with this build's round")
        .isEqualTo(LatencyAgainst.keys(written))
        .containsExactly("100/500/0", "100/500/100", "100/500/20", "20/500/0", "20/500/20");
  }

  @Test
  void shouldSetEachRoundsLedgerBesideTheOtherBuildsOfTheSameRound() {
    List<List<Point>> ours =
        List.of(
            List.of(baseline(20, 50), ledger(20, 90)), List.of(baseline(20, 40), ledger(20, 100)));
    List<List<Point>> theirs =
        List.of(
            List.of(baseline(20, 55), ledger(20, 100)), List.of(baseline(20, 45), ledger(20, 80)));

    StringBuilder md = new StringBuilder();
    LatencyReport.againstTable(md, ours, theirs, "daa2e57, kafka-streams-4.3.1.jar");

    assertThat(md.toString())
        .contains("## Beside daa2e57, kafka-streams-4.3.1.jar")
        .contains(
            "| 20 | 500 | 20 ms | 90.0, 100.0 | 100.0, 80.0 | 0.90, 1.25 | 1.08 | 50.0, 40.0 | 55.0, 45.0 |")
        .doesNotContain("| 0 ms |");
  }

  private static Point baseline(int commitMs, double p99) {
    return point(commitMs, 0, p99);
  }

  private static Point ledger(int commitMs, double p99) {
    return point(commitMs, commitMs, p99);
  }

  private static Point point(int commitMs, int executorMs, double p99) {
    return new Point(
        commitMs,
        executorMs,
        500,
        executorMs == 0 ? "baseline" : "ledger",
        5_000,
        5_000,
        p99 / 2,
        p99,
        p99 * 1.2,
        List.of(),
        new double[0],
        CommitProfile.NONE,
        0,
        CpuSplit.NONE);
  }
}
