package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.CallError;
import dev.effectledger.client.CallResult;
import dev.effectledger.mcp.McpMeta;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Content;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ledger's answers as MCP {@code CallToolResult}s. A success is the tool's own result (the one
 * stored at its first execution, for a replay too), with the key, the effect id and whether it was
 * replayed in {@code _meta}. Every other answer is a tool error ({@code isError: true}), so that
 * the model sees it, with structured content naming the code and what to do: {@code code}, {@code
 * message}, {@code retriable}, {@code correctiveAction}, {@code idempotencyKey}.
 */
final class Answers {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<List<Content>> CONTENT = new TypeReference<>() {};

  /** How the ledger words the mcp connector's failure: its code, then the tool's content. */
  private static final String TOOL_ERROR = "TOOL_ERROR: ";

  private Answers() {}

  static CallToolResult of(CallResult result) {
    if (result instanceof CallResult.Succeeded s) {
      return succeeded(s);
    }
    if (result instanceof CallResult.Failed f) {
      String message = f.error() == null ? "" : f.error().message();
      if (message != null && message.startsWith(TOOL_ERROR)) {
        // the mcp connector's TOOL_ERROR: the tool's own error content, as it first answered
        return error(
            f.key(), f.error(), toolContent(message.substring(TOOL_ERROR.length())), f.replayed());
      }
      return error(f.key(), f.error(), null, f.replayed());
    }
    if (result instanceof CallResult.HeldUnknown h && h.partial()) {
      // Some writes happened: the agent must not redo the tool; the report says which.
      return error(h.key(), h.error(), null, h.replayed(), h.reportJson());
    }
    if (result instanceof CallResult.HeldUnknown h) {
      CallError held =
          new CallError(
              "EFFECT_HELD",
              "the effect may have happened ("
                  + (h.error() == null
                      ? "no answer"
                      : h.error().code() + ": " + h.error().message())
                  + "); it is held until an operator or the reconciler settles it",
              false,
              "Do not do it another way: call again later with the same arguments in the same run"
                  + " to get the settled result.");
      return error(h.key(), held, null, h.replayed());
    }
    if (result instanceof CallResult.Rejected r) {
      return error(r.key(), r.error(), null, false);
    }
    CallResult.StillRunning running = (CallResult.StillRunning) result;
    return error(
        running.key(),
        new CallError(
            "STILL_RUNNING",
            "the call is still running (" + running.reason() + ")",
            true,
            "Call again with the same arguments in the same run: you get its result, never a"
                + " second effect."),
        null,
        false);
  }

  /** A tool error the gateway answers itself, before anything reaches the ledger. */
  static CallToolResult refused(String code, String message, String correctiveAction) {
    return error(null, new CallError(code, message, false, correctiveAction), null, false);
  }

  /** A refusal to call again later, as {@code correctiveAction} says: retriable. */
  static CallToolResult later(String code, String message, String correctiveAction) {
    return error(null, new CallError(code, message, true, correctiveAction), null, false);
  }

  private static CallToolResult succeeded(CallResult.Succeeded s) {
    Map<String, Object> meta = meta(s.key(), s.replayed());
    if (s.effectId() != null) {
      meta.put(McpMeta.EFFECT_ID, s.effectId());
    }
    CallToolResult stored = storedResult(s.resultJson());
    if (stored != null) {
      return new CallToolResult(stored.content(), false, stored.structuredContent(), meta);
    }
    // a result kept by another connector, or by an operator's resolution: shown as JSON
    Object structured = null;
    try {
      JsonNode node = JSON.readTree(s.resultJson());
      if (node != null && node.isObject()) {
        structured = JSON.convertValue(node, Map.class);
      }
    } catch (JsonProcessingException e) {
      // text only
    }
    return CallToolResult.builder()
        .addTextContent(s.resultJson())
        .structuredContent(structured)
        .isError(false)
        .meta(meta)
        .build();
  }

  private static CallToolResult storedResult(String resultJson) {
    try {
      JsonNode node = JSON.readTree(resultJson);
      if (node == null || !node.isObject() || !node.path("content").isArray()) {
        return null;
      }
      return JSON.treeToValue(node, CallToolResult.class);
    } catch (JsonProcessingException | IllegalArgumentException e) {
      return null;
    }
  }

  private static List<Content> toolContent(String message) {
    try {
      return JSON.readValue(message, CONTENT);
    } catch (JsonProcessingException e) {
      return null;
    }
  }

  private static CallToolResult error(
      String key, CallError error, List<Content> content, boolean replayed) {
    return error(key, error, content, replayed, null);
  }

  /** As above, with a partial success's report (JSON) in the structured content. */
  private static CallToolResult error(
      String key, CallError error, List<Content> content, boolean replayed, String report) {
    Map<String, Object> structured = new LinkedHashMap<>();
    if (report != null) {
      try {
        structured.put("report", JSON.readValue(report, Object.class));
      } catch (JsonProcessingException e) {
        structured.put("report", report);
      }
    }
    structured.put("code", error.code());
    structured.put("message", error.message());
    structured.put("retriable", error.retriable());
    structured.put("correctiveAction", error.correctiveAction());
    if (key != null) {
      structured.put("idempotencyKey", key);
    }
    CallToolResult.Builder answer = CallToolResult.builder().isError(true);
    if (content != null && !content.isEmpty()) {
      answer.content(content);
    } else {
      answer.addTextContent(
          error.code()
              + ": "
              + error.message()
              + (error.correctiveAction() == null || error.correctiveAction().isBlank()
                  ? ""
                  : " " + error.correctiveAction()));
    }
    answer.structuredContent(structured);
    if (key != null) {
      answer.meta(meta(key, replayed));
    }
    return answer.build();
  }

  private static Map<String, Object> meta(String key, boolean replayed) {
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put(McpMeta.IDEMPOTENCY_KEY, key);
    meta.put(McpMeta.REPLAYED, replayed);
    return meta;
  }
}
