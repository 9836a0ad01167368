package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.bench.Bench.Run;
import dev.effectledger.bench.ThroughputWorkers.Round;
import dev.effectledger.bench.ThroughputWorkers.Side;
import java.util.List;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

class ThroughputWorkersTest {

  private static Run run(String side, double perSecond) {
    return new Run(side, StreamsConfig.EXACTLY_ONCE_V2, perSecond, perSecond / 2, 8.5, 13.1, 7.9);
  }

  @Test
  void shouldReadBackTheResultLineAWorkerWrites() {
    Run sent =
        new Run("ledger", StreamsConfig.EXACTLY_ONCE_V2, 45_756.25, 38_001.5, 24.5, 28.3, 4.1);

    Run read = ThroughputWorkers.parse("ledger", ThroughputWorkers.format(sent));

    assertThat(read.perSecond()).isEqualTo(45_756.25);
    assertThat(read.wholeRunPerSecond()).isEqualTo(38_001.5);
    assertThat(read.cpuMicrosPerRecord()).isEqualTo(24.5);
    assertThat(read.processCpuMicrosPerRecord()).isEqualTo(28.3);
    assertThat(read.compileMicrosPerRecord()).isEqualTo(4.1);
    assertThatThrownBy(() -> ThroughputWorkers.parse("ledger", "result 1 2 3"))
        .hasMessageContaining("not a worker's result line");
  }

  @Test
  void shouldReportEachRoundsRatioAndTheirMedian() {
    List<Round> rounds =
        List.of(
            new Round(
                new Side(run("baseline", 100_000), 10), new Side(run("ledger", 40_000), 14), null),
            new Round(
                new Side(run("baseline", 80_000), 10), new Side(run("ledger", 60_000), 14), null),
            new Round(
                new Side(run("baseline", 90_000), 10), new Side(run("ledger", 45_000), 14), null));

    String md = ThroughputWorkers.report(rounds, 200_000, 150_000, 3, null);

    assertThat(md)
        .contains("| ledger / baseline, exactly_once_v2, median of the rounds | 0.50 |")
        .contains("| ledger / baseline by round | 0.40, 0.75, 0.50 |")
        .contains("| 2 | ledger | 60,000 | 8.5 | 13.1 | 7.9 | 14.0 |");
  }

  @Test
  void shouldReportTheLedgerAgainstAnotherBuildsRoundByRound() {
    List<Round> rounds =
        List.of(
            new Round(
                new Side(run("baseline", 100_000), 10),
                new Side(run("ledger", 40_000), 14),
                new Side(run("ledger-before", 50_000), 14)),
            new Round(
                new Side(run("baseline", 80_000), 10),
                new Side(run("ledger", 60_000), 14),
                new Side(run("ledger-before", 40_000), 14)),
            new Round(
                new Side(run("baseline", 90_000), 10),
                new Side(run("ledger", 45_000), 14),
                new Side(run("ledger-before", 50_000), 14)));

    String md =
        ThroughputWorkers.report(rounds, 200_000, 150_000, 3, "abc1234, kafka-streams-4.3.1.jar");

    assertThat(md)
        .contains("the ledger of abc1234, kafka-streams-4.3.1.jar")
        .contains("| ledger / ledger-before, median of the rounds | 0.90 | >= 0.9 |")
        .contains("| ledger / ledger-before by round | 0.80, 1.50, 0.90 |")
        .contains("| ledger / baseline by round | 0.40, 0.75, 0.50 |")
        .contains("| 1 | ledger-before | 50,000 |");
  }
}
