package dev.effectledger.client;

import java.util.Objects;

/**
 * One tool call as the orchestrator sees it: where in the run it happens, which tool, with which
 * arguments.
 *
 * @param step the run and logical step the call belongs to
 * @param tool tool name
 * @param argumentsJson the arguments as a JSON object, in any formatting
 * @param bypassApproval an operator's approval for a deliberate second execution, or null
 * @param traceId a tracing id carried along, never part of the key, or null
 * @param idempotencyKey the caller's own key, used instead of the derived one (as an HTTP {@code
 *     Idempotency-Key}), or null; the arguments hash is still derived, so the same key with other
 *     arguments is refused as {@code IDEMPOTENCY_KEY_REUSED}
 */
public record ToolCall(
    StepContext step,
    String tool,
    String argumentsJson,
    String bypassApproval,
    String traceId,
    String idempotencyKey) {

  /** The longest key a caller may supply, as the HTTP gateway's {@code Idempotency-Key}. */
  public static final int MAX_KEY_LENGTH = 255;

  public ToolCall {
    Objects.requireNonNull(step, "step");
    Objects.requireNonNull(argumentsJson, "argumentsJson");
    if (tool == null || tool.isBlank()) {
      throw new IllegalArgumentException("tool must be set");
    }
    if (bypassApproval != null && bypassApproval.isBlank()) {
      throw new IllegalArgumentException(
          "a bypass needs an explicit approval value; leave it null for a normal call");
    }
    if (idempotencyKey != null
        && (idempotencyKey.isBlank()
            || idempotencyKey.length() > MAX_KEY_LENGTH
            || !idempotencyKey.chars().allMatch(c -> c > 0x20 && c < 0x7f))) {
      throw new IllegalArgumentException(
          "an idempotency key is 1 to "
              + MAX_KEY_LENGTH
              + " visible ASCII characters; leave it null to derive one");
    }
  }

  public static ToolCall of(StepContext step, String tool, String argumentsJson) {
    return new ToolCall(step, tool, argumentsJson, null, null, null);
  }

  /** This call as a deliberate second execution, approved by an operator with {@code approval}. */
  public ToolCall withBypass(String approval) {
    if (approval == null || approval.isBlank()) {
      throw new IllegalArgumentException("a bypass needs an explicit approval value");
    }
    return new ToolCall(step, tool, argumentsJson, approval, traceId, idempotencyKey);
  }

  public ToolCall withTraceId(String trace) {
    return new ToolCall(step, tool, argumentsJson, bypassApproval, trace, idempotencyKey);
  }

  /** This call under the caller's own key instead of the derived one. */
  public ToolCall withIdempotencyKey(String key) {
    return new ToolCall(step, tool, argumentsJson, bypassApproval, traceId, key);
  }
}
