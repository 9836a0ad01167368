package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HttpMappingTest {

  private static ToolResult refused(String code) {
    return ToolResult.newBuilder()
        .setIdempotencyKey("k")
        .setTenant("acme")
        .setTool("charge")
        .setStatus(ResultStatus.REJECTED)
        .setFirstSeenAt(Instant.parse("2026-01-01T00:00:00Z"))
        .setError(ErrorCode.valueOf(code).toError("because"))
        .build();
  }

  @ParameterizedTest(name = "{0} -> {1} {2}")
  @CsvSource({
    "IDEMPOTENCY_KEY_REUSED, 422, idempotency-key-reused",
    "DUPLICATE_IN_FLIGHT, 409, duplicate-in-flight",
    "UNKNOWN_TOOL, 404, unknown-tool",
    "BYPASS_NOT_ALLOWED, 403, bypass-not-allowed",
    "BYPASS_APPROVAL_INVALID, 403, bypass-approval-invalid",
    "ARGUMENTS_TOO_LARGE, 413, arguments-too-large",
    "ARGUMENTS_NOT_JSON, 400, invalid-arguments",
    "MISSING_REQUIRED_FIELD, 400, invalid-arguments",
    "PENDING_TIMEOUT, 500, ledger-refused"
  })
  void shouldMapEachRefusalToItsStatusAndProblemType(String code, int status, String slug) {
    Problem problem = HttpMapping.rejected(refused(code));

    assertThat(problem.status()).isEqualTo(status);
    assertThat(problem.json()).contains("\"type\":\"urn:effectledger:problem:" + slug + "\"");
  }

  @Test
  void shouldNameTheKeyEncodedAndTheIntentInA202sLocation() {
    assertThat(HttpMapping.stillRunning("a b/c+d", 42))
        .containsEntry("Location", "/v1/calls/a%20b%2Fc%2Bd?intent=42")
        .containsEntry("Retry-After", "1");
    assertThat(HttpMapping.stillRunning("k", -1)).containsEntry("Location", "/v1/calls/k");
  }

  @Test
  void shouldGiveAGenericCorrectiveActionForACodeThatIsNotOurs() {
    assertThat(HttpMapping.correctiveAction("MISSING_REQUIRED_FIELD"))
        .isEqualTo(ErrorCode.MISSING_REQUIRED_FIELD.correctiveAction());
    assertThat(HttpMapping.correctiveAction("SOMETHING_ELSE"))
        .isEqualTo("Fix the arguments and call again.");
  }
}
