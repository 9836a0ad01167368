package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The tools on an executor's lanes and what their connectors can take: which need start markers
 * (their downstream cannot take a repeat), and whether every irreversible one can be run safely.
 */
final class LaneTools {

  private final List<String> lanes;
  private final Map<String, Connector> connectors;
  private final ToolPolicies policies;

  LaneTools(List<String> lanes, Map<String, Connector> connectors, ToolPolicies policies) {
    this.lanes = List.copyOf(lanes);
    this.connectors = Map.copyOf(connectors);
    this.policies = policies;
  }

  /** Whether {@code tool}'s connector cannot take a repeat, so its starts must be journalled. */
  boolean needsJournal(String tool) {
    Connector connector = connectors.get(tool);
    return connector != null && !connector.capabilities().safeToRepeat();
  }

  /** The lanes with at least one tool that needs start markers. */
  List<String> journalledLanes() {
    return lanes.stream()
        .filter(
            lane ->
                policies.tools().values().stream()
                    .anyMatch(p -> p.lane().equals(lane) && needsJournal(p.name())))
        .toList();
  }

  /**
   * @throws IllegalStateException naming each irreversible tool on these lanes whose connector
   *     neither honours keys nor is transactional nor can look effects up, or that has no connector
   */
  void refuseUnsafeIrreversibleTools() {
    List<String> unsafe = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      if (policy.toolClass() != ToolClass.IRREVERSIBLE || !lanes.contains(policy.lane())) {
        continue;
      }
      Connector connector = connectors.get(policy.name());
      if (connector == null
          || !connector.capabilities().safeToRepeat()
              && !connector.capabilities().supportsLookup()) {
        unsafe.add(policy.name());
      }
    }
    if (!unsafe.isEmpty()) {
      throw new IllegalStateException(
          "Refusing to start: irreversible tool(s) "
              + unsafe
              + " have a connector that neither honours keys nor is transactional nor can look an effect up by key, so an"
              + " effect that may have happened could never be resolved. Use a connector whose downstream dedups the key"
              + " (e.g. http with honoursKeys: true against an Idempotency-Key API), jdbc, kafka, or give it a lookup"
              + " (http lookupUrl).");
    }
  }
}
