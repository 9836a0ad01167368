package dev.effectledger.gateway;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.JsonSyntax;
import java.util.Iterator;
import java.util.Set;

/**
 * The body of {@code POST /v1/tools/{tool}/calls}: {@code {"arguments": {...}, "step": {"run":
 * "...", "step": "...", "scope": "..."}, "bypassApproval": "..."}} (the last optional), read
 * strictly: one JSON object, no duplicate names, no trailing data, no field the API does not
 * define.
 *
 * @param argumentsJson the arguments object as JSON text
 * @param run the durable run the call belongs to
 * @param step the logical step within the run
 * @param scope what the effect is about; empty when none
 * @param bypassApproval an operator's approval for a deliberate second execution of a settled key
 *     (docs/tool-policy.md#bypass), or null for a normal call
 */
record CallBody(
    String argumentsJson, String run, String step, String scope, String bypassApproval) {

  private static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private static final Set<String> FIELDS = Set.of("arguments", "step", "bypassApproval");
  private static final Set<String> STEP_FIELDS = Set.of("run", "step", "scope");
  private static final int MAX_TEXT = 512;
  private static final int MAX_APPROVAL = 4096;

  /**
   * A body the API cannot take: {@code field} is a JSON pointer into it, or empty for the whole.
   */
  static final class Invalid extends RuntimeException {
    final String field;

    Invalid(String field, String message) {
      super(message);
      this.field = field;
    }
  }

  static CallBody parse(byte[] body) {
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw new Invalid("", "the body is not JSON: " + JsonSyntax.describe(e));
    } catch (java.io.IOException e) {
      throw new Invalid("", "the body could not be read: " + e.getMessage());
    }
    if (root == null || root.isMissingNode() || !root.isObject()) {
      throw new Invalid("", "the body must be one JSON object with \"arguments\" and \"step\"");
    }
    unknownFields(root, FIELDS, "");
    JsonNode arguments = root.get("arguments");
    if (arguments == null) {
      throw new Invalid("/arguments", "\"arguments\" is required: the tool's named arguments");
    }
    if (!arguments.isObject()) {
      throw new Invalid("/arguments", "\"arguments\" must be a JSON object of named arguments");
    }
    JsonNode step = root.get("step");
    if (step == null) {
      throw new Invalid(
          "/step",
          "\"step\" is required: {\"run\": ..., \"step\": ...}, the key is derived from it");
    }
    if (!step.isObject()) {
      throw new Invalid("/step", "\"step\" must be an object with \"run\", \"step\" and \"scope\"");
    }
    unknownFields(step, STEP_FIELDS, "/step");
    return new CallBody(
        arguments.toString(),
        text(step, "run", true),
        text(step, "step", true),
        text(step, "scope", false),
        approval(root.get("bypassApproval")));
  }

  private static String approval(JsonNode value) {
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual() || value.asText().isBlank()) {
      throw new Invalid(
          "/bypassApproval",
          "\"bypassApproval\" must be an operator's approval (a non-empty string); leave it out for"
              + " a normal call");
    }
    if (value.asText().length() > MAX_APPROVAL) {
      throw new Invalid(
          "/bypassApproval", "\"bypassApproval\" is longer than " + MAX_APPROVAL + " characters");
    }
    return value.asText();
  }

  private static void unknownFields(JsonNode object, Set<String> known, String at) {
    for (Iterator<String> names = object.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!known.contains(name)) {
        throw new Invalid(
            at + "/" + name.replace("~", "~0").replace("/", "~1"),
            "unknown field \""
                + name
                + "\" (allowed: "
                + String.join(", ", known.stream().sorted().toList())
                + ")");
      }
    }
  }

  private static String text(JsonNode step, String field, boolean required) {
    JsonNode value = step.get(field);
    if (value == null || value.isNull()) {
      if (required) {
        throw new Invalid("/step/" + field, "\"step." + field + "\" is required");
      }
      return "";
    }
    if (!value.isTextual()) {
      throw new Invalid("/step/" + field, "\"step." + field + "\" must be a string");
    }
    String text = value.asText();
    if (required && text.isBlank()) {
      throw new Invalid("/step/" + field, "\"step." + field + "\" must not be empty");
    }
    if (text.length() > MAX_TEXT) {
      throw new Invalid(
          "/step/" + field, "\"step." + field + "\" is longer than " + MAX_TEXT + " characters");
    }
    return text;
  }
}
