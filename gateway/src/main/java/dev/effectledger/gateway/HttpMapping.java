package dev.effectledger.gateway;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.ReplyJson;
import dev.effectledger.schema.ToolResult;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The one mapping from the ledger's answers to HTTP: status, problem type and headers per reply
 * status and error code. docs/openapi.yaml documents it, and GatewayIT checks every status it
 * documents.
 */
final class HttpMapping {

  /** How long a caller answered 503 waits before calling again. */
  static final int RETRY_AFTER_SECONDS = 5;

  private HttpMapping() {}

  /** Answers {@code ex} with {@code reply}: 200, 202, 424 or the problem of its refusal. */
  static void answer(Exchange ex, ToolResult reply, long intentOffset) {
    Map<String, String> replayed =
        reply.getReplayed() ? Map.of("Idempotent-Replayed", "true") : Map.of();
    switch (reply.getStatus()) {
      case SUCCEEDED -> ex.json(200, ReplyJson.of(reply), replayed);
      case FAILED -> ex.problem(Problem.of(424, "tool-failed", "The tool failed", reply), replayed);
      case UNKNOWN, IN_FLIGHT -> {
        Map<String, String> headers =
            new HashMap<>(stillRunning(reply.getIdempotencyKey(), intentOffset));
        headers.putAll(replayed);
        ex.json(202, ReplyJson.of(reply), headers);
      }
      case REJECTED -> ex.problem(rejected(reply), replayed);
    }
  }

  /** The problem a refusal of the ledger is answered with, by its error code. */
  static Problem rejected(ToolResult reply) {
    String code = reply.getError() == null ? "" : reply.getError().getCode();
    return switch (code) {
      case "IDEMPOTENCY_KEY_REUSED" ->
          Problem.of(422, "idempotency-key-reused", "Idempotency key reused", reply);
      case "DUPLICATE_IN_FLIGHT" ->
          Problem.of(409, "duplicate-in-flight", "The same call is in flight", reply);
      case "UNKNOWN_TOOL" -> Problem.of(404, "unknown-tool", "Unknown tool", reply);
      case "BYPASS_NOT_ALLOWED" ->
          Problem.of(403, "bypass-not-allowed", "Bypass not allowed", reply);
      case "BYPASS_APPROVAL_INVALID" ->
          Problem.of(403, "bypass-approval-invalid", "Bypass approval not valid", reply);
      case "ARGUMENTS_TOO_LARGE" ->
          Problem.of(413, "arguments-too-large", "Arguments too large", reply);
      case "ARGUMENTS_NOT_JSON",
          "ARGUMENTS_NOT_OBJECT",
          "MISSING_REQUIRED_FIELD",
          "INVALID_INTENT" ->
          Problem.of(400, "invalid-arguments", "Invalid arguments", reply);
      default -> Problem.of(500, "ledger-refused", "The ledger refused the intent", reply);
    };
  }

  /**
   * A 202's headers: {@code Location} names the key and, when known, the offset of the call's
   * intent on its partition ({@code ?intent=}), so that a {@code GET} there takes a release of the
   * key only if the ledger made it after reading that intent.
   */
  static Map<String, String> stillRunning(String key, long intentOffset) {
    String location =
        "/v1/calls/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
    return Map.of(
        "Location",
        intentOffset >= 0 ? location + "?intent=" + intentOffset : location,
        "Retry-After",
        "1");
  }

  /** 503: nothing was published; the caller calls again after Retry-After. */
  static void unavailable(Exchange ex, String why) {
    ex.problem(
        Problem.of(
                503,
                "unavailable",
                "Service unavailable",
                why + "; nothing was published, the action was not attempted")
            .code("UNAVAILABLE", true, "Call again after Retry-After with the same step (or key)."),
        Map.of("Retry-After", String.valueOf(RETRY_AFTER_SECONDS)));
  }

  /** What to do about an error code of the key derivation; a generic line for codes of others. */
  static String correctiveAction(String code) {
    try {
      return ErrorCode.valueOf(code).correctiveAction();
    } catch (IllegalArgumentException e) {
      return "Fix the arguments and call again.";
    }
  }
}
