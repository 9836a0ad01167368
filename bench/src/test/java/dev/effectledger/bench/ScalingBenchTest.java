package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ScalingBenchTest {

  @Test
  void shouldReportTheMiddleRunOfAnOddCount() {
    assertThat(ScalingBench.medianOf(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
    assertThat(ScalingBench.medianOf(List.of(7.0))).isEqualTo(7.0);
  }

  @Test
  void shouldReportTheUpperOfTheTwoMiddleRunsOfAnEvenCount() {
    assertThat(ScalingBench.medianOf(List.of(4.0, 1.0, 3.0, 2.0))).isEqualTo(3.0);
  }
}
