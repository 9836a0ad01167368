package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonPointer;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EffectCountsTest {

  @Test
  void shouldCountRequestsAndEffectsPerKey() {
    EffectCounts counts = new EffectCounts();

    assertThat(counts.request("k1")).isEqualTo(1);
    assertThat(counts.request("k1")).isEqualTo(2);
    counts.effect("k1", "{}");
    counts.effect("k2", "{}");
    counts.effect("k2", "{}");

    assertThat(counts.requests("k1")).isEqualTo(2);
    assertThat(counts.requests("k2")).isZero();
    assertThat(counts.effects("k1")).isEqualTo(1);
    assertThat(counts.effects("unknown")).isZero();
    assertThat(counts.effectsByKey()).isEqualTo(Map.of("k1", 1, "k2", 2));
    assertThat(counts.total()).isEqualTo(3);
    assertThat(counts.effectsByField()).isEmpty();
  }

  @Test
  void shouldCountEffectsByTheBodysFieldWhateverTheKey() {
    EffectCounts counts = new EffectCounts();
    counts.countBy("/order/id");

    counts.effect("k1", "{\"order\":{\"id\":\"o-1\"}}");
    counts.effect("k2", "{\"order\":{\"id\":\"o-1\"}}");
    counts.effect("k3", "{\"order\":{\"id\":7}}");
    counts.effect("k4", "{\"order\":{}}");

    assertThat(counts.effectsBy("o-1")).isEqualTo(2);
    assertThat(counts.effectsBy("7")).isEqualTo(1);
    assertThat(counts.effectsByField()).isEqualTo(Map.of("o-1", 2, "7", 1, "", 1));
  }

  @Test
  void shouldReadAMissingNullOrUnparsableFieldAsEmpty() {
    JsonPointer id = JsonPointer.compile("/id");

    assertThat(EffectCounts.fieldOf("{\"id\":\"a\"}", id)).isEqualTo("a");
    assertThat(EffectCounts.fieldOf("{\"other\":1}", id)).isEmpty();
    assertThat(EffectCounts.fieldOf("{\"id\":null}", id)).isEmpty();
    assertThat(EffectCounts.fieldOf("not json", id)).isEmpty();
  }
}
