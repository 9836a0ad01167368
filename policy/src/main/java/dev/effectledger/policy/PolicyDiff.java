package dev.effectledger.policy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;

/**
 * What replacing one policy file with another does, tool by tool: what {@code effectledger tools
 * diff} prints before a change is rolled out. Each change says what happens to stored entries and
 * retries, and whether it weakens the ledger's promise (a shrunk window, a weaker class, holding
 * turned into re-dispatching, changed key rules, bypass allowed), which the command refuses without
 * {@code --allow-shrink}.
 */
public record PolicyDiff(List<Change> changes) {

  /** How much a change matters. */
  public enum Risk {
    /** Nothing the ledger promised changes. */
    NONE,
    /** Safe, with something to do during the roll-out (the text says what). */
    CAUTION,
    /** Retries that were deduplicated may become second effects. */
    WEAKENS
  }

  /**
   * One change of one tool.
   *
   * @param tool the tool ({@code (unknownTool)} for the default block)
   * @param what the change and its consequence, one line
   * @param risk how much it matters
   * @param shrunkTo the new window when the window shrinks (entries older than it expire at once),
   *     else null
   */
  public record Change(String tool, String what, Risk risk, Duration shrunkTo) {}

  public static final String UNKNOWN_TOOL = "(unknownTool)";

  /**
   * The changes from {@code before} to {@code after}, by tool name, as rolling out a new file to
   * every processor does: a change of key rules weakens the promise.
   */
  public static PolicyDiff of(ToolPolicies before, ToolPolicies after) {
    return of(before, after, false);
  }

  /**
   * The changes from the applied policy {@code before} to {@code after} applied through tool-policy
   * ({@link AppliedPolicy}), where a change of key rules is versioned: the old rules stay honoured
   * through the tool's retry horizon, so the change is a caution, not a weakening.
   */
  public static PolicyDiff applied(ToolPolicies before, ToolPolicies after) {
    return of(before, after, true);
  }

  private static PolicyDiff of(ToolPolicies before, ToolPolicies after, boolean versionedKeys) {
    List<Change> changes = new ArrayList<>();
    TreeSet<String> names = new TreeSet<>(before.tools().keySet());
    names.addAll(after.tools().keySet());
    for (String name : names) {
      compare(name, before.tools().get(name), after.tools().get(name), versionedKeys, changes);
    }
    compare(
        UNKNOWN_TOOL,
        before.unknownTool().orElse(null),
        after.unknownTool().orElse(null),
        versionedKeys,
        changes);
    return new PolicyDiff(List.copyOf(changes));
  }

  /** Whether any change weakens the ledger's promise. */
  public boolean weakens() {
    return changes.stream().anyMatch(c -> c.risk() == Risk.WEAKENS);
  }

  private static void compare(
      String tool, ToolPolicy old, ToolPolicy now, boolean versionedKeys, List<Change> out) {
    if (old == null && now == null) {
      return;
    }
    if (old == null) {
      out.add(
          new Change(
              tool,
              "added: "
                  + now.toolClass().yamlName()
                  + (now.isLedgered() ? ", window " + Durations.format(now.window()) : "")
                  + ", lane "
                  + now.lane(),
              Risk.NONE,
              null));
      return;
    }
    if (now == null) {
      out.add(
          new Change(
              tool,
              "removed: its stored entries keep the safest terms (a 30-day window, a silent"
                  + " dispatch held); a key without an entry is refused as UNKNOWN_TOOL"
                  + " (or gets unknownTool's policy)",
              Risk.CAUTION,
              null));
      return;
    }
    if (old.toolClass() != now.toolClass()) {
      boolean weaker = now.toolClass().ordinal() < old.toolClass().ordinal();
      out.add(
          new Change(
              tool,
              "class "
                  + old.toolClass().yamlName()
                  + " -> "
                  + now.toolClass().yamlName()
                  + (now.toolClass() == ToolClass.READ
                      ? ": calls pass straight through, no longer deduplicated"
                      : weaker ? ": a weaker class" : ""),
              weaker ? Risk.WEAKENS : Risk.NONE,
              null));
    }
    if (old.isLedgered() && now.isLedgered() && !old.window().equals(now.window())) {
      boolean shrinks = now.window().compareTo(old.window()) < 0;
      out.add(
          new Change(
              tool,
              "window "
                  + Durations.format(old.window())
                  + " -> "
                  + Durations.format(now.window())
                  + (shrinks
                      ? ": completed entries older than "
                          + Durations.format(now.window())
                          + " expire at once, and a retry of one is a new action"
                      : ": entries are kept longer (the store grows by the rate times the"
                          + " difference)"),
              shrinks ? Risk.WEAKENS : Risk.NONE,
              shrinks ? now.window() : null));
    }
    if (old.onAmbiguous() != now.onAmbiguous()) {
      boolean weaker = now.onAmbiguous() == AmbiguityPolicy.REDISPATCH;
      out.add(
          new Change(
              tool,
              "onAmbiguous "
                  + name(old.onAmbiguous())
                  + " -> "
                  + name(now.onAmbiguous())
                  + (weaker
                      ? ": an effect that may have happened is sent again (safe only if the"
                          + " downstream honours the key)"
                      : ""),
              weaker ? Risk.WEAKENS : Risk.NONE,
              null));
    }
    if (!old.key().equals(now.key())) {
      out.add(
          new Change(
              tool,
              "key rules "
                  + rules(old.key())
                  + " -> "
                  + rules(now.key())
                  + (versionedKeys
                      ? ": a new key version; keys derived under the old rules stay honoured"
                          + " through the tool's retry horizon (a retry finds its step's entry)"
                      : ": a step begun under the old rules gets another key under the new ones,"
                          + " so its retry is a new action; apply it with 'effectledger tools"
                          + " apply' (versioned) or roll out while nothing of this tool is in"
                          + " flight"),
              versionedKeys ? Risk.CAUTION : Risk.WEAKENS,
              null));
    }
    if (!old.bypassAllowed() && now.bypassAllowed()) {
      out.add(
          new Change(
              tool,
              "bypass false -> true: an operator approval may run a settled key again",
              Risk.WEAKENS,
              null));
    } else if (old.bypassAllowed() != now.bypassAllowed()) {
      out.add(new Change(tool, "bypass true -> false", Risk.NONE, null));
    }
    if (!old.lane().equals(now.lane())) {
      out.add(
          new Change(
              tool,
              "lane "
                  + old.lane()
                  + " -> "
                  + now.lane()
                  + ": dispatches already in tool-dispatch."
                  + old.lane()
                  + " are performed by that lane's executors; keep them until it drains",
              Risk.CAUTION,
              null));
    }
    if (!old.connector().equals(now.connector()) || !old.settings().equals(now.settings())) {
      out.add(
          new Change(
              tool,
              "connector or settings changed: executors of lane "
                  + now.lane()
                  + " pick it up when they restart",
              Risk.CAUTION,
              null));
    }
    plain(tool, "pendingTimeout", old.pendingTimeout(), now.pendingTimeout(), out);
    plain(tool, "maxAttempts", old.maxAttempts(), now.maxAttempts(), out);
    plain(tool, "onInFlight", name(old.onInFlight()), name(now.onInFlight()), out);
    plain(tool, "retry", old.retry(), now.retry(), out);
    plain(tool, "downstreamKeyWindow", old.downstreamKeyWindow(), now.downstreamKeyWindow(), out);
    plain(tool, "reconcileWithin", old.reconcileWithin(), now.reconcileWithin(), out);
  }

  private static void plain(String tool, String field, Object old, Object now, List<Change> out) {
    if (!Objects.equals(old, now)) {
      out.add(new Change(tool, field + " " + text(old) + " -> " + text(now), Risk.NONE, null));
    }
  }

  private static String text(Object value) {
    if (value == null) {
      return "none";
    }
    if (value instanceof Duration d) {
      return Durations.format(d);
    }
    if (value instanceof RetryPolicy r) {
      return "{maxAttempts: "
          + r.maxAttempts()
          + ", base: "
          + Durations.format(r.base())
          + ", cap: "
          + Durations.format(r.cap())
          + ", jitter: "
          + r.jitter()
          + "}";
    }
    return value.toString();
  }

  private static String name(Enum<?> value) {
    return value.name().toLowerCase(java.util.Locale.ROOT);
  }

  private static String rules(ArgumentRules rules) {
    return "{ignore: " + rules.ignore() + ", require: " + rules.require() + "}";
  }

  /** The changes of {@code tool}. */
  public List<Change> changesOf(String tool) {
    return changes.stream().filter(c -> c.tool().equals(tool)).toList();
  }
}
