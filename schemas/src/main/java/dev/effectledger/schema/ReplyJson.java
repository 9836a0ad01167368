package dev.effectledger.schema;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;

/**
 * A reply as JSON, for HTTP: the processor's {@code /v1/results} route writes it and the gateway
 * reads it and answers its callers in it. One format, built here. {@code result} is the tool's
 * result as JSON (a result that is not JSON is given as a string).
 */
public final class ReplyJson {

  private static final ObjectMapper JSON = new ObjectMapper();

  private ReplyJson() {}

  public static ObjectNode of(ToolResult reply) {
    ObjectNode out =
        JSON.createObjectNode()
            .put("key", reply.getIdempotencyKey())
            .put("tool", reply.getTool())
            .put("status", reply.getStatus().name())
            .put("replayed", reply.getReplayed())
            .put("attempts", reply.getAttempts())
            .put("firstSeenAt", reply.getFirstSeenAt().toString());
    if (reply.getCompletedAt() != null) {
      out.put("completedAt", reply.getCompletedAt().toString());
    }
    if (reply.getEffectId() != null) {
      out.put("effectId", reply.getEffectId());
    }
    if (reply.getResultJson() != null) {
      out.set("result", result(reply.getResultJson()));
    }
    if (reply.getError() != null) {
      out.set("error", error(reply.getError()));
    }
    return out;
  }

  public static ObjectNode error(ErrorInfo error) {
    return JSON.createObjectNode()
        .put("code", error.getCode())
        .put("message", error.getMessage())
        .put("retriable", error.getRetriable())
        .put("correctiveAction", error.getCorrectiveAction());
  }

  /**
   * The reply {@link #of} wrote; {@code tenant} is not in the JSON (a caller sees only its own).
   *
   * @throws IllegalArgumentException when {@code json} is not such a reply
   */
  public static ToolResult parse(JsonNode json, String tenant) {
    try {
      ToolResult.Builder reply =
          ToolResult.newBuilder()
              .setIdempotencyKey(text(json, "key"))
              .setTenant(tenant)
              .setTool(text(json, "tool"))
              .setStatus(ResultStatus.valueOf(text(json, "status")))
              .setReplayed(json.path("replayed").asBoolean(false))
              .setAttempts(json.path("attempts").asInt(0))
              .setFirstSeenAt(Instant.parse(text(json, "firstSeenAt")));
      if (json.hasNonNull("completedAt")) {
        reply.setCompletedAt(Instant.parse(json.get("completedAt").asText()));
      }
      if (json.hasNonNull("effectId")) {
        reply.setEffectId(json.get("effectId").asText());
      }
      if (json.has("result")) {
        JsonNode result = json.get("result");
        reply.setResultJson(result.isTextual() ? result.asText() : result.toString());
      }
      if (json.hasNonNull("error")) {
        JsonNode error = json.get("error");
        reply.setError(
            ErrorInfo.newBuilder()
                .setCode(text(error, "code"))
                .setMessage(error.path("message").asText(""))
                .setRetriable(error.path("retriable").asBoolean(false))
                .setCorrectiveAction(error.path("correctiveAction").asText(""))
                .build());
      }
      return reply.build();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a reply: " + e.getMessage(), e);
    }
  }

  private static JsonNode result(String resultJson) {
    try {
      return JSON.readTree(resultJson);
    } catch (JsonProcessingException e) {
      return JSON.getNodeFactory().textNode(resultJson);
    }
  }

  private static String text(JsonNode json, String field) {
    JsonNode value = json.get(field);
    if (value == null || !value.isTextual()) {
      throw new IllegalArgumentException("missing text field " + field);
    }
    return value.asText();
  }
}
