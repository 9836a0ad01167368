package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class IdempotencyKeysTest {

  private static final StepContext STEP = new StepContext("acme", "run-1", "pay", "customer:42");
  private static final KeyRules RULES =
      KeyRules.builder().ignore("/reason").require("/amount", "/to").build();
  private static final String ARGS = "{\"amount\":1000,\"to\":\"cus_42\",\"reason\":\"invoice 7\"}";

  private static String key(StepContext step, String args) {
    return IdempotencyKeys.derive(step, "charge_card", args, RULES).key();
  }

  @Test
  void shouldIgnoreFormattingOrderNumberSpellingEscapesAndVolatileFields() {
    String expected = key(STEP, ARGS);

    assertThat(key(STEP, " { \"to\" : \"cus_42\",\n \"amount\" : 1000.0 } ")).isEqualTo(expected);
    assertThat(
            key(
                STEP,
                "{\"amount\":1e3,\"to\":\"cus_\\u0034\\u0032\",\"reason\":\"the model said it differently\"}"))
        .isEqualTo(expected);
  }

  @Test
  void shouldTellDifferentActionsApart() {
    String expected = key(STEP, ARGS);

    assertThat(key(STEP, "{\"amount\":1001,\"to\":\"cus_42\"}")).isNotEqualTo(expected);
    assertThat(key(STEP, "{\"amount\":1000,\"to\":\"cus_43\"}")).isNotEqualTo(expected);
    assertThat(key(new StepContext("acme", "run-1", "pay-again", "customer:42"), ARGS))
        .isNotEqualTo(expected);
    assertThat(key(new StepContext("globex", "run-1", "pay", "customer:42"), ARGS))
        .isNotEqualTo(expected);
  }

  @Test
  void shouldBeVersionedFixedLengthUrlSafeAndCarryNoArgumentValue() {
    DerivedKey derived = IdempotencyKeys.derive(STEP, "charge_card", ARGS, RULES);

    assertThat(derived.key())
        .matches("v1:[A-Za-z0-9_-]{43}")
        .doesNotContain("cus_42")
        .doesNotContain("1000");
    assertThat(derived.argumentsHash()).matches("sha256:[0-9a-f]{64}");
    assertThat(derived.canonicalArguments()).isEqualTo("{\"amount\":1000,\"to\":\"cus_42\"}");
  }

  @Test
  void shouldRefuseACallWithoutARequiredField() {
    assertThatThrownBy(() -> key(STEP, "{\"to\":\"cus_42\"}"))
        .isInstanceOfSatisfying(
            KeyDerivationException.class,
            e -> assertThat(e.code()).isEqualTo("MISSING_REQUIRED_FIELD"))
        .hasMessageContaining("/amount");
  }

  @Test
  void shouldRefuseRulesThatContradictThemselves() {
    assertThatThrownBy(() -> KeyRules.builder().ignore("/amount").require("/amount").build())
        .hasMessageContaining("both ignored (volatile) and required");
    assertThatThrownBy(() -> KeyRules.builder().ignore("amount").build())
        .hasMessageContaining("JSON pointer");
  }
}
