package dev.effectledger.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.util.Locale;
import java.util.TreeMap;

/**
 * {@code GET /v1/tools}: the tools a caller may call, with what an agent runtime's adapter needs to
 * route them: the class ({@code read} goes straight to the tool, every other class through the
 * ledger), what a duplicate in flight and an ambiguous outcome become, and the key rules. It is the
 * live policy: after {@code effectledger tools apply} the next listing shows the applied file.
 * Connector settings (URLs, secrets) are never listed.
 */
final class ToolCatalogue {

  private static final ObjectMapper JSON = new ObjectMapper();

  private ToolCatalogue() {}

  static String json(ToolPolicies policies, Credentials.Caller caller) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode tools = root.putArray("tools");
    for (ToolPolicy tool : new TreeMap<>(policies.tools()).values()) {
      if (!caller.mayCall(tool.name())) {
        continue;
      }
      ObjectNode entry = tools.addObject();
      entry.put("name", tool.name());
      entry.put("class", tool.toolClass().yamlName());
      entry.put("ledgered", tool.isLedgered());
      entry.put("onInFlight", tool.onInFlight().name().toLowerCase(Locale.ROOT));
      entry.put("onAmbiguous", tool.onAmbiguous().name().toLowerCase(Locale.ROOT));
      entry.put("bypass", tool.bypassAllowed());
      ObjectNode key = entry.putObject("key");
      tool.key().ignore().forEach(key.putArray("ignore")::add);
      tool.key().require().forEach(key.putArray("require")::add);
    }
    root.put("unknownTools", policies.unknownTool().isPresent() ? "ledgered" : "rejected");
    return root.toString();
  }
}
