package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.embedded.CountingDownstream.Fault;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FaultPlanTest {

  private static final int KEYS = 10_000;

  private static Map<Fault, Integer> tally(FaultPlan plan) {
    Map<Fault, Integer> seen = new EnumMap<>(Fault.class);
    for (int i = 0; i < KEYS; i++) {
      Fault fault = plan.faultOf("key-" + i);
      if (fault != null) {
        seen.merge(fault, 1, Integer::sum);
      }
    }
    return seen;
  }

  private static List<Fault> faultsOf(FaultPlan plan) {
    List<Fault> faults = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      faults.add(plan.faultOf("key-" + i));
    }
    return faults;
  }

  @Test
  void shouldGiveNoKeyAFaultWithoutAPlan() {
    assertThat(tally(FaultPlan.NONE)).isEmpty();
  }

  @Test
  void shouldSpreadAShareEvenlyOverTheFourExactlyOnceFaults() {
    assertThat(FaultPlan.evenly(7, 10).shares())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                Fault.UNAVAILABLE_BEFORE_EFFECT, 3,
                Fault.HANG_AFTER_EFFECT, 3,
                Fault.DROP_AFTER_EFFECT, 2,
                Fault.ERROR_AFTER_EFFECT, 2));
  }

  @Test
  void shouldGiveEachFaultRoughlyItsShareOfKeys() {
    Map<Fault, Integer> seen =
        tally(new FaultPlan(1, Map.of(Fault.RATE_LIMITED, 30, Fault.SLOW_SUCCESS, 10)));

    assertThat(seen).containsOnlyKeys(Fault.RATE_LIMITED, Fault.SLOW_SUCCESS);
    assertThat(seen.get(Fault.RATE_LIMITED)).isBetween(KEYS * 27 / 100, KEYS * 33 / 100);
    assertThat(seen.get(Fault.SLOW_SUCCESS)).isBetween(KEYS * 8 / 100, KEYS * 12 / 100);
  }

  @Test
  void shouldPickTheSameKeysForTheSameSeedAndOthersForAnother() {
    assertThat(faultsOf(FaultPlan.evenly(42, 20))).isEqualTo(faultsOf(FaultPlan.evenly(42, 20)));
    assertThat(faultsOf(FaultPlan.evenly(42, 20))).isNotEqualTo(faultsOf(FaultPlan.evenly(43, 20)));
  }

  @Test
  void shouldRefuseSharesOverAHundredPercentOrBelowZero() {
    assertThatThrownBy(
            () -> new FaultPlan(1, Map.of(Fault.RATE_LIMITED, 60, Fault.SLOW_SUCCESS, 41)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 100%");
    assertThatThrownBy(() -> new FaultPlan(1, Map.of(Fault.RATE_LIMITED, -1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
