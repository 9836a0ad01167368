package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import java.util.Locale;

/**
 * Policies for the upstreams' write tools that the ledger's tools.yaml does not name, so that the
 * processor, the executors and the gateway agree on them: each with the class its annotations give
 * ({@link ToolCatalog}), the {@code defaults} of mcp.yaml (lane {@code mcp}, pending timeout 10m
 * and ambiguous outcomes held, unless set), and the {@code mcp} connector pointed at its upstream.
 * A generated policy is a starting point: an operator reviews it (a lookup tool, a window) and
 * keeps it in tools.yaml, where it then wins over the annotations.
 */
public final class PolicyGenerator {

  private static final ObjectMapper JSON = new ObjectMapper();

  private PolicyGenerator() {}

  /** {@code {tools: {...}}} with one policy per write tool {@code policies} lacks. */
  public static ObjectNode missing(
      McpGatewayConfig config, ToolCatalog catalog, ToolPolicies policies) {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode tools = root.putObject("tools");
    for (ToolCatalog.Entry entry : catalog.entries()) {
      ToolClass toolClass = ToolCatalog.classOf(entry, config.annotations());
      if (toolClass == ToolClass.READ || policies.forTool(entry.name()).isPresent()) {
        continue;
      }
      ObjectNode policy = tools.putObject(entry.name());
      policy.put("class", toolClass.name().toLowerCase(Locale.ROOT).replace('_', '-'));
      policy.put("lane", "mcp");
      policy.put("pendingTimeout", "10m");
      policy.put("onAmbiguous", "hold");
      config.defaults().properties().forEach(e -> policy.set(e.getKey(), e.getValue()));
      policy.put("connector", "mcp");
      JsonNode upstream = config.upstreams().get(entry.upstream());
      ObjectNode settings =
          upstream.isObject() ? ((ObjectNode) upstream).deepCopy() : JSON.createObjectNode();
      settings.put("tool", entry.tool().name());
      policy.set("settings", settings);
    }
    return root;
  }
}
