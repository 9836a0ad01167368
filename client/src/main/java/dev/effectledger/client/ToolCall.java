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
 */
public record ToolCall(
    StepContext step, String tool, String argumentsJson, String bypassApproval, String traceId) {

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
  }

  public static ToolCall of(StepContext step, String tool, String argumentsJson) {
    return new ToolCall(step, tool, argumentsJson, null, null);
  }

  /** This call as a deliberate second execution, approved by an operator with {@code approval}. */
  public ToolCall withBypass(String approval) {
    if (approval == null || approval.isBlank()) {
      throw new IllegalArgumentException("a bypass needs an explicit approval value");
    }
    return new ToolCall(step, tool, argumentsJson, approval, traceId);
  }

  public ToolCall withTraceId(String trace) {
    return new ToolCall(step, tool, argumentsJson, bypassApproval, trace);
  }
}
