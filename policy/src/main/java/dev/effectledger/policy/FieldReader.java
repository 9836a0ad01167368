package dev.effectledger.policy;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Reads the fields of one mapping of tools.yaml (a tool's policy, its retry, a connector's
 * settings), collecting every problem with its path instead of stopping at the first, so an
 * operator fixes a file in one pass. Each read returns the fallback when the field is absent or
 * wrong; {@link #check()} or {@link #problems()} says what was wrong. The policy loader and every
 * connector's settings read through it, so a field means and reports the same everywhere.
 */
public final class FieldReader {

  private final String path;
  private final JsonNode node;
  private final List<String> problems;

  private FieldReader(String path, JsonNode node, List<String> problems) {
    this.path = path;
    this.node = node;
    this.problems = problems;
  }

  /** A reader of {@code node}, whose problems name fields as {@code path.field}. */
  public static FieldReader of(String path, JsonNode node) {
    return new FieldReader(path, node, new ArrayList<>());
  }

  /**
   * A reader of the mapping under {@code field}, sharing this reader's problems; empty when absent
   * or not a mapping (reported).
   */
  public Optional<FieldReader> mapping(String field, String what) {
    JsonNode value = node.get(field);
    if (value == null) {
      return Optional.empty();
    }
    if (!value.isObject()) {
      problem(field, "must be a mapping" + (what.isEmpty() ? "" : " " + what));
      return Optional.empty();
    }
    return Optional.of(new FieldReader(path + "." + field, value, problems));
  }

  public String path() {
    return path;
  }

  public boolean has(String field) {
    return node.has(field);
  }

  /** The raw value of {@code field}, or null. */
  public JsonNode raw(String field) {
    return node.get(field);
  }

  /** Reports every field not in {@code allowed}, naming them in their order. */
  public void allowOnly(Collection<String> allowed) {
    node.fieldNames()
        .forEachRemaining(
            field -> {
              if (!allowed.contains(field)) {
                problem(field, "unknown field; allowed: " + String.join(", ", allowed));
              }
            });
  }

  /** A single value as text; {@code fallback} when absent, or when a list or mapping (reported). */
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

  /** A value that must be there and not blank; {@code what} says what to give. */
  public String requiredText(String field, String what) {
    String value = text(field, null);
    if (value == null || value.isBlank()) {
      if (!has(field) || node.get(field).isValueNode()) {
        problem(field, "missing; " + what);
      }
      return null;
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

  /** A whole number of at least {@code min}. */
  public int atLeast(String field, int min, int fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    if (!value.isIntegralNumber() || !value.canConvertToInt() || value.asInt() < min) {
      problem(
          field, "'" + value.asText() + "' is not allowed; use a whole number of at least " + min);
      return fallback;
    }
    return value.asInt();
  }

  /** A number from {@code min} to {@code max}. */
  public double between(String field, double min, double max, double fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    if (!value.isNumber() || value.asDouble() < min || value.asDouble() > max) {
      problem(
          field,
          "'"
              + value.asText()
              + "' is not allowed; use a number from "
              + plain(min)
              + " to "
              + plain(max));
      return fallback;
    }
    return value.asDouble();
  }

  /**
   * A positive duration ({@code 500ms}, {@code 30s}, {@code 15m}, {@code 24h}, {@code 7d} or
   * ISO-8601) up to {@code max}.
   */
  public Duration duration(String field, Duration fallback, Duration max) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    String text = value.asText();
    Optional<Duration> parsed = Durations.parse(text);
    if (parsed.isEmpty() || parsed.get().isNegative() || parsed.get().isZero()) {
      problem(
          field, "'" + text + "' is not a positive duration; use e.g. 30s, 15m, 24h, 7d or PT15M");
      return fallback;
    }
    if (parsed.get().compareTo(max) > 0) {
      problem(field, "'" + text + "' is out of range; allowed: up to " + Durations.format(max));
      return fallback;
    }
    return parsed.get();
  }

  /** A positive duration of at most ten years. */
  public Duration duration(String field, Duration fallback) {
    return duration(field, fallback, ToolPolicy.MAX_WINDOW);
  }

  /** The mapping under {@code field} as it is, or null when absent or not a mapping (reported). */
  public JsonNode object(String field) {
    JsonNode value = node.get(field);
    if (value != null && !value.isObject()) {
      problem(field, "must be a mapping");
      return null;
    }
    return value;
  }

  /** One of {@code type}'s constants, written in lower case. */
  public <E extends Enum<E>> E choice(String field, Class<E> type, E fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    String text = value.asText();
    try {
      return Enum.valueOf(type, text.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      String allowed =
          Arrays.stream(type.getEnumConstants())
              .map(c -> c.name().toLowerCase(Locale.ROOT))
              .collect(Collectors.joining(", "));
      problem(field, "'" + text + "' is not allowed; allowed: " + allowed);
      return fallback;
    }
  }

  /** Reports a problem with {@code field}; an empty field reports on the mapping itself. */
  public void problem(String field, String message) {
    problems.add((field.isEmpty() ? path : path + "." + field) + ": " + message);
  }

  /** Every problem so far, of this reader and the readers it shares them with. */
  public List<String> problems() {
    return List.copyOf(problems);
  }

  public int problemCount() {
    return problems.size();
  }

  /**
   * Throws {@link IllegalArgumentException} listing every problem, one per line, if there are any.
   */
  public void check() {
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(String.join("\n", problems));
    }
  }

  private static String plain(double number) {
    return number == Math.rint(number) ? Long.toString((long) number) : Double.toString(number);
  }
}
