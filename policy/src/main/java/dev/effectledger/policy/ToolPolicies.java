package dev.effectledger.policy;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Every tool's policy, and what applies to a tool the file does not name.
 *
 * @param tools policies by tool name
 * @param unknownTool policy for tools not in {@code tools}; empty means such intents are rejected
 *     with {@code UNKNOWN_TOOL}
 */
public record ToolPolicies(Map<String, ToolPolicy> tools, Optional<ToolPolicy> unknownTool) {

  public ToolPolicies {
    tools = Map.copyOf(tools);
  }

  public static ToolPolicies of(ToolPolicy... policies) {
    Map<String, ToolPolicy> byName = new TreeMap<>();
    for (ToolPolicy policy : policies) {
      byName.put(policy.name(), policy);
    }
    return new ToolPolicies(byName, Optional.empty());
  }

  /**
   * Warnings a valid file may still deserve, one line each: tools whose retry horizon can outlive
   * the downstream's key window ({@link RetryHorizon#warning}).
   */
  public java.util.List<String> warnings() {
    return tools.values().stream().map(RetryHorizon::warning).flatMap(Optional::stream).toList();
  }

  /** The policy for {@code tool}, the unknown-tool default, or empty when the tool is unknown. */
  public Optional<ToolPolicy> forTool(String tool) {
    ToolPolicy policy = tools.get(tool);
    if (policy != null) {
      return Optional.of(policy);
    }
    return unknownTool.map(p -> p.named(tool));
  }

  /**
   * The terms the ledger keeps an existing entry of {@code tool} under: the tool's own policy when
   * the file names it as a ledgered tool, otherwise the safest terms (irreversible: held, never
   * re-dispatched blind; the longest of the irreversible default window and the unknown-tool
   * window). An entry written while the tool was a write tool must not be purged early or
   * re-dispatched because the file changed since; the unknown-tool default is for new intents only.
   */
  public ToolPolicy forEntryOf(String tool) {
    ToolPolicy named = tools.get(tool);
    if (named != null && named.isLedgered()) {
      return named;
    }
    Duration window =
        unknownTool
            .map(ToolPolicy::window)
            .filter(w -> w.compareTo(ToolClass.IRREVERSIBLE.defaultWindow()) > 0)
            .orElse(ToolClass.IRREVERSIBLE.defaultWindow());
    return ToolPolicy.builder(tool, ToolClass.IRREVERSIBLE)
        .window(window)
        .connector("unknown")
        .maxAttempts(1)
        .build();
  }
}
