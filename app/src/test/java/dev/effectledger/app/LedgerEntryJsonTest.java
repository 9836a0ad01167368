package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class LedgerEntryJsonTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private static LedgerEntry.Builder entry() {
    return LedgerEntry.newBuilder()
        .setIdempotencyKey("k1")
        .setTenant("acme")
        .setRunId("run-7")
        .setStepId("step-2")
        .setTool("charge_card")
        .setEffectKey("k1~2")
        .setArgumentsHash("sha256:x")
        .setArguments("{\"card\":\"4242\"}")
        .setState(LedgerState.PENDING)
        .setAttempts(2)
        .setFirstSeenAt(T0)
        .setLastDispatchedAt(T0.plusSeconds(5));
  }

  @Test
  void shouldShowAnEntryInFlightWithoutItsArgumentsOrTheFieldsItHasNot() {
    ObjectNode json = LedgerEntryJson.describe(entry().build(), true);

    assertThat(json.toString())
        .isEqualTo(
            "{\"key\":\"k1\",\"tenant\":\"acme\",\"tool\":\"charge_card\",\"state\":\"PENDING\","
                + "\"attempts\":2,\"effectKey\":\"k1~2\",\"runId\":\"run-7\",\"stepId\":\"step-2\","
                + "\"firstSeenAt\":\"2026-01-01T00:00:00Z\","
                + "\"lastDispatchedAt\":\"2026-01-01T00:00:05Z\"}");
    assertThat(json.toString()).doesNotContain("4242").doesNotContain("sha256:x");
  }

  @Test
  void shouldShowTheStoredResultOnlyWhenAskedFor() {
    LedgerEntry settled =
        entry()
            .setState(LedgerState.SUCCEEDED)
            .setCompletedAt(T0.plusSeconds(9))
            .setEffectId("ch_1")
            .setResultJson("{\"id\":\"ch_1\"}")
            .setIncarnation(41L)
            .build();

    ObjectNode without = LedgerEntryJson.describe(settled, false);
    ObjectNode with = LedgerEntryJson.describe(settled, true);

    assertThat(without.has("result")).isFalse();
    assertThat(without.path("completedAt").asText()).isEqualTo("2026-01-01T00:00:09Z");
    assertThat(without.path("effectId").asText()).isEqualTo("ch_1");
    assertThat(without.path("incarnation").asLong()).isEqualTo(41L);
    assertThat(with.path("result").asText())
        .as("the result as the stored text, not parsed")
        .isEqualTo("{\"id\":\"ch_1\"}");
  }

  @Test
  void shouldShowAHeldEntrysErrorAsItsCodeAndMessage() {
    LedgerEntry held =
        entry()
            .setState(LedgerState.UNKNOWN)
            .setError(
                new ErrorInfo("OUTCOME_UNKNOWN", "the executor crashed mid-call", false, "check"))
            .build();

    ObjectNode json = LedgerEntryJson.describe(held, false);

    assertThat(json.path("state").asText()).isEqualTo("UNKNOWN");
    assertThat(json.path("error").asText()).isEqualTo("OUTCOME_UNKNOWN");
    assertThat(json.path("errorMessage").asText()).isEqualTo("the executor crashed mid-call");
    assertThat(json.has("correctiveAction")).isFalse();
  }

  @Test
  void shouldAnswerAKeyAsTheReplyTheGatewayReadsWithTheResultAsJson() {
    LedgerEntry settled =
        entry()
            .setState(LedgerState.SUCCEEDED)
            .setCompletedAt(T0.plusSeconds(9))
            .setEffectId("ch_1")
            .setResultJson("{\"id\":\"ch_1\"}")
            .build();

    ObjectNode reply = LedgerEntryJson.asReply(settled);

    assertThat(reply.path("status").asText()).isEqualTo("SUCCEEDED");
    assertThat(reply.path("replayed").asBoolean()).isTrue();
    assertThat(reply.path("result").path("id").asText()).isEqualTo("ch_1");
    assertThat(reply.has("tenant")).as("a caller sees only its own tenant's keys").isFalse();
    assertThat(reply.toString()).doesNotContain("4242");
  }
}
