package dev.effectledger.client.internal;

import dev.effectledger.client.ToolCall;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Instant;

/**
 * The wire-shaped answers of the deprecated {@code ToolCallClient.call}: a call that got no final
 * reply is answered with an IN_FLIGHT {@link ToolResult} carrying the client's own code.
 */
public final class LegacyReplies {

  private LegacyReplies() {}

  /** An IN_FLIGHT reply for {@code call} under {@code key}, saying why with {@code code}. */
  public static ToolResult notFinal(
      String key, ToolCall call, String code, String why, Instant at) {
    return ToolResult.newBuilder()
        .setIdempotencyKey(key)
        .setTenant(call.step().tenant())
        .setTool(call.tool())
        .setStatus(ResultStatus.IN_FLIGHT)
        .setError(
            ErrorInfo.newBuilder()
                .setCode(code)
                .setMessage(why + "; the action may still happen")
                .setRetriable(true)
                .setCorrectiveAction(
                    "Call again with the same step context: it yields the same key and the action's result, never a second effect.")
                .build())
        .setFirstSeenAt(at)
        .build();
  }
}
