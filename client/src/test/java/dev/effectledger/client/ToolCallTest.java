package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ToolCallTest {

  private static final StepContext STEP = new StepContext("acme", "run-1", "pay", "");

  @Test
  void shouldCarryACallersOwnKeyThroughItsOtherChanges() {
    ToolCall call =
        ToolCall.of(STEP, "charge", "{}")
            .withIdempotencyKey("order-9")
            .withTraceId("t-1")
            .withBypass("ops-1");

    assertThat(call.idempotencyKey()).isEqualTo("order-9");
    assertThat(call.traceId()).isEqualTo("t-1");
    assertThat(call.bypassApproval()).isEqualTo("ops-1");
  }

  @Test
  void shouldRefuseAKeyThatIsEmptyTooLongOrNotVisibleAscii() {
    ToolCall call = ToolCall.of(STEP, "charge", "{}");

    assertThatThrownBy(() -> call.withIdempotencyKey(" ")).hasMessageContaining("1 to 255");
    assertThatThrownBy(() -> call.withIdempotencyKey("k".repeat(256)))
        .hasMessageContaining("1 to 255");
    assertThatThrownBy(() -> call.withIdempotencyKey("order 9")).hasMessageContaining("visible");
    assertThatThrownBy(() -> call.withIdempotencyKey("ordré")).hasMessageContaining("visible");
    assertThat(call.withIdempotencyKey("k".repeat(255)).idempotencyKey()).hasSize(255);
  }
}
