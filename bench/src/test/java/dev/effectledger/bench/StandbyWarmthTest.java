package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.bench.FailoverBench.Standbys;
import java.util.List;
import org.junit.jupiter.api.Test;

class StandbyWarmthTest {

  @Test
  void takesEveryStandbyOnTheRestartedProcessorAsWarm() {
    // after a restart the assignor left every active task on the survivor, every standby on the
    // restarted one: the bench's earlier wait (standbys on every processor) never ended
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 16, 0, 0), new Standbys(2, true, 0, 16, 8))))
        .isTrue();
  }

  @Test
  void waitsForEveryActivePartitionsStandbyTheirLagAndReadiness() {
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 16, 0, 0), new Standbys(2, true, 0, 8, 8))))
        .as("half the active partitions without a standby")
        .isFalse();
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 8, 8, 8), new Standbys(2, true, 8, 8, 501))))
        .as("a standby 501 records behind")
        .isFalse();
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 8, 8, 8), new Standbys(2, true, 8, 8, Double.NaN))))
        .as("a processor that cannot tell")
        .isFalse();
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 8, 8, 8), new Standbys(2, false, 8, 8, 8))))
        .as("not ready")
        .isFalse();
    assertThat(
            FailoverBench.warm(
                List.of(new Standbys(1, true, 8, 8, 8), new Standbys(2, true, 8, 8, 8))))
        .isTrue();
  }
}
