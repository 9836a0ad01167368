package dev.effectledger.policy;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Reads tools.yaml into {@link ToolPolicies}. Every problem in the file is collected before
 * failing, each naming the tool, the field, the bad value and what is allowed, so an operator fixes
 * the file in one pass.
 *
 * <pre>
 * tools:
 *   charge_card:
 *     class: irreversible        # read | write-idempotent | write-non-idempotent | irreversible
 *     window: 30d                # default by class: 24h, 7d, 30d
 *     pendingTimeout: 2m         # default 5m
 *     onInFlight: coalesce       # coalesce | refuse
 *     onAmbiguous: hold          # redispatch | hold (default: redispatch for write-idempotent)
 *     lane: payments             # default: default
 *     connector: http            # required
 *     maxAttempts: 3             # default 3
 *     bypass: false              # default false
 *     retry:                     # executor retries of one dispatch
 *       maxAttempts: 4           # default 4
 *       base: 100ms              # default 100ms
 *       cap: 10s                 # default 10s
 *       jitter: 0.2              # default 0.2
 *     settings: {...}            # connector settings, read by the connector
 *     key:                       # idempotency key rules (clients must use the same)
 *       ignore: [/reason]        # left out of the key and the arguments hash
 *       require: [/amount, /to]  # a call without them is refused
 * unknownTool:                   # optional; without it unknown tools are rejected
 *   class: read
 *   connector: http
 * </pre>
 */
public final class ToolPolicyLoader {

  public static final Duration DEFAULT_PENDING_TIMEOUT = Duration.ofMinutes(5);
  public static final String DEFAULT_LANE = "default";
  public static final int DEFAULT_MAX_ATTEMPTS = 3;

  private static final Set<String> TOP_LEVEL = Set.of("tools", "unknownTool");
  private static final List<String> FIELDS =
      List.of(
          "class", "window", "pendingTimeout", "onInFlight", "onAmbiguous", "lane", "connector",
          "maxAttempts", "bypass", "retry", "settings", "key");
  private static final List<String> RETRY_FIELDS = List.of("maxAttempts", "base", "cap", "jitter");
  private static final String CLASSES =
      Arrays.stream(ToolClass.values()).map(ToolClass::yamlName).collect(Collectors.joining(", "));

  private final ObjectMapper yaml = new ObjectMapper(new YAMLFactory());

  public ToolPolicies load(Path file) {
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      throw new PolicyException(file.toString(), List.of("cannot be read: " + e.getMessage()));
    }
    return parse(text, file.toString());
  }

  public ToolPolicies parse(String text, String source) {
    JsonNode root;
    try {
      root = yaml.readTree(text);
    } catch (JacksonException e) {
      throw new PolicyException(
          source, List.of("is not valid YAML: " + e.getOriginalMessage() + locationOf(e)));
    }
    List<String> problems = new ArrayList<>();
    if (root == null || !root.isObject()) {
      throw new PolicyException(source, List.of("must be a mapping with a 'tools' key"));
    }
    root.fieldNames().forEachRemaining(field -> {
      if (!TOP_LEVEL.contains(field)) {
        problems.add("unknown top-level key '" + field + "'; allowed: tools, unknownTool");
      }
    });
    Map<String, ToolPolicy> tools = new TreeMap<>();
    JsonNode toolsNode = root.path("tools");
    if (!toolsNode.isObject()) {
      problems.add("'tools' must be a mapping of tool name to policy");
    } else {
      for (Map.Entry<String, JsonNode> tool : toolsNode.properties()) {
        toPolicy("tools." + tool.getKey(), tool.getKey(), tool.getValue(), problems)
            .ifPresent(p -> tools.put(tool.getKey(), p));
      }
    }
    Optional<ToolPolicy> unknownTool = Optional.empty();
    if (root.has("unknownTool")) {
      unknownTool = toPolicy("unknownTool", "*", root.get("unknownTool"), problems);
    }
    if (!problems.isEmpty()) {
      throw new PolicyException(source, problems);
    }
    return new ToolPolicies(tools, unknownTool);
  }

  private Optional<ToolPolicy> toPolicy(String path, String name, JsonNode node, List<String> problems) {
    if (!node.isObject()) {
      problems.add(path + ": must be a mapping of policy fields");
      return Optional.empty();
    }
    int before = problems.size();
    node.fieldNames().forEachRemaining(field -> {
      if (!FIELDS.contains(field)) {
        problems.add(path + "." + field + ": unknown field; allowed: " + String.join(", ", FIELDS));
      }
    });
    ToolClass toolClass = null;
    String className = text(node, "class");
    if (className == null) {
      problems.add(path + ".class: missing; allowed: " + CLASSES);
    } else {
      toolClass = ToolClass.fromYaml(className).orElse(null);
      if (toolClass == null) {
        problems.add(path + ".class: '" + className + "' is not a tool class; allowed: " + CLASSES);
      }
    }
    Duration window = duration(path, node, "window", toolClass == null ? null : toolClass.defaultWindow(), ToolPolicy.MAX_WINDOW, problems);
    Duration pendingTimeout = duration(path, node, "pendingTimeout", DEFAULT_PENDING_TIMEOUT, ToolPolicy.MAX_PENDING_TIMEOUT, problems);
    InFlightPolicy onInFlight = choice(path, node, "onInFlight", InFlightPolicy.class, InFlightPolicy.COALESCE, problems);
    AmbiguityPolicy onAmbiguous =
        choice(path, node, "onAmbiguous", AmbiguityPolicy.class,
            toolClass == null ? AmbiguityPolicy.HOLD : toolClass.defaultOnAmbiguous(), problems);
    String lane = node.has("lane") ? text(node, "lane") : DEFAULT_LANE;
    if (lane == null || !ToolPolicy.LANE.matcher(lane).matches()) {
      problems.add(path + ".lane: '" + node.path("lane").asText() + "' is not a legal lane; allowed: 1-200 of A-Z a-z 0-9 . _ -");
    } else if (ToolPolicy.RESERVED_LANES.contains(lane)) {
      problems.add(path + ".lane: '" + lane + "' is reserved: tool-dispatch." + lane + " is the executors' dead-letter topic;"
          + " choose another lane name");
    }
    String connector = text(node, "connector");
    if (connector == null || connector.isBlank()) {
      problems.add(path + ".connector: missing; name the connector executors run for this tool (e.g. http, jdbc, kafka)");
    }
    int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    if (node.has("maxAttempts")) {
      JsonNode value = node.get("maxAttempts");
      if (!value.canConvertToInt() || !value.isIntegralNumber() || value.asInt() < 1) {
        problems.add(path + ".maxAttempts: '" + value.asText() + "' is not allowed; use a whole number of at least 1");
      } else {
        maxAttempts = value.asInt();
      }
    }
    boolean bypass = false;
    if (node.has("bypass")) {
      JsonNode value = node.get("bypass");
      if (!value.isBoolean()) {
        problems.add(path + ".bypass: '" + value.asText() + "' is not allowed; use true or false");
      } else {
        bypass = value.asBoolean();
      }
    }
    RetryPolicy retry = retry(path, node.get("retry"), problems);
    ArgumentRules key = key(path, node.get("key"), problems);
    JsonNode settings = node.get("settings");
    if (settings != null && !settings.isObject()) {
      problems.add(path + ".settings: must be a mapping of connector settings");
    }
    if (toolClass == ToolClass.IRREVERSIBLE && onAmbiguous == AmbiguityPolicy.REDISPATCH) {
      problems.add(path + ".onAmbiguous: 'redispatch' conflicts with class 'irreversible'; an irreversible effect that may have happened is held (use hold)");
    }
    if (problems.size() > before) {
      return Optional.empty();
    }
    return Optional.of(
        new ToolPolicy(name, toolClass, window, pendingTimeout, onInFlight, onAmbiguous, lane,
            connector, maxAttempts, bypass, retry, settings, key));
  }

  private static ArgumentRules key(String path, JsonNode node, List<String> problems) {
    if (node == null) {
      return ArgumentRules.NONE;
    }
    String at = path + ".key";
    if (!node.isObject()) {
      problems.add(at + ": must be a mapping with ignore and require, lists of JSON pointers");
      return ArgumentRules.NONE;
    }
    int before = problems.size();
    node.fieldNames().forEachRemaining(field -> {
      if (!field.equals("ignore") && !field.equals("require")) {
        problems.add(at + "." + field + ": unknown field; allowed: ignore, require");
      }
    });
    List<String> ignore = pointers(at, node, "ignore", problems);
    List<String> require = pointers(at, node, "require", problems);
    if (problems.size() > before) {
      return ArgumentRules.NONE;
    }
    try {
      return new ArgumentRules(ignore, require);
    } catch (IllegalArgumentException e) {
      problems.add(at + ": " + e.getMessage());
      return ArgumentRules.NONE;
    }
  }

  private static List<String> pointers(String path, JsonNode node, String field, List<String> problems) {
    JsonNode list = node.get(field);
    if (list == null) {
      return List.of();
    }
    if (!list.isArray()) {
      problems.add(path + "." + field + ": must be a list of JSON pointers, e.g. [/reason]");
      return List.of();
    }
    List<String> pointers = new ArrayList<>();
    for (JsonNode item : list) {
      String pointer = item.asText();
      if (!item.isTextual() || !pointer.startsWith("/")) {
        problems.add(path + "." + field + ": '" + pointer + "' is not a JSON pointer; write it like /reason or /customer/id");
      } else {
        pointers.add(pointer);
      }
    }
    return pointers;
  }

  private static RetryPolicy retry(String path, JsonNode node, List<String> problems) {
    if (node == null) {
      return RetryPolicy.DEFAULT;
    }
    String at = path + ".retry";
    if (!node.isObject()) {
      problems.add(at + ": must be a mapping with " + String.join(", ", RETRY_FIELDS));
      return RetryPolicy.DEFAULT;
    }
    int before = problems.size();
    node.fieldNames().forEachRemaining(field -> {
      if (!RETRY_FIELDS.contains(field)) {
        problems.add(at + "." + field + ": unknown field; allowed: " + String.join(", ", RETRY_FIELDS));
      }
    });
    RetryPolicy d = RetryPolicy.DEFAULT;
    int maxAttempts = d.maxAttempts();
    if (node.has("maxAttempts")) {
      JsonNode value = node.get("maxAttempts");
      if (!value.isIntegralNumber() || value.asInt() < 1) {
        problems.add(at + ".maxAttempts: '" + value.asText() + "' is not allowed; use a whole number of at least 1");
      } else {
        maxAttempts = value.asInt();
      }
    }
    Duration base = duration(at, node, "base", d.base(), RetryPolicy.MAX_DELAY, problems);
    Duration cap = duration(at, node, "cap", d.cap(), RetryPolicy.MAX_DELAY, problems);
    double jitter = d.jitter();
    if (node.has("jitter")) {
      JsonNode value = node.get("jitter");
      if (!value.isNumber() || value.asDouble() < 0 || value.asDouble() > 1) {
        problems.add(at + ".jitter: '" + value.asText() + "' is not allowed; use a number from 0 to 1");
      } else {
        jitter = value.asDouble();
      }
    }
    if (problems.size() == before && cap.compareTo(base) < 0) {
      problems.add(at + ".cap: '" + node.path("cap").asText(cap.toString()) + "' is below base '"
          + node.path("base").asText(base.toString()) + "'; the cap must be at least the base");
    }
    return problems.size() == before ? new RetryPolicy(maxAttempts, base, cap, jitter) : d;
  }

  private static Duration duration(
      String path, JsonNode node, String field, Duration fallback, Duration max, List<String> problems) {
    if (!node.has(field)) {
      return fallback;
    }
    String value = node.get(field).asText();
    Optional<Duration> parsed = Durations.parse(value);
    if (parsed.isEmpty() || parsed.get().isNegative() || parsed.get().isZero()) {
      problems.add(path + "." + field + ": '" + value + "' is not a positive duration; use e.g. 30s, 15m, 24h, 7d or PT15M");
      return fallback;
    }
    if (parsed.get().compareTo(max) > 0) {
      problems.add(path + "." + field + ": '" + value + "' is out of range; allowed: up to " + Durations.format(max));
      return fallback;
    }
    return parsed.get();
  }

  private static <E extends Enum<E>> E choice(
      String path, JsonNode node, String field, Class<E> type, E fallback, List<String> problems) {
    if (!node.has(field)) {
      return fallback;
    }
    String value = node.get(field).asText();
    try {
      return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      String allowed = Arrays.stream(type.getEnumConstants())
          .map(c -> c.name().toLowerCase(Locale.ROOT))
          .collect(Collectors.joining(", "));
      problems.add(path + "." + field + ": '" + value + "' is not allowed; allowed: " + allowed);
      return fallback;
    }
  }

  private static String text(JsonNode node, String field) {
    JsonNode value = node.get(field);
    return value == null || !value.isValueNode() ? null : value.asText();
  }

  private static String locationOf(JacksonException e) {
    return e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr();
  }
}
