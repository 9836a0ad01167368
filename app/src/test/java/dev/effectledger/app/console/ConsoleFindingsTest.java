package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ConsoleFindingsTest {

  @Test
  void shouldDescribeAFindingByStatusSinceWhoAndDetail() {
    assertThat(
            ConsoleFindings.describeFinding(
                "{\"status\":\"NOT_FOUND\",\"detail\":\"the downstream has no effect; released\","
                    + "\"since\":\"2026-01-02T03:04:05Z\",\"by\":\"alice\"}"))
        .isEqualTo(
            "NOT_FOUND (since 2026-01-02T03:04:05Z, alice): the downstream has no effect; released");
  }

  @Test
  void shouldShowAFindingThatIsNotJsonAsItCame() {
    assertThat(ConsoleFindings.describeFinding("lookup failed: timeout"))
        .isEqualTo("lookup failed: timeout");
  }
}
