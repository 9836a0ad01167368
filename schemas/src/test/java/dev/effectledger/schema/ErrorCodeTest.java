package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ErrorCodeTest {

  @Test
  void shouldTellAnUnknownToolsCallerThatAPolicyAppliesLive() {
    assertThat(ErrorCode.UNKNOWN_TOOL.correctiveAction())
        .contains("effectledger tools apply")
        .contains("without a restart")
        .doesNotContain("restart the processor");
  }

  @Test
  void shouldGiveEveryCodeACorrectiveAction() {
    for (ErrorCode code : ErrorCode.values()) {
      assertThat(code.correctiveAction()).as(code.name()).isNotBlank().endsWith(".");
    }
  }
}
