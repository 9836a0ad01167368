package dev.effectledger.connectors;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Reads one tool's connector settings, collecting every problem with its path, so a connector can
 * refuse a bad file with one message per problem (as the policy loader does).
 */
public final class Settings {

  private final String path;
  private final JsonNode node;
  private final List<String> problems = new ArrayList<>();

  public Settings(String tool, JsonNode node) {
    this.path = "tools." + tool + ".settings";
    this.node = node;
  }

  /** Reports fields other than {@code allowed}. */
  public void allowOnly(Set<String> allowed) {
    node.fieldNames().forEachRemaining(field -> {
      if (!allowed.contains(field)) {
        problem(field, "unknown field; allowed: " + String.join(", ", allowed.stream().sorted().toList()));
      }
    });
  }

  public String text(String field, String fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    if (!value.isValueNode()) {
      problem(field, "must be a single value");
      return fallback;
    }
    return value.asText();
  }

  public String requiredText(String field, String what) {
    String value = text(field, null);
    if (value == null || value.isBlank()) {
      problem(field, "missing; give " + what);
    }
    return value;
  }

  public boolean bool(String field, boolean fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    if (!value.isBoolean()) {
      problem(field, "'" + value.asText() + "' is not allowed; use true or false");
      return fallback;
    }
    return value.asBoolean();
  }

  public Duration duration(String field, Duration fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    Duration parsed = Durations.parse(value.asText()).orElse(null);
    if (parsed == null || parsed.isNegative() || parsed.isZero()) {
      problem(field, "'" + value.asText() + "' is not a positive duration; use e.g. 500ms, 5s, 1m");
      return fallback;
    }
    return parsed;
  }

  public JsonNode object(String field) {
    JsonNode value = node.get(field);
    if (value != null && !value.isObject()) {
      problem(field, "must be a mapping");
      return null;
    }
    return value;
  }

  public void problem(String field, String message) {
    problems.add(path + "." + field + ": " + message);
  }

  /** Throws {@link IllegalArgumentException} listing every problem, if there are any. */
  public void check() {
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(String.join("\n", problems));
    }
  }
}
