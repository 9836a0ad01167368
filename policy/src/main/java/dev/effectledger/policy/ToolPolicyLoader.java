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
          "class",
          "window",
          "pendingTimeout",
          "onInFlight",
          "onAmbiguous",
          "lane",
          "connector",
          "maxAttempts",
          "bypass",
          "retry",
          "settings",
          "key",
          "downstreamKeyWindow",
          "reconcileWithin");
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
    root.fieldNames()
        .forEachRemaining(
            field -> {
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
      throw new PolicyException(source, problems, new ToolPolicies(tools, unknownTool));
    }
    return new ToolPolicies(tools, unknownTool);
  }

  private Optional<ToolPolicy> toPolicy(
      String path, String name, JsonNode node, List<String> problems) {
    if (!node.isObject()) {
      problems.add(path + ": must be a mapping of policy fields");
      return Optional.empty();
    }
    FieldReader r = FieldReader.of(path, node);
    r.allowOnly(FIELDS);
    ToolClass toolClass = null;
    String className = r.text("class", null);
    if (className == null) {
      r.problem("class", "missing; allowed: " + CLASSES);
    } else {
      toolClass = ToolClass.fromYaml(className).orElse(null);
      if (toolClass == null) {
        r.problem("class", "'" + className + "' is not a tool class; allowed: " + CLASSES);
      }
    }
    Duration window =
        r.duration(
            "window", toolClass == null ? null : toolClass.defaultWindow(), ToolPolicy.MAX_WINDOW);
    Duration pendingTimeout =
        r.duration("pendingTimeout", DEFAULT_PENDING_TIMEOUT, ToolPolicy.MAX_PENDING_TIMEOUT);
    InFlightPolicy onInFlight =
        r.choice("onInFlight", InFlightPolicy.class, InFlightPolicy.COALESCE);
    AmbiguityPolicy onAmbiguous =
        r.choice(
            "onAmbiguous",
            AmbiguityPolicy.class,
            toolClass == null ? AmbiguityPolicy.HOLD : toolClass.defaultOnAmbiguous());
    String lane = r.text("lane", DEFAULT_LANE);
    if (lane == null || !ToolPolicy.LANE.matcher(lane).matches()) {
      r.problem(
          "lane",
          "'"
              + node.path("lane").asText()
              + "' is not a legal lane; allowed: 1-200 of A-Z a-z 0-9 . _ -");
    } else if (ToolPolicy.RESERVED_LANES.contains(lane)) {
      r.problem(
          "lane",
          "'"
              + lane
              + "' is reserved: tool-dispatch."
              + lane
              + " is the executors' dead-letter topic;"
              + " choose another lane name");
    }
    String connector =
        r.requiredText(
            "connector", "name the connector executors run for this tool (e.g. http, jdbc, kafka)");
    int maxAttempts = r.atLeast("maxAttempts", 1, DEFAULT_MAX_ATTEMPTS);
    boolean bypass = r.bool("bypass", false);
    RetryPolicy retry =
        r.mapping("retry", "with " + String.join(", ", RETRY_FIELDS))
            .map(ToolPolicyLoader::retry)
            .orElse(RetryPolicy.DEFAULT);
    ArgumentRules key =
        r.mapping("key", "with ignore and require, lists of JSON pointers")
            .map(ToolPolicyLoader::key)
            .orElse(ArgumentRules.NONE);
    JsonNode settings =
        r.mapping("settings", "of connector settings").isPresent() ? node.get("settings") : null;
    Duration downstreamKeyWindow = r.duration("downstreamKeyWindow", null, ToolPolicy.MAX_WINDOW);
    Duration reconcileWithin = r.duration("reconcileWithin", null, ToolPolicy.MAX_WINDOW);
    if (toolClass == ToolClass.IRREVERSIBLE && onAmbiguous == AmbiguityPolicy.REDISPATCH) {
      r.problem(
          "onAmbiguous",
          "'redispatch' conflicts with class 'irreversible'; an irreversible effect that may have happened is"
              + " held (use hold)");
    }
    if (r.problemCount() > 0) {
      problems.addAll(r.problems());
      return Optional.empty();
    }
    return Optional.of(
        ToolPolicy.builder(name, toolClass)
            .window(window)
            .pendingTimeout(pendingTimeout)
            .onInFlight(onInFlight)
            .onAmbiguous(onAmbiguous)
            .lane(lane)
            .connector(connector)
            .maxAttempts(maxAttempts)
            .bypassAllowed(bypass)
            .retry(retry)
            .settings(settings)
            .key(key)
            .downstreamKeyWindow(downstreamKeyWindow)
            .reconcileWithin(reconcileWithin)
            .build());
  }

  private static ArgumentRules key(FieldReader r) {
    int before = r.problemCount();
    r.allowOnly(List.of("ignore", "require"));
    List<String> ignore = pointers(r, "ignore");
    List<String> require = pointers(r, "require");
    if (r.problemCount() > before) {
      return ArgumentRules.NONE;
    }
    try {
      return new ArgumentRules(ignore, require);
    } catch (IllegalArgumentException e) {
      r.problem("", e.getMessage());
      return ArgumentRules.NONE;
    }
  }

  private static List<String> pointers(FieldReader r, String field) {
    JsonNode list = r.raw(field);
    if (list == null) {
      return List.of();
    }
    if (!list.isArray()) {
      r.problem(field, "must be a list of JSON pointers, e.g. [/reason]");
      return List.of();
    }
    List<String> pointers = new ArrayList<>();
    for (JsonNode item : list) {
      String pointer = item.asText();
      if (!item.isTextual() || !pointer.startsWith("/")) {
        r.problem(
            field,
            "'" + pointer + "' is not a JSON pointer; write it like /reason or /customer/id");
      } else {
        pointers.add(pointer);
      }
    }
    return pointers;
  }

  private static RetryPolicy retry(FieldReader r) {
    int before = r.problemCount();
    r.allowOnly(RETRY_FIELDS);
    RetryPolicy d = RetryPolicy.DEFAULT;
    int maxAttempts = r.atLeast("maxAttempts", 1, d.maxAttempts());
    Duration base = r.duration("base", d.base(), RetryPolicy.MAX_DELAY);
    Duration cap = r.duration("cap", d.cap(), RetryPolicy.MAX_DELAY);
    double jitter = r.between("jitter", 0, 1, d.jitter());
    if (r.problemCount() == before && cap.compareTo(base) < 0) {
      r.problem(
          "cap",
          "'"
              + r.raw("cap").asText(cap.toString())
              + "' is below base '"
              + (r.has("base") ? r.raw("base").asText() : base.toString())
              + "'; the cap must be at least the base");
    }
    return r.problemCount() == before ? new RetryPolicy(maxAttempts, base, cap, jitter) : d;
  }

  private static String locationOf(JacksonException e) {
    return e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr();
  }
}
