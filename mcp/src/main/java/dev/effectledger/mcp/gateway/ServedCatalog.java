package dev.effectledger.mcp.gateway;

import dev.effectledger.mcp.gateway.Upstreams.Upstream;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncCompletionSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncPromptSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceTemplateSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the gateway serves, mirrored from what the upstreams list: the tools ({@link ToolCatalog}),
 * resources, resource templates, prompts and their completions, the server's capabilities and
 * instructions; the MCP server built on them, kept in step as the upstreams' lists change, and the
 * agents subscribed to a resource told when it changes upstream.
 */
final class ServedCatalog {

  /** A resource or a resource template of one upstream. */
  record Listed<T>(String upstream, T item) {}

  /** What answers a call of a served tool. */
  interface ToolCalls {
    CallToolResult call(
        ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request);
  }

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  private final Upstreams upstreams;
  private final PassThrough reads;
  private final ToolCalls calls;
  private final Consumer<List<ToolCatalog.Entry>> newTools;

  // What the gateway serves. Replaced whole (never changed in place) under the upstreams' lock by
  // apply(); read by request handlers without it.
  private volatile ToolCatalog catalog = ToolCatalog.of(Map.of());

  /** The names of the tools an {@link #apply} is adding to the server, until it is done. */
  private volatile Set<String> adding = Set.of();

  private volatile Map<String, Listed<McpSchema.Resource>> resources = Map.of();
  private volatile Map<String, Listed<McpSchema.ResourceTemplate>> templates = Map.of();
  private volatile Map<String, StableNames.Owned<McpSchema.Prompt>> prompts = Map.of();

  private volatile McpSyncServer server;

  /**
   * @param reads what resource reads, prompts and completions are forwarded through
   * @param calls what answers tool calls
   * @param newTools told of the tools that appear once serving (to warn of those without policy)
   */
  ServedCatalog(
      Upstreams upstreams,
      PassThrough reads,
      ToolCalls calls,
      Consumer<List<ToolCatalog.Entry>> newTools) {
    this.upstreams = upstreams;
    this.reads = reads;
    this.calls = calls;
    this.newTools = newTools;
  }

  /** The tools served now. */
  ToolCatalog catalog() {
    return catalog;
  }

  /**
   * Whether an agent may call a tool of this name now: the tools served, and while the served list
   * changes, those being added too (the server may list one before this catalog does).
   */
  boolean serves(String name) {
    return catalog.byName().containsKey(name) || adding.contains(name);
  }

  /**
   * Makes what the gateway serves what the upstreams list: tools through the {@link ToolCatalog}
   * (names kept across changes), each resource under its own URI and each resource template under
   * its own URI template (where two upstreams have one, the first upstream's), prompts named as
   * tools are. Once serving, the differences are added to and removed from the server, which tells
   * the agents their lists changed.
   */
  void apply() {
    synchronized (upstreams) {
      Map<String, List<Tool>> toolsByUpstream = new LinkedHashMap<>();
      Map<String, List<McpSchema.Prompt>> promptsByUpstream = new LinkedHashMap<>();
      Map<String, Listed<McpSchema.Resource>> nextResources = new LinkedHashMap<>();
      Map<String, Listed<McpSchema.ResourceTemplate>> nextTemplates = new LinkedHashMap<>();
      for (Upstream upstream : upstreams.all()) {
        toolsByUpstream.put(upstream.name, upstream.tools);
        promptsByUpstream.put(upstream.name, upstream.prompts);
        for (McpSchema.Resource resource : upstream.resources) {
          Listed<McpSchema.Resource> first =
              nextResources.putIfAbsent(resource.uri(), new Listed<>(upstream.name, resource));
          if (first != null && server == null) {
            log.warn(
                "Upstreams {} and {} both have resource {}; the gateway serves {}'s",
                first.upstream(),
                upstream.name,
                resource.uri(),
                first.upstream());
          }
        }
        for (McpSchema.ResourceTemplate template : upstream.templates) {
          nextTemplates.putIfAbsent(template.uriTemplate(), new Listed<>(upstream.name, template));
        }
      }
      ToolCatalog nextCatalog = catalog.updated(toolsByUpstream);
      Map<String, StableNames.Owned<McpSchema.Prompt>> nextPrompts =
          StableNames.assign(promptsByUpstream, McpSchema.Prompt::name, prompts);
      McpSyncServer serving = server;
      if (serving != null) {
        Map<String, ToolCatalog.Entry> before = catalog.byName();
        adding = Set.copyOf(nextCatalog.byName().keySet());
        sync(
            before,
            nextCatalog.byName(),
            serving::removeTool,
            (name, e) -> serving.addTool(toolSpec(e)));
        sync(
            resources,
            nextResources,
            serving::removeResource,
            (uri, l) -> serving.addResource(resourceSpec(l)));
        sync(
            templates,
            nextTemplates,
            serving::removeResourceTemplate,
            (uri, l) -> serving.addResourceTemplate(templateSpec(l)));
        sync(
            prompts,
            nextPrompts,
            serving::removePrompt,
            (name, o) -> serving.addPrompt(promptSpec(name, o)));
        newTools.accept(
            nextCatalog.entries().stream().filter(e -> !before.containsKey(e.name())).toList());
      }
      catalog = nextCatalog;
      adding = Set.of();
      resources = Map.copyOf(nextResources);
      templates = Map.copyOf(nextTemplates);
      prompts = nextPrompts;
    }
  }

  /** Removes from the server what is gone or changed, then adds what is new or changed. */
  static <T> void sync(
      Map<String, T> before,
      Map<String, T> after,
      Consumer<String> remove,
      BiConsumer<String, T> add) {
    before.forEach(
        (name, item) -> {
          if (!item.equals(after.get(name))) {
            remove.accept(name);
          }
        });
    after.forEach(
        (name, item) -> {
          if (!item.equals(before.get(name))) {
            add.accept(name, item);
          }
        });
  }

  private SyncToolSpecification toolSpec(ToolCatalog.Entry entry) {
    return SyncToolSpecification.builder()
        .tool(entry.listed())
        .callHandler((exchange, request) -> calls.call(entry, exchange, request))
        .build();
  }

  private SyncResourceSpecification resourceSpec(Listed<McpSchema.Resource> listed) {
    return new SyncResourceSpecification(
        listed.item(),
        (exchange, request) ->
            reads.forward(listed.upstream(), exchange, client -> client.readResource(request)));
  }

  private SyncResourceTemplateSpecification templateSpec(
      Listed<McpSchema.ResourceTemplate> listed) {
    return new SyncResourceTemplateSpecification(
        listed.item(),
        (exchange, request) ->
            reads.forward(listed.upstream(), exchange, client -> client.readResource(request)));
  }

  private SyncPromptSpecification promptSpec(
      String name, StableNames.Owned<McpSchema.Prompt> owned) {
    McpSchema.Prompt upstreamPrompt = owned.item();
    McpSchema.Prompt shown =
        new McpSchema.Prompt(
            name,
            upstreamPrompt.title(),
            upstreamPrompt.description(),
            upstreamPrompt.arguments(),
            upstreamPrompt.meta(),
            upstreamPrompt.icons());
    return new SyncPromptSpecification(
        shown,
        (exchange, request) ->
            reads.forward(
                owned.upstream(),
                exchange,
                client ->
                    client.getPrompt(
                        new McpSchema.GetPromptRequest(
                            upstreamPrompt.name(), request.arguments(), request.meta()))));
  }

  /**
   * Completions of a prompt's or a resource template's arguments, asked of the upstream that lists
   * it now. The SDK's server takes completions only when it is built: those of prompts and
   * templates that appear later are not served until the gateway restarts.
   */
  private List<SyncCompletionSpecification> completionSpecs() {
    List<SyncCompletionSpecification> specs = new ArrayList<>();
    prompts.forEach(
        (name, owned) -> {
          if (upstreams.get(owned.upstream()).has(c -> c.completions() != null)) {
            specs.add(
                new SyncCompletionSpecification(
                    new McpSchema.PromptReference(name),
                    (exchange, request) -> {
                      StableNames.Owned<McpSchema.Prompt> now = prompts.get(name);
                      if (now == null) {
                        throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
                            .message("prompt " + name + " is no longer listed")
                            .build();
                      }
                      return reads.forward(
                          now.upstream(),
                          exchange,
                          client ->
                              client.completeCompletion(
                                  new McpSchema.CompleteRequest(
                                      new McpSchema.PromptReference(now.item().name()),
                                      request.argument(),
                                      request.meta(),
                                      request.context())));
                    }));
          }
        });
    templates.forEach(
        (uriTemplate, listed) -> {
          if (upstreams.get(listed.upstream()).has(c -> c.completions() != null)) {
            specs.add(
                new SyncCompletionSpecification(
                    new McpSchema.ResourceReference(uriTemplate),
                    (exchange, request) -> {
                      Listed<McpSchema.ResourceTemplate> now = templates.get(uriTemplate);
                      if (now == null) {
                        throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
                            .message("resource template " + uriTemplate + " is no longer listed")
                            .build();
                      }
                      return reads.forward(
                          now.upstream(), exchange, client -> client.completeCompletion(request));
                    }));
          }
        });
    return specs;
  }

  /** Builds the MCP server on {@code spec} (its transport's), serving what the upstreams list. */
  McpSyncServer build(McpServer.SyncSpecification<?> spec) {
    synchronized (upstreams) {
      McpSchema.ServerCapabilities.Builder capabilities =
          McpSchema.ServerCapabilities.builder().tools(true);
      List<Upstream> all = upstreams.all();
      if (all.stream().anyMatch(u -> u.has(c -> c.resources() != null))) {
        capabilities.resources(
            all.stream()
                .anyMatch(
                    u ->
                        u.has(
                            c ->
                                c.resources() != null
                                    && Boolean.TRUE.equals(c.resources().subscribe()))),
            true);
      }
      if (all.stream().anyMatch(u -> u.has(c -> c.prompts() != null))) {
        capabilities.prompts(true);
      }
      List<SyncCompletionSpecification> completions = completionSpecs();
      if (!completions.isEmpty()) {
        capabilities.completions();
      }
      McpSyncServer built =
          spec.serverInfo("effectledger-mcp-gateway", "1")
              .capabilities(capabilities.build())
              .instructions(instructions(all))
              .tools(catalog.entries().stream().map(this::toolSpec).toList())
              .resources(resources.values().stream().map(this::resourceSpec).toList())
              .resourceTemplates(templates.values().stream().map(this::templateSpec).toList())
              .prompts(
                  prompts.entrySet().stream()
                      .map(e -> promptSpec(e.getKey(), e.getValue()))
                      .toList())
              .completions(completions)
              .build();
      this.server = built;
      return built;
    }
  }

  /**
   * What the agent is told on initialize: one upstream's instructions as they are; those of several
   * upstreams each under its name, after a line saying they come through this gateway; null when no
   * upstream gives any.
   */
  static String instructions(Map<String, String> byUpstream) {
    Map<String, String> given = new LinkedHashMap<>();
    byUpstream.forEach(
        (name, text) -> {
          if (text != null && !text.isBlank()) {
            given.put(name, text.strip());
          }
        });
    if (given.isEmpty()) {
      return null;
    }
    if (given.size() == 1) { // as the upstream gave them, to the last character
      return byUpstream.get(given.keySet().iterator().next());
    }
    StringBuilder merged =
        new StringBuilder(
            "These tools come from several MCP servers through one gateway; each server's"
                + " instructions follow under its name.");
    given.forEach(
        (name, text) -> merged.append("\n\n## ").append(name).append("\n\n").append(text));
    return merged.toString();
  }

  private static String instructions(List<Upstream> all) {
    Map<String, String> byUpstream = new LinkedHashMap<>();
    all.forEach(u -> byUpstream.put(u.name, u.instructions));
    return instructions(byUpstream);
  }

  /**
   * An upstream's resource changed: agents subscribed to it at the gateway are told, if the gateway
   * serves it from that upstream. (The SDK's client reads the resource again before it hands the
   * notification over; the gateway only passes the URI on.)
   */
  void relayUpdates(String upstream, List<McpSchema.ResourceContents> read) {
    McpSyncServer serving = server;
    if (serving == null) {
      return;
    }
    for (McpSchema.ResourceContents contents : read) {
      Listed<McpSchema.Resource> listed = resources.get(contents.uri());
      if (listed != null && listed.upstream().equals(upstream)) {
        try {
          serving.notifyResourcesUpdated(
              new McpSchema.ResourcesUpdatedNotification(contents.uri()));
        } catch (RuntimeException e) {
          log.debug("Could not tell agents that {} changed", contents.uri(), e);
        }
      }
    }
  }

  /** Stops serving: the server ends its sessions. */
  void close() {
    if (server != null) {
      server.closeGracefully();
    }
  }
}
