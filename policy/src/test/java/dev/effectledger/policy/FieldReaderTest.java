package dev.effectledger.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class FieldReaderTest {

  private static JsonNode json(String text) throws Exception {
    return new ObjectMapper().readTree(text);
  }

  @Test
  void shouldCollectEveryProblemWithItsPathAndKeepTheFallbacks() throws Exception {
    FieldReader r =
        FieldReader.of(
            "tools.pay.settings",
            json(
                "{\"url\":\"\",\"timeout\":\"soon\",\"pool\":0,\"jitter\":1.5,\"on\":\"maybe\",\"mode\":\"fast\",\"extra\":1}"));

    r.allowOnly(List.of("url", "timeout", "pool", "jitter", "on", "mode"));
    assertThat(r.requiredText("url", "give the URL")).isNull();
    assertThat(r.duration("timeout", Duration.ofSeconds(10))).isEqualTo(Duration.ofSeconds(10));
    assertThat(r.atLeast("pool", 1, 4)).isEqualTo(4);
    assertThat(r.between("jitter", 0, 1, 0.2)).isEqualTo(0.2);
    assertThat(r.bool("on", true)).isTrue();
    assertThat(r.choice("mode", InFlightPolicy.class, InFlightPolicy.COALESCE))
        .isEqualTo(InFlightPolicy.COALESCE);

    assertThat(r.problems())
        .containsExactly(
            "tools.pay.settings.extra: unknown field; allowed: url, timeout, pool, jitter, on, mode",
            "tools.pay.settings.url: missing; give the URL",
            "tools.pay.settings.timeout: 'soon' is not a positive duration; use e.g. 30s, 15m, 24h, 7d or PT15M",
            "tools.pay.settings.pool: '0' is not allowed; use a whole number of at least 1",
            "tools.pay.settings.jitter: '1.5' is not allowed; use a number from 0 to 1",
            "tools.pay.settings.on: 'maybe' is not allowed; use true or false",
            "tools.pay.settings.mode: 'fast' is not allowed; allowed: coalesce, refuse");
    assertThatThrownBy(r::check)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("\n");
  }

  @Test
  void shouldShareProblemsWithANestedMappingAndNameItsPath() throws Exception {
    FieldReader r = FieldReader.of("tools.pay", json("{\"retry\":{\"cap\":\"2h\"},\"key\":[1]}"));

    FieldReader retry = r.mapping("retry", "with base, cap").orElseThrow();
    retry.duration("cap", Duration.ofSeconds(10), Duration.ofHours(1));
    assertThat(r.mapping("key", "with ignore and require")).isEmpty();
    assertThat(r.mapping("absent", "")).isEmpty();

    assertThat(r.problems())
        .containsExactly(
            "tools.pay.retry.cap: '2h' is out of range; allowed: up to 1h",
            "tools.pay.key: must be a mapping with ignore and require");
  }

  @Test
  void shouldReadGoodValues() throws Exception {
    FieldReader r =
        FieldReader.of(
            "t", json("{\"a\":\"x\",\"d\":\"500ms\",\"n\":3,\"b\":false,\"c\":\"refuse\"}"));

    assertThat(r.text("a", null)).isEqualTo("x");
    assertThat(r.duration("d", Duration.ZERO)).isEqualTo(Duration.ofMillis(500));
    assertThat(r.atLeast("n", 1, 1)).isEqualTo(3);
    assertThat(r.bool("b", true)).isFalse();
    assertThat(r.choice("c", InFlightPolicy.class, InFlightPolicy.COALESCE))
        .isEqualTo(InFlightPolicy.REFUSE);
    assertThat(r.problems()).isEmpty();
  }
}
