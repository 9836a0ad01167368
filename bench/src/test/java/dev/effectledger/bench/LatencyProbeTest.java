package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class LatencyProbeTest {

  private static final long MS = 1_000_000; // nanoseconds

  @Test
  void shouldSplitAnAnsweredKeysTimeIntoItsHopsInMicroseconds() {
    List<Histogram> hops = hops();

    LatencyProbe.recordHops(hops, 10 * MS, new long[] {11 * MS, 13 * MS}, 16 * MS);

    assertThat(hops).extracting(Histogram::getTotalCount).containsExactly(1L, 1L, 1L);
    assertThat(hops.get(0).getMaxValue()).isEqualTo(hops.get(0).highestEquivalentValue(1_000));
    assertThat(hops.get(1).getMaxValue()).isEqualTo(hops.get(1).highestEquivalentValue(2_000));
    assertThat(hops.get(2).getMaxValue()).isEqualTo(hops.get(2).highestEquivalentValue(3_000));
  }

  @Test
  void shouldLeaveOutAKeyWhoseStagesWereNotAllSeenInOrder() {
    List<Histogram> hops = hops();

    LatencyProbe.recordHops(hops, 10 * MS, new long[] {11 * MS, 0}, 16 * MS); // one unseen
    LatencyProbe.recordHops(hops, 10 * MS, new long[] {13 * MS, 12 * MS}, 16 * MS); // reversed
    LatencyProbe.recordHops(hops, 10 * MS, new long[] {9 * MS, 12 * MS}, 16 * MS); // before send
    LatencyProbe.recordHops(hops, 10 * MS, null, 16 * MS); // no stage seen at all

    assertThat(hops).extracting(Histogram::getTotalCount).containsExactly(0L, 0L, 0L);
  }

  @Test
  void shouldCountAnAnswerSeenInTheSamePollAsItsLastStageAsNoTime() {
    List<Histogram> hops = hops();

    LatencyProbe.recordHops(hops, 10 * MS, new long[] {11 * MS, 13 * MS}, 12 * MS);

    assertThat(hops.get(2).getTotalCount()).isEqualTo(1);
    assertThat(hops.get(2).getMaxValue()).isZero();
  }

  private static List<Histogram> hops() {
    return List.of(histogram(), histogram(), histogram());
  }

  private static Histogram histogram() {
    return new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
  }
}
