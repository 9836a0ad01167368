package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.effectledger.bench.Bench.Run;
import java.util.List;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

class SteadyRateTest {

  private static final long SECOND = 1_000_000_000L;

  @Test
  void shouldLeaveTheStartUpOutOfTheRate() {
    // 2 s of start-up with nothing committed, then 100,000 records a second to 200,000.
    SteadyRate rate = new SteadyRate(200_000);
    for (long ms = 0; ms < 2000; ms += 100) {
      rate.sample(ms * 1_000_000L, 0);
    }
    for (long ms = 0; ms < 2000; ms += 100) {
      rate.sample(2 * SECOND + ms * 1_000_000L, ms * 100);
    }
    double wholeRun = 200_000 / 4.0;

    assertThat(rate.perSecond(4 * SECOND, wholeRun)).isCloseTo(100_000, within(1.0));
  }

  @Test
  void shouldCountFromTheFirstSampleAtATenthOfTheInput() {
    SteadyRate rate = new SteadyRate(1000);
    rate.sample(0, 50);
    rate.sample(SECOND, 99); // under a tenth
    rate.sample(2 * SECOND, 400);
    rate.sample(3 * SECOND, 900);

    assertThat(rate.perSecond(4 * SECOND, 250)).isCloseTo(300, within(0.001));
  }

  @Test
  void shouldFallBackToTheWholeRunWhenNoSampleFellWithinIt() {
    SteadyRate none = new SteadyRate(1000);
    assertThat(none.perSecond(SECOND, 1000)).isEqualTo(1000);

    SteadyRate onlyBefore = new SteadyRate(1000);
    onlyBefore.sample(0, 10);
    assertThat(onlyBefore.perSecond(SECOND, 1000)).isEqualTo(1000);
  }

  @Test
  void shouldPairEachLedgerRunWithTheBaselineRunOfItsRound() {
    String eos = StreamsConfig.EXACTLY_ONCE_V2;
    String alos = StreamsConfig.AT_LEAST_ONCE;
    List<Run> runs =
        List.of(
            new Run("baseline", eos, 100, 50, 5),
            new Run("ledger", eos, 40, 30, 20),
            new Run(Bench.CACHED, eos, 10, 10, 30),
            new Run("baseline", alos, 1000, 1000, 5),
            new Run("ledger", alos, 10, 10, 20),
            new Run("baseline", eos, 200, 100, 5),
            new Run("ledger", eos, 120, 60, 20));

    assertThat(ThroughputReport.byRound(runs)).isEqualTo("0.40, 0.60");
  }
}
