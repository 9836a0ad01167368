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
      rate.sample(ms * 1_000_000L, 0, 0, 0);
    }
    for (long ms = 0; ms < 2000; ms += 100) {
      rate.sample(2 * SECOND + ms * 1_000_000L, ms * 100, 0, 0);
    }
    double wholeRun = 200_000 / 4.0;

    assertThat(rate.perSecond(4 * SECOND, wholeRun)).isCloseTo(100_000, within(1.0));
  }

  @Test
  void shouldCountFromTheFirstSampleAtATenthOfTheInput() {
    SteadyRate rate = new SteadyRate(1000);
    rate.sample(0, 50, 0, 0);
    rate.sample(SECOND, 99, 0, 0); // under a tenth
    rate.sample(2 * SECOND, 400, 0, 0);
    rate.sample(3 * SECOND, 900, 0, 0);

    assertThat(rate.perSecond(4 * SECOND, 250)).isCloseTo(300, within(0.001));
  }

  @Test
  void shouldCountTheProcessCpuOverTheSameStretchAsTheRate() {
    SteadyRate rate = new SteadyRate(1000);
    rate.sample(0, 0, 5 * SECOND, 0); // start-up: 5 s of CPU before anything was committed
    rate.sample(SECOND, 50, 6 * SECOND, 0);
    rate.sample(2 * SECOND, 200, 7 * SECOND, 0); // the first at a tenth or more
    rate.sample(3 * SECOND, 600, 8 * SECOND, 0);

    // 800 records past it for 2 s of CPU more: 2,500 µs each.
    assertThat(rate.cpuMicrosPerRecord(9 * SECOND)).isCloseTo(2500, within(0.001));
    assertThat(new SteadyRate(1000).cpuMicrosPerRecord(SECOND)).isNaN();
  }

  @Test
  void shouldCountTheJitCompilersOverTheSameStretchAsTheRate() {
    SteadyRate rate = new SteadyRate(1000);
    rate.sample(0, 0, 5 * SECOND, 3 * SECOND); // start-up: 3 s compiling before any commit
    rate.sample(2 * SECOND, 100, 7 * SECOND, 4 * SECOND); // the first at a tenth
    rate.sample(3 * SECOND, 600, 8 * SECOND, 4 * SECOND);

    // 900 records past it, 0.45 s more compiling: 500 µs each; the CPU over the same stretch.
    assertThat(rate.compileMicrosPerRecord(4 * SECOND + 450_000_000L))
        .isCloseTo(500, within(0.001));
    assertThat(rate.cpuMicrosPerRecord(9 * SECOND)).isCloseTo(2222.222, within(0.001));
    assertThat(new SteadyRate(1000).compileMicrosPerRecord(SECOND)).isNaN();
  }

  @Test
  void shouldFallBackToTheWholeRunWhenNoSampleFellWithinIt() {
    SteadyRate none = new SteadyRate(1000);
    assertThat(none.perSecond(SECOND, 1000)).isEqualTo(1000);

    SteadyRate onlyBefore = new SteadyRate(1000);
    onlyBefore.sample(0, 10, 0, 0);
    assertThat(onlyBefore.perSecond(SECOND, 1000)).isEqualTo(1000);
  }

  @Test
  void shouldPairEachLedgerRunWithTheBaselineRunOfItsRound() {
    String eos = StreamsConfig.EXACTLY_ONCE_V2;
    String alos = StreamsConfig.AT_LEAST_ONCE;
    List<Run> runs =
        List.of(
            new Run("baseline", eos, 100, 50, 5, 10, 0),
            new Run("ledger", eos, 40, 30, 20, 25, 0),
            new Run(Bench.CACHED, eos, 10, 10, 30, 40, 0),
            new Run("baseline", alos, 1000, 1000, 5, 2, 0),
            new Run("ledger", alos, 10, 10, 20, 25, 0),
            new Run("baseline", eos, 200, 100, 5, 10, 0),
            new Run("ledger", eos, 120, 60, 20, 25, 0));

    assertThat(ThroughputReport.byRound(runs)).isEqualTo("0.40, 0.60");
  }
}
