package dev.effectledger.bench.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ScheduleGateTest {

  @TempDir Path dir;

  @Test
  void shouldHoldOnlyEachAgentsLastStepUntilTheScheduleIsOver() {
    Path file = dir.resolve("gate.txt");
    ScheduleGate gate = ScheduleGate.held(file);

    assertThat(ChaosAgent.holdsBack(499, 500, file)).as("a step before the last").isFalse();
    assertThat(ChaosAgent.holdsBack(500, 500, file)).as("the last, schedule running").isTrue();
    gate.release();
    assertThat(ChaosAgent.holdsBack(500, 500, file)).as("the last, schedule over").isFalse();
    assertThat(ChaosAgent.holdsBack(500, 500, null)).as("a run without a gate").isFalse();
  }

  @Test
  void shouldSayWhatAFileThatIsNoGateHolds() throws Exception {
    assertThat(ScheduleGate.holds(dir.resolve("none.txt"))).isFalse();
    Path file = dir.resolve("other.txt");
    Files.writeString(file, "hello\n");
    assertThatThrownBy(() -> ScheduleGate.holds(file))
        .hasMessageContaining("does not hold a schedule gate: 'hello'");
  }
}
