package dev.effectledger.mcp.gateway;

import dev.effectledger.mcp.gateway.McpGatewayConfig.Hint;
import dev.effectledger.policy.ToolClass;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The upstreams' tools as the gateway shows them: one list, each tool under its own name unless two
 * upstreams have a tool of that name, then both as {@code <upstream>_<name>}, and a name once
 * listed kept across list changes ({@link StableNames}); each with the class its annotations give
 * (the documented mapping, overridable in mcp.yaml).
 */
public final class ToolCatalog {

  /**
   * One tool.
   *
   * @param name the name the gateway lists and the ledger's policy uses
   * @param upstream the upstream it lives on
   * @param tool the upstream's tool, as it listed it (its own name, schemas and annotations)
   * @param hint the annotation its class comes from
   */
  public record Entry(String name, String upstream, Tool tool, Hint hint) {

    /** The tool as the gateway lists it: the upstream's, under the gateway's name. */
    public Tool listed() {
      return new Tool(
          name,
          tool.title(),
          tool.description(),
          tool.inputSchema(),
          tool.outputSchema(),
          tool.annotations(),
          tool.meta(),
          tool.icons());
    }
  }

  private final Map<String, Entry> byName;

  private ToolCatalog(Map<String, Entry> byName) {
    this.byName = byName;
  }

  /** The catalog of {@code toolsByUpstream} (upstreams in their configured order). */
  public static ToolCatalog of(Map<String, List<Tool>> toolsByUpstream) {
    return new ToolCatalog(new LinkedHashMap<>()).updated(toolsByUpstream);
  }

  /**
   * The catalog after a list change upstream: {@code toolsByUpstream} is every upstream's list now.
   * A tool still listed keeps its name (see {@link StableNames}).
   */
  public ToolCatalog updated(Map<String, List<Tool>> toolsByUpstream) {
    Map<String, StableNames.Owned<Tool>> previous = new LinkedHashMap<>();
    byName.forEach(
        (name, e) -> previous.put(name, new StableNames.Owned<>(e.upstream(), e.tool())));
    Map<String, Entry> next = new LinkedHashMap<>();
    StableNames.assign(toolsByUpstream, Tool::name, previous)
        .forEach(
            (name, owned) ->
                next.put(
                    name,
                    new Entry(
                        name, owned.upstream(), owned.item(), hintOf(owned.item().annotations()))));
    return new ToolCatalog(next);
  }

  /**
   * The annotation that decides: {@code readOnlyHint}, then {@code idempotentHint} (a repeat has no
   * further effect, destructive or not), then {@code destructiveHint}; none of them, or no
   * annotations at all: {@link Hint#NONE}. MCP says hints are untrusted unless the server is: the
   * mapping is the operator's to change, and a tool named in tools.yaml ignores them.
   */
  static Hint hintOf(ToolAnnotations annotations) {
    if (annotations == null) {
      return Hint.NONE;
    }
    if (Boolean.TRUE.equals(annotations.readOnlyHint())) {
      return Hint.READ_ONLY;
    }
    if (Boolean.TRUE.equals(annotations.idempotentHint())) {
      return Hint.IDEMPOTENT;
    }
    if (Boolean.TRUE.equals(annotations.destructiveHint())) {
      return Hint.DESTRUCTIVE;
    }
    return Hint.NONE;
  }

  /** The class of {@code entry} by its annotations and {@code mapping}. */
  public static ToolClass classOf(Entry entry, Map<Hint, ToolClass> mapping) {
    return mapping.get(entry.hint());
  }

  public Optional<Entry> entry(String name) {
    return Optional.ofNullable(byName.get(name));
  }

  public List<Entry> entries() {
    return new ArrayList<>(byName.values());
  }

  /** The entries by the name the gateway lists them under, in listing order. */
  public Map<String, Entry> byName() {
    return java.util.Collections.unmodifiableMap(byName);
  }
}
