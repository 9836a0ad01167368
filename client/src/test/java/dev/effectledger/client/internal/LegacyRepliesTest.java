package dev.effectledger.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class LegacyRepliesTest {

  @Test
  void shouldAnswerANonFinalCallAsARetriableInFlightReplyWithTheClientsCode() {
    ToolCall call =
        ToolCall.of(StepContext.of("acme", "run-1", "pay"), "charge_card", "{\"amount\":1}");
    Instant at = Instant.parse("2026-01-02T03:04:05Z");

    ToolResult reply =
        LegacyReplies.notFinal("key-1", call, "CLIENT_TIMEOUT", "no final result within PT1S", at);

    assertThat(reply.getIdempotencyKey()).isEqualTo("key-1");
    assertThat(reply.getTenant()).isEqualTo("acme");
    assertThat(reply.getTool()).isEqualTo("charge_card");
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
    assertThat(reply.getFirstSeenAt()).isEqualTo(at);
    assertThat(reply.getError().getCode()).isEqualTo("CLIENT_TIMEOUT");
    assertThat(reply.getError().getMessage())
        .isEqualTo("no final result within PT1S; the action may still happen");
    assertThat(reply.getError().getRetriable()).isTrue();
    assertThat(reply.getError().getCorrectiveAction()).contains("same step context");
  }
}
