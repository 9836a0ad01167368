package dev.effectledger.bench.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The small seeded chaos runs of the default suite: 2,000 actions, every part its own OS process,
 * eight faults (kill -9 of processors, executors and agents, broker stops) on a seeded schedule;
 * {@code bench/run chaos} is the long run.
 */
@Tag("integration")
class ChaosRunIT {

  private static final long SEED = 20261122L;

  @TempDir Path dir;

  private ChaosRun.Options options(boolean ignoreKeys) {
    return new ChaosRun.Options(4, 500, 2, 2, ignoreKeys, SEED, Duration.ofSeconds(3), Duration.ofSeconds(5), 12, 4, 8, dir);
  }

  @Test
  @Timeout(600)
  void shouldTakeEachActionEffectExactlyAsOftenAsMeantUnderKillsAndBrokerStops() throws Exception {
    ChaosRun.Result result = new ChaosRun(options(false)).run();

    assertThat(result.violations()).isEmpty();
    assertThat(result.processKills()).as("processors and executors killed").isGreaterThanOrEqualTo(2);
    assertThat(result.agentKills()).as("agents killed and replayed").isGreaterThanOrEqualTo(1);
    assertThat(result.brokerStops()).as("brokers stopped").isGreaterThanOrEqualTo(1);
    assertThat(result.answered()).isEqualTo(result.steps()).isEqualTo(2_040);
    assertThat(result.effects()).as("one effect per step: 2,000 actions, 40 of them meant twice").isEqualTo(2_040);
    assertThat(result.reconciliation().confirmed()).isEqualTo(2_040);
    assertThat(result.intents()).as("the four retry layers sent more than one intent per step").isGreaterThan(2 * 2_040);
    assertThat(result.replies()).isGreaterThanOrEqualTo(result.intents());
  }

  @Test
  @Timeout(600)
  void shouldHoldRatherThanRepeatEffectsOnAPaymentApiThatIgnoresKeys() throws Exception {
    ChaosRun.Result result = new ChaosRun(options(true)).run();

    assertThat(result.violations()).isEmpty();
    assertThat(result.effects()).as("no second effect, although the API would have taken one").isEqualTo(2_040);
    assertThat(result.heldUnknown()).as("effects that may have happened were held, not guessed").isPositive();
    assertThat(result.reconciliation().heldFoundEffect()).as("and resolved by the reconciler's lookup").isPositive();
    assertThat(result.reconciliation().heldUnresolved()).isZero();
  }
}
