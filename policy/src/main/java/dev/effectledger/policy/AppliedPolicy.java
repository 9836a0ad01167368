package dev.effectledger.policy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The tool policy as applied to a cluster: version {@code version} of a tools.yaml text, and per
 * tool the history of its key rules. {@code effectledger tools apply} publishes it to {@code
 * tool-policy} as JSON ({@link #toJson}); every processor task, gateway and client reads it from
 * there ({@link #fromJson}).
 *
 * <p><b>Key rules are versioned.</b> Changing which arguments a tool's key ignores changes the key
 * a client derives for the same step, so a retry of a step first sent under the old rules would be
 * a new key and a second effect. When an applied file changes a tool's rules, the tool's key
 * version goes up by one and the rules it had stay <em>honoured</em> for the tool's retry horizon:
 * its window (the longer of old and new) plus {@code pendingTimeout × maxAttempts}. While rules are
 * honoured the ledger accepts an intent derived under them, and before it starts a new entry it
 * looks for the entry the same step made under each other honoured version (it derives those keys
 * itself from the intent's run, step, scope and arguments): a retry finds the first call's entry
 * whichever rules its client had. Past the horizon, an entry made under the old rules has left its
 * window anyway.
 *
 * @param version 0 for a file read at start that was never applied; 1 and up as applied
 * @param appliedAt when it was applied (the epoch for version 0)
 * @param appliedBy who applied it (the command's user), empty for version 0
 * @param source the tools.yaml text
 * @param policies {@code source} parsed
 * @param keys per tool, its key rules newest first: the current version, then earlier ones with the
 *     instant they stop being honoured
 */
public record AppliedPolicy(
    long version,
    Instant appliedAt,
    String appliedBy,
    String source,
    ToolPolicies policies,
    Map<String, List<KeyRulesVersion>> keys) {

  /** Format of the JSON document; a reader refuses a newer one. */
  public static final int FORMAT = 1;

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * One version of a tool's key rules.
   *
   * @param version 1 for the rules a tool was first applied with, one more at each change
   * @param rules the fields ignored and required
   * @param honouredUntil null for the current rules; otherwise when the ledger stops accepting keys
   *     derived under them
   */
  public record KeyRulesVersion(int version, ArgumentRules rules, Instant honouredUntil) {
    public KeyRulesVersion {
      Objects.requireNonNull(rules, "rules");
    }
  }

  public AppliedPolicy {
    Objects.requireNonNull(appliedAt, "appliedAt");
    Objects.requireNonNull(appliedBy, "appliedBy");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(policies, "policies");
    Map<String, List<KeyRulesVersion>> copy = new TreeMap<>();
    keys.forEach((tool, versions) -> copy.put(tool, List.copyOf(versions)));
    keys = Map.copyOf(copy);
  }

  /** A file read at start, before any policy was applied: every tool at key version 1. */
  public static AppliedPolicy seed(ToolPolicies policies, String source) {
    Map<String, List<KeyRulesVersion>> keys = new TreeMap<>();
    policies
        .tools()
        .forEach(
            (tool, policy) -> keys.put(tool, List.of(new KeyRulesVersion(1, policy.key(), null))));
    return new AppliedPolicy(0, Instant.EPOCH, "", source, policies, keys);
  }

  /**
   * The policy that applying {@code next} (parsed from {@code source}) at {@code now} makes of this
   * one: the next version, each tool's key history carried over, a changed tool's rules one version
   * up with its old ones honoured through its retry horizon, and histories past their horizon
   * dropped.
   */
  public AppliedPolicy next(ToolPolicies next, String source, Instant now, String by) {
    Map<String, List<KeyRulesVersion>> history = new TreeMap<>();
    for (ToolPolicy policy : next.tools().values()) {
      List<KeyRulesVersion> before = keys.getOrDefault(policy.name(), List.of());
      List<KeyRulesVersion> after = new ArrayList<>();
      if (before.isEmpty()) {
        after.add(new KeyRulesVersion(1, policy.key(), null));
      } else if (before.get(0).rules().equals(policy.key())) {
        after.add(before.get(0));
      } else {
        KeyRulesVersion current = before.get(0);
        ToolPolicy old = policies.tools().get(policy.name());
        after.add(new KeyRulesVersion(current.version() + 1, policy.key(), null));
        after.add(
            new KeyRulesVersion(
                current.version(), current.rules(), now.plus(horizon(old, policy))));
      }
      for (KeyRulesVersion earlier : before.subList(Math.min(1, before.size()), before.size())) {
        if (earlier.honouredUntil().isAfter(now)) {
          after.add(earlier);
        }
      }
      history.put(policy.name(), after);
    }
    return new AppliedPolicy(version + 1, now, by, source, next, history);
  }

  /**
   * How long a key derived under a tool's old rules can still be retried: the longer window plus
   * every dispatch's pending timeout.
   */
  static Duration horizon(ToolPolicy old, ToolPolicy now) {
    Duration window =
        old == null || old.window().compareTo(now.window()) < 0 ? now.window() : old.window();
    return window.plus(now.pendingTimeout().multipliedBy(now.maxAttempts()));
  }

  /** The tool's current key version: 1 for a tool the policy has no history of. */
  public int keyVersion(String tool) {
    List<KeyRulesVersion> versions = keys.get(tool);
    return versions == null || versions.isEmpty() ? 1 : versions.get(0).version();
  }

  /**
   * The key rules of {@code tool} honoured at {@code atMillis} (epoch milliseconds), current first:
   * the tool's own rules alone when it has no earlier ones still honoured. Called for every intent:
   * a tool without earlier rules costs one small list.
   */
  public List<ArgumentRules> honouredRules(String tool, ToolPolicy policy, long atMillis) {
    List<KeyRulesVersion> versions = keys.get(tool);
    if (versions == null || versions.size() < 2) {
      return List.of(policy.key());
    }
    List<ArgumentRules> rules = new ArrayList<>();
    rules.add(policy.key());
    for (KeyRulesVersion earlier : versions.subList(1, versions.size())) {
      if (earlier.honouredUntil().toEpochMilli() > atMillis && !rules.contains(earlier.rules())) {
        rules.add(earlier.rules());
      }
    }
    return rules;
  }

  /** SHA-256 of the tools.yaml text, hex: what tells two files apart in logs and status. */
  public String sha256() {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(source.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  /** The document {@code tool-policy} carries. */
  public byte[] toJson() {
    ObjectNode root = JSON.createObjectNode();
    root.put("format", FORMAT);
    root.put("version", version);
    root.put("appliedAt", appliedAt.toString());
    root.put("appliedBy", appliedBy);
    root.put("sha256", sha256());
    root.put("tools.yaml", source);
    // Each tool's class, for clients that route by it (agent-runtime adapters: read tools run in
    // the agent's process, every other class goes through the ledger); readers ignore it otherwise.
    ObjectNode classes = root.putObject("classes");
    new java.util.TreeMap<>(policies.tools())
        .forEach((tool, policy) -> classes.put(tool, policy.toolClass().yamlName()));
    ObjectNode byTool = root.putObject("keys");
    keys.forEach(
        (tool, versions) -> {
          ArrayNode list = byTool.putArray(tool);
          for (KeyRulesVersion v : versions) {
            ObjectNode node = list.addObject();
            node.put("version", v.version());
            ArrayNode ignore = node.putArray("ignore");
            v.rules().ignore().forEach(ignore::add);
            ArrayNode require = node.putArray("require");
            v.rules().require().forEach(require::add);
            if (v.honouredUntil() != null) {
              node.put("honouredUntil", v.honouredUntil().toString());
            }
          }
        });
    try {
      return JSON.writeValueAsBytes(root);
    } catch (IOException e) {
      throw new IllegalStateException("cannot write the policy document", e);
    }
  }

  /**
   * Reads a document {@link #toJson} wrote.
   *
   * @throws PolicyException when it is not one, is of a newer format, or its tools.yaml is invalid
   */
  public static AppliedPolicy fromJson(byte[] json) {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (IOException e) {
      throw new PolicyException(
          "the tool-policy record", List.of("is not a JSON document: " + e.getMessage()));
    }
    if (root == null || !root.isObject() || !root.path("tools.yaml").isTextual()) {
      throw new PolicyException(
          "the tool-policy record", List.of("is not a policy document (no tools.yaml)"));
    }
    if (root.path("format").asInt(0) > FORMAT) {
      throw new PolicyException(
          "the tool-policy record",
          List.of(
              "has format "
                  + root.path("format").asInt()
                  + "; this version reads "
                  + FORMAT
                  + ". Upgrade this process before applying policies with a newer command."));
    }
    long version = root.path("version").asLong();
    String source = root.path("tools.yaml").asText();
    ToolPolicies policies = new ToolPolicyLoader().parse(source, "tool-policy version " + version);
    Map<String, List<KeyRulesVersion>> keys = new TreeMap<>();
    root.path("keys")
        .fields()
        .forEachRemaining(
            e -> {
              List<KeyRulesVersion> versions = new ArrayList<>();
              for (JsonNode v : e.getValue()) {
                versions.add(
                    new KeyRulesVersion(
                        v.path("version").asInt(1),
                        new ArgumentRules(strings(v.path("ignore")), strings(v.path("require"))),
                        v.hasNonNull("honouredUntil")
                            ? Instant.parse(v.get("honouredUntil").asText())
                            : null));
              }
              keys.put(e.getKey(), versions);
            });
    return new AppliedPolicy(
        version,
        Instant.parse(root.path("appliedAt").asText(Instant.EPOCH.toString())),
        root.path("appliedBy").asText(""),
        source,
        policies,
        keys);
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }
}
