package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class HeaderSyntaxTest {

  @Test
  void shouldReadAStructuredFieldStringAndABareToken() {
    assertThat(HeaderSyntax.idempotencyKey(List.of("\"8e03978e-40d5\""))).contains("8e03978e-40d5");
    assertThat(HeaderSyntax.idempotencyKey(List.of("\"a \\\"quoted\\\" \\\\ key\"")))
        .contains("a \"quoted\" \\ key");
    assertThat(HeaderSyntax.idempotencyKey(List.of("order_42:charge"))).contains("order_42:charge");
    assertThat(HeaderSyntax.idempotencyKey(List.of())).isEmpty();
  }

  @Test
  void shouldRefuseKeysThatBreakTheSyntax() {
    for (String bad :
        List.of(
            "\"unterminated",
            "\"text\" after",
            "\"bad \\n escape\"",
            "\"\"",
            "two words",
            "\"" + "k".repeat(256) + "\"",
            "k".repeat(256),
            "\"tab\there\"",
            "\"caf\u00e9\"")) {
      assertThatThrownBy(() -> HeaderSyntax.idempotencyKey(List.of(bad)))
          .as(bad)
          .isInstanceOf(HeaderSyntax.Invalid.class);
    }
    assertThatThrownBy(() -> HeaderSyntax.idempotencyKey(List.of("\"a\"", "\"b\"")))
        .isInstanceOf(HeaderSyntax.Invalid.class)
        .hasMessageContaining("one Idempotency-Key");
  }

  @Test
  void shouldReadTheWaitPreferenceAndIgnoreOthers() {
    assertThat(HeaderSyntax.preferredWait(List.of("wait=5"))).contains(Duration.ofSeconds(5));
    assertThat(HeaderSyntax.preferredWait(List.of("respond-async, WAIT = 30")))
        .contains(Duration.ofSeconds(30));
    assertThat(HeaderSyntax.preferredWait(List.of("return=minimal", "wait=2; foo=bar")))
        .contains(Duration.ofSeconds(2));
    assertThat(HeaderSyntax.preferredWait(List.of("wait=soon"))).isEmpty();
    assertThat(HeaderSyntax.preferredWait(List.of("wait=-1"))).isEmpty();
    assertThat(HeaderSyntax.preferredWait(List.of())).isEmpty();
  }

  @Test
  void shouldWaitAsPreferredUpToTheMaximumAndTheDefaultOtherwise() {
    java.time.Duration byDefault = java.time.Duration.ofSeconds(10);
    java.time.Duration max = java.time.Duration.ofSeconds(60);
    assertThat(HeaderSyntax.wait(java.util.List.of("wait=5"), byDefault, max)).hasSeconds(5);
    assertThat(HeaderSyntax.wait(java.util.List.of("wait=600"), byDefault, max)).hasSeconds(60);
    assertThat(HeaderSyntax.wait(java.util.List.of(), byDefault, max)).hasSeconds(10);
    assertThat(HeaderSyntax.wait(java.util.List.of("respond-async"), byDefault, max))
        .hasSeconds(10);
  }
}
