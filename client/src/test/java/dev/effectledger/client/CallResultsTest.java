package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class CallResultsTest {

  private static final ToolCall CALL =
      ToolCall.of(StepContext.of("acme", "run-1", "pay"), "charge_card", "{\"amount\":1}");

  private static ToolResult.Builder reply(ResultStatus status) {
    return ToolResult.newBuilder()
        .setIdempotencyKey("v1:k")
        .setTenant("acme")
        .setTool("charge_card")
        .setStatus(status)
        .setFirstSeenAt(Instant.parse("2026-01-01T00:00:00Z"));
  }

  private static ErrorInfo error(ErrorCode code) {
    return code.toError("because");
  }

  @Test
  void shouldMapEveryFinalReplyToItsResult() {
    assertThat(
            CallResults.of(
                reply(ResultStatus.SUCCEEDED)
                    .setResultJson("{\"id\":1}")
                    .setEffectId("ch_1")
                    .setReplayed(true)
                    .setAttempts(2)
                    .build()))
        .isEqualTo(new CallResult.Succeeded("v1:k", "{\"id\":1}", "ch_1", true, 2));

    CallResult exhausted =
        CallResults.of(
            reply(ResultStatus.FAILED).setError(error(ErrorCode.RETRIES_EXHAUSTED)).build());
    assertThat(exhausted).isInstanceOf(CallResult.Failed.class);
    assertThat(((CallResult.Failed) exhausted).error().retriable())
        .as("no effect: the same call may run later")
        .isTrue();

    CallResult held =
        CallResults.of(
            reply(ResultStatus.UNKNOWN).setError(error(ErrorCode.HELD_FOR_RECONCILIATION)).build());
    assertThat(held).isInstanceOf(CallResult.HeldUnknown.class);
    assertThat(((CallResult.HeldUnknown) held).error().ledgerCode())
        .contains(ErrorCode.HELD_FOR_RECONCILIATION);

    CallResult rejected =
        CallResults.of(
            reply(ResultStatus.REJECTED).setError(error(ErrorCode.IDEMPOTENCY_KEY_REUSED)).build());
    assertThat(rejected).isInstanceOf(CallResult.Rejected.class);
    assertThat(((CallResult.Rejected) rejected).error().correctiveAction())
        .isEqualTo(ErrorCode.IDEMPOTENCY_KEY_REUSED.correctiveAction());
  }

  @Test
  void shouldKeepAConnectorsOwnCodeWithoutPretendingItIsTheLedgers() {
    CallResult failed =
        CallResults.of(
            reply(ResultStatus.FAILED)
                .setError(
                    ErrorInfo.newBuilder()
                        .setCode("SQLSTATE_23514")
                        .setMessage("check violated")
                        .setRetriable(false)
                        .setCorrectiveAction("fix it")
                        .build())
                .build());

    CallError error = ((CallResult.Failed) failed).error();
    assertThat(error.code()).isEqualTo("SQLSTATE_23514");
    assertThat(error.ledgerCode()).isEmpty();
  }

  @Test
  void shouldNameTheStatusWhenAReplyCarriesNoError() {
    CallResult rejected = CallResults.of(reply(ResultStatus.REJECTED).build());

    assertThat(((CallResult.Rejected) rejected).error().code()).isEqualTo("REJECTED");
  }

  @Test
  void shouldNeverTakeAnInFlightNoticeForAnAnswer() {
    assertThatThrownBy(() -> CallResults.of(reply(ResultStatus.IN_FLIGHT).build()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void shouldRefuseANonPositivePerCallTimeout() {
    assertThatThrownBy(() -> CallOptions.timeout(Duration.ZERO)).hasMessageContaining("positive");
    assertThat(CallOptions.timeout(Duration.ofSeconds(2)).timeout())
        .contains(Duration.ofSeconds(2));
    assertThat(CallOptions.defaults().timeout()).isEmpty();
  }

  @Test
  void shouldAttachByCallingAgainWithTheSameCall() throws Exception {
    List<ToolCall> invoked = new ArrayList<>();
    ToolCalls fake =
        new ToolCalls() {
          @Override
          public DerivedKey keyOf(ToolCall call) {
            return IdempotencyKeys.derive(
                call.step(), call.tool(), call.argumentsJson(), KeyRules.NONE);
          }

          @Override
          public CompletableFuture<CallResult> invoke(ToolCall call, CallOptions options) {
            invoked.add(call);
            return CompletableFuture.completedFuture(
                new CallResult.Succeeded(keyOf(call).key(), "{}", "ch_1", true, 1));
          }

          @Override
          public void close() {}
        };
    CallResult.StillRunning running =
        new CallResult.StillRunning(
            fake.keyOf(CALL).key(), CALL, CallResult.StillRunning.Reason.TIMED_OUT);

    CallResult attached = fake.attach(running).get();

    assertThat(invoked).containsExactly(CALL);
    assertThat(attached.key()).isEqualTo(running.key());
  }
}
