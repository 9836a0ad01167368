package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.KeyDerivationException;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.connector.McpConnectorSettings;
import dev.effectledger.mcp.connector.McpSession;
import dev.effectledger.policy.FollowedPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.JsonSyntax;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncCompletionSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncPromptSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceTemplateSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.ListToolsResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpServerTransportProviderBase;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MCP gateway: an MCP server (Streamable HTTP, or stdio) in front of one or more upstream MCP
 * servers. It lists the upstreams' tools as one list ({@link ToolCatalog}); a read tool's call goes
 * straight to its upstream; a write tool's call becomes an intent, published and answered through
 * the ledger with the Java client, and performed once by an executor's {@code mcp} connector.
 *
 * <p>The key of a write call: the step in the call's {@code _meta} when the orchestrator sends one
 * ({@value McpMeta#RUN_ID}, {@value McpMeta#STEP_ID}, {@value McpMeta#SCOPE}); otherwise the run
 * from {@code _meta}, the configured header or the configured run id, and the step {@code
 * mcp:<tool>}: the same tool with the same canonical arguments in the same run is one action.
 */
public final class McpGateway implements AutoCloseable {

  /** A resource or a resource template of one upstream. */
  private record Listed<T>(String upstream, T item) {}

  /** One upstream: its session and what it lists (guarded by the gateway). */
  private static final class Upstream {
    final String name;
    McpSession session;
    final AtomicInteger opens = new AtomicInteger();
    McpSchema.ServerCapabilities capabilities;
    String instructions;
    List<Tool> tools = List.of();
    List<McpSchema.Resource> resources = List.of();
    List<McpSchema.ResourceTemplate> templates = List.of();
    List<McpSchema.Prompt> prompts = List.of();

    Upstream(String name) {
      this.name = name;
    }

    boolean has(java.util.function.Predicate<McpSchema.ServerCapabilities> capability) {
      return capabilities != null && capability.test(capabilities);
    }
  }

  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(JSON);
  private static final String RUN_HEADER = "effectledger-run-header";

  /** The run recorded with a write call whose {@code _meta} gives its key and no run. */
  static final String KEY_ONLY_RUN = "mcp-idempotency-key";

  private final McpGatewayConfig config;

  /** The file's policies, then (once serving) the applied policy as it changes. */
  private volatile FollowedPolicy policy;

  private final Map<String, Upstream> upstreams = new LinkedHashMap<>();

  // What the gateway serves. Replaced whole (never changed in place) under the gateway's lock by
  // apply(); read by request handlers without it.
  private volatile ToolCatalog catalog = ToolCatalog.of(Map.of());
  private volatile Map<String, Listed<McpSchema.Resource>> resources = Map.of();
  private volatile Map<String, Listed<McpSchema.ResourceTemplate>> templates = Map.of();
  private volatile Map<String, StableNames.Owned<McpSchema.Prompt>> prompts = Map.of();

  /**
   * Refreshes after an upstream's list change or reconnect, and every {@code refresh} (an upstream
   * that does not notify, or whose notification stream was lost): one at a time, off the SDK's
   * threads.
   */
  private final ScheduledExecutorService refresher =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "mcp-gateway-refresh");
            t.setDaemon(true);
            return t;
          });

  /** Pass-through calls whose agent asked for progress, by the token sent upstream. */
  private final Map<String, Relay> progress = new ConcurrentHashMap<>();

  /**
   * One agent's progress. The SDK's client may hand notifications over on several threads, out of
   * their order; MCP requires progress to increase, so one that does not is dropped.
   */
  private static final class Relay {
    private final McpSyncServerExchange agent;
    private final Object agentToken;
    private double last = Double.NEGATIVE_INFINITY; // guarded by this

    Relay(McpSyncServerExchange agent, Object agentToken) {
      this.agent = agent;
      this.agentToken = agentToken;
    }

    synchronized void send(McpSchema.ProgressNotification notification) {
      double progress = notification.progress() == null ? 0 : notification.progress();
      if (progress <= last) {
        return;
      }
      last = progress;
      agent.progressNotification(
          new McpSchema.ProgressNotification(
              agentToken,
              notification.progress(),
              notification.total(),
              notification.message(),
              notification.meta()));
    }
  }

  private ToolCallClient ledger;
  private volatile McpSyncServer server;
  private volatile McpServerTransportProviderBase agents;
  private volatile boolean closed;
  private Server jetty;
  private ServerConnector connector;

  private McpGateway(McpGatewayConfig config, ToolPolicies policies) {
    this.config = config;
    this.policy = FollowedPolicy.fixed("MCP gateway", policies);
    config
        .upstreams()
        .forEach(
            (name, node) -> {
              Upstream upstream = new Upstream(name);
              upstream.session =
                  new McpSession(
                      name,
                      McpConnectorSettings.from(
                          "upstream " + name, McpGatewayConfig.withTool(node)),
                      spec ->
                          spec.progressConsumer(this::relayProgress)
                              .toolsChangeConsumer(changed -> refreshLater(upstream))
                              .resourcesChangeConsumer(changed -> refreshLater(upstream))
                              .promptsChangeConsumer(changed -> refreshLater(upstream))
                              .resourcesUpdateConsumer(read -> relayUpdates(upstream, read))
                              .loggingConsumer(message -> relayLog(upstream, message)),
                      opened -> {
                        // a new session after a lost one: what it lists may have changed, and
                        // its subscriptions and log level are the old session's
                        if (upstream.opens.incrementAndGet() > 1) {
                          refreshLater(upstream);
                        }
                      });
              upstreams.put(name, upstream);
            });
    try {
      synchronized (this) {
        for (Upstream upstream : upstreams.values()) {
          list(upstream);
        }
        apply();
      }
      long every = config.refresh().toMillis();
      if (every > 0) {
        refresher.scheduleWithFixedDelay(
            () -> upstreams.values().forEach(this::refreshNow),
            every,
            every,
            TimeUnit.MILLISECONDS);
      }
    } catch (RuntimeException e) {
      upstreams.values().forEach(u -> u.session.close());
      refresher.shutdownNow();
      throw e;
    }
  }

  private void connectLedger() {
    warnOfMissingPolicies(catalog.entries());
    ToolCallClient.Builder client =
        ToolCallClient.builder()
            .kafka(config.kafka())
            .schemaRegistryUrl(config.schemaRegistryUrl())
            .timeout(config.callWait());
    for (ToolPolicy policy : this.policy.policies().tools().values()) {
      client.keyRules(policy.name(), new KeyRules(policy.key().ignore(), policy.key().require()));
    }
    this.ledger = client.build();
    // The applied policy (effectledger tools apply) replaces the file's as it changes: a write
    // tool given a policy there is served at once.
    this.policy =
        FollowedPolicy.start(
            config.kafka(), policy.policies(), "MCP gateway", "effectledger-mcp-policy");
  }

  /** The applied policy version this gateway decides by; 0: its own tools.yaml. */
  public long policyVersion() {
    return policy.version();
  }

  /** Warns of the write tools among {@code entries} that the ledger's tools.yaml does not name. */
  private void warnOfMissingPolicies(List<ToolCatalog.Entry> entries) {
    List<String> missing = new ArrayList<>();
    for (ToolCatalog.Entry entry : entries) {
      if (classOf(entry) != ToolClass.READ && policy.policies().forTool(entry.name()).isEmpty()) {
        missing.add(entry.name());
      }
    }
    if (!missing.isEmpty()) {
      log.warn(
          "Write tools without a policy in the ledger's tools.yaml: {}. Their calls are refused until the ledger knows"
              + " them: run `effectledger mcp policies --config <mcp.yaml>`, add its output to"
              + " tools.yaml and apply it: `effectledger tools apply`.",
          missing);
    }
  }

  /** Lists the upstreams' tools without serving them: for {@link #missingPolicies}. */
  public static McpGateway inspect(McpGatewayConfig config, ToolPolicies policies) {
    return new McpGateway(config, policies);
  }

  /** Lists the upstreams' tools and serves them over Streamable HTTP at the configured address. */
  public static McpGateway startHttp(McpGatewayConfig config, ToolPolicies policies) {
    McpGateway gateway = new McpGateway(config, policies);
    try {
      gateway.connectLedger();
      HttpServletStreamableServerTransportProvider transport =
          HttpServletStreamableServerTransportProvider.builder()
              .jsonMapper(MAPPER)
              .mcpEndpoint(config.path())
              .contextExtractor(
                  request -> {
                    String run =
                        config.runHeader() == null ? null : request.getHeader(config.runHeader());
                    return McpTransportContext.create(
                        run == null || run.isBlank() ? Map.of() : Map.of(RUN_HEADER, run));
                  })
              .build();
      gateway.build(McpServer.sync(transport), transport);
      Server jetty = new Server();
      ServerConnector connector = new ServerConnector(jetty);
      connector.setHost(config.host());
      connector.setPort(config.port());
      jetty.addConnector(connector);
      ServletContextHandler context = new ServletContextHandler();
      context.addServlet(new ServletHolder(transport), config.path());
      jetty.setHandler(context);
      jetty.start();
      gateway.jetty = jetty;
      gateway.connector = connector;
      return gateway;
    } catch (Exception e) {
      gateway.close();
      throw new IllegalStateException(
          "Could not start the MCP gateway on " + config.host() + ":" + config.port() + ": " + e,
          e);
    }
  }

  /**
   * Lists the upstreams' tools and serves them over {@code in} and {@code out} (a process's stdin
   * and stdout: nothing else may write to {@code out}).
   */
  public static McpGateway startStdio(
      McpGatewayConfig config, ToolPolicies policies, InputStream in, OutputStream out) {
    McpGateway gateway = new McpGateway(config, policies);
    try {
      gateway.connectLedger();
      StdioServerTransportProvider transport = new StdioServerTransportProvider(MAPPER, in, out);
      gateway.build(McpServer.sync(transport), transport);
    } catch (RuntimeException e) {
      gateway.close();
      throw e;
    }
    return gateway;
  }

  /**
   * Reads what {@code upstream} lists now (every page), subscribes to its resources where it takes
   * subscriptions and sets the level of the log messages it sends; throws, naming the upstream and
   * what to do, when it cannot.
   */
  private synchronized void list(Upstream upstream) {
    McpSession session = upstream.session;
    McpSyncClient client;
    try {
      client = session.client();
    } catch (RuntimeException e) {
      throw unreachable(upstream, e);
    }
    try {
      McpSchema.ServerCapabilities capabilities = client.getServerCapabilities();
      upstream.capabilities = capabilities;
      upstream.instructions = client.getServerInstructions();
      List<Tool> tools =
          all(client::listTools, ListToolsResult::tools, ListToolsResult::nextCursor);
      List<McpSchema.Resource> resourceList = List.of();
      List<McpSchema.ResourceTemplate> templateList = List.of();
      List<McpSchema.Prompt> promptList = List.of();
      if (upstream.has(c -> c.resources() != null)) {
        resourceList =
            all(
                client::listResources,
                McpSchema.ListResourcesResult::resources,
                McpSchema.ListResourcesResult::nextCursor);
        try {
          templateList =
              all(
                  client::listResourceTemplates,
                  McpSchema.ListResourceTemplatesResult::resourceTemplates,
                  McpSchema.ListResourceTemplatesResult::nextCursor);
        } catch (McpError e) { // a server with resources need not have templates
          log.debug("Upstream {} lists no resource templates", upstream.name, e);
        }
        if (upstream.has(c -> Boolean.TRUE.equals(c.resources().subscribe()))) {
          for (McpSchema.Resource resource : resourceList) {
            try {
              client.subscribeResource(new McpSchema.SubscribeRequest(resource.uri()));
            } catch (McpError e) {
              log.debug(
                  "Upstream {} refused a subscription to {}", upstream.name, resource.uri(), e);
            }
          }
        }
      }
      if (upstream.has(c -> c.prompts() != null)) {
        promptList =
            all(
                client::listPrompts,
                McpSchema.ListPromptsResult::prompts,
                McpSchema.ListPromptsResult::nextCursor);
      }
      if (config.logging() != null && upstream.has(c -> c.logging() != null)) {
        try {
          client.setLoggingLevel(config.logging());
        } catch (McpError e) {
          log.debug("Upstream {} refused the log level {}", upstream.name, config.logging(), e);
        }
      }
      upstream.tools = tools;
      upstream.resources = resourceList;
      upstream.templates = templateList;
      upstream.prompts = promptList;
    } catch (McpError e) {
      throw unreachable(upstream, e);
    } catch (RuntimeException e) {
      session.discard(client);
      throw unreachable(upstream, e);
    }
  }

  /** Every item of a paged MCP list: {@code page} asked with each cursor until there is none. */
  private static <P, T> List<T> all(
      java.util.function.Function<String, P> page,
      java.util.function.Function<P, List<T>> items,
      java.util.function.Function<P, String> next) {
    List<T> listed = new ArrayList<>();
    String cursor = null;
    do {
      P got = page.apply(cursor);
      listed.addAll(items.apply(got));
      cursor = next.apply(got);
    } while (cursor != null);
    return listed;
  }

  private static IllegalStateException unreachable(Upstream upstream, RuntimeException e) {
    return new IllegalStateException(
        "Could not list what upstream "
            + upstream.name
            + " at "
            + upstream.session.where()
            + " serves ("
            + e.getMessage()
            + "); start it, or fix upstreams."
            + upstream.name
            + " in the MCP gateway's configuration",
        e);
  }

  /**
   * Makes what the gateway serves what the upstreams list: tools through the {@link ToolCatalog}
   * (names kept across changes), each resource under its own URI and each resource template under
   * its own URI template (where two upstreams have one, the first upstream's), prompts named as
   * tools are. Once serving, the differences are added to and removed from the server, which tells
   * the agents their lists changed.
   */
  private synchronized void apply() {
    Map<String, List<Tool>> toolsByUpstream = new LinkedHashMap<>();
    Map<String, List<McpSchema.Prompt>> promptsByUpstream = new LinkedHashMap<>();
    Map<String, Listed<McpSchema.Resource>> nextResources = new LinkedHashMap<>();
    Map<String, Listed<McpSchema.ResourceTemplate>> nextTemplates = new LinkedHashMap<>();
    for (Upstream upstream : upstreams.values()) {
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
      warnOfMissingPolicies(
          nextCatalog.entries().stream().filter(e -> !before.containsKey(e.name())).toList());
    }
    catalog = nextCatalog;
    resources = Map.copyOf(nextResources);
    templates = Map.copyOf(nextTemplates);
    prompts = nextPrompts;
  }

  /** Removes from the server what is gone or changed, then adds what is new or changed. */
  private static <T> void sync(
      Map<String, T> before,
      Map<String, T> after,
      java.util.function.Consumer<String> remove,
      java.util.function.BiConsumer<String, T> add) {
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

  /** After a list change or reconnect of {@code upstream}, off the thread that noticed it. */
  private void refreshLater(Upstream upstream) {
    if (closed) {
      return;
    }
    try {
      refresher.execute(() -> refreshNow(upstream));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      log.debug("Closing: no refresh of upstream {}", upstream.name);
    }
  }

  private void refreshNow(Upstream upstream) {
    try {
      synchronized (this) {
        if (closed) {
          return;
        }
        list(upstream);
        apply();
      }
    } catch (RuntimeException e) {
      log.warn(
          "{}. The gateway serves what it listed before until it lists the upstream again",
          e.getMessage());
    }
  }

  private SyncToolSpecification toolSpec(ToolCatalog.Entry entry) {
    return SyncToolSpecification.builder()
        .tool(entry.listed())
        .callHandler((exchange, request) -> call(entry, exchange, request))
        .build();
  }

  private SyncResourceSpecification resourceSpec(Listed<McpSchema.Resource> listed) {
    return new SyncResourceSpecification(
        listed.item(),
        (exchange, request) -> forward(listed.upstream(), client -> client.readResource(request)));
  }

  private SyncResourceTemplateSpecification templateSpec(
      Listed<McpSchema.ResourceTemplate> listed) {
    return new SyncResourceTemplateSpecification(
        listed.item(),
        (exchange, request) -> forward(listed.upstream(), client -> client.readResource(request)));
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
            forward(
                owned.upstream(),
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
                      return forward(
                          now.upstream(),
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
                      return forward(now.upstream(), client -> client.completeCompletion(request));
                    }));
          }
        });
    return specs;
  }

  private synchronized McpSyncServer build(
      McpServer.SyncSpecification<?> spec, McpServerTransportProviderBase transport) {
    McpSchema.ServerCapabilities.Builder capabilities =
        McpSchema.ServerCapabilities.builder().tools(true);
    List<Upstream> all = List.copyOf(upstreams.values());
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
                prompts.entrySet().stream().map(e -> promptSpec(e.getKey(), e.getValue())).toList())
            .completions(completions)
            .build();
    this.agents = transport;
    this.server = built;
    return built;
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
    if (given.size() == 1) {
      return given.values().iterator().next();
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
   * A resource read or a prompt, on its upstream: its answer, or its JSON-RPC error as it gave it;
   * an unreachable upstream is an internal error naming it.
   */
  private <T> T forward(String upstream, java.util.function.Function<McpSyncClient, T> call) {
    McpSession session = upstreams.get(upstream).session;
    McpSyncClient client;
    try {
      client = session.client();
    } catch (RuntimeException e) {
      throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
          .message("upstream " + upstream + " at " + session.where() + " is unreachable")
          .build();
    }
    try {
      return call.apply(client);
    } catch (McpError e) {
      throw e;
    } catch (RuntimeException e) {
      session.discard(client);
      throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
          .message("lost upstream " + upstream + " (" + e.getMessage() + "); call again")
          .build();
    }
  }

  private ToolClass classOf(ToolCatalog.Entry entry) {
    return policy
        .policies()
        .forTool(entry.name())
        .map(ToolPolicy::toolClass)
        .orElse(ToolCatalog.classOf(entry, config.annotations()));
  }

  private CallToolResult call(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    if (classOf(entry) == ToolClass.READ) {
      return passThrough(entry, exchange, request);
    }
    if (policy.policies().forTool(entry.name()).isEmpty()) {
      return Answers.refused(
          "POLICY_MISSING",
          "tool " + entry.name() + " writes, and the ledger has no policy for it",
          "An operator adds it: `effectledger mcp policies --config <mcp.yaml>`, then"
              + " `effectledger tools apply` with it in tools.yaml. Nothing was done.");
    }
    Map<String, Object> meta = request.meta() == null ? Map.of() : request.meta();
    String run = text(meta.get(McpMeta.RUN_ID));
    if (run == null && exchange.transportContext() != null) {
      run = text(exchange.transportContext().get(RUN_HEADER));
    }
    if (run == null) {
      run = config.runId();
    }
    if (run == null && config.runFallback() == McpGatewayConfig.RunFallback.SESSION) {
      run = "mcp-session:" + exchange.sessionId();
    }
    String ownKey = text(meta.get(McpMeta.IDEMPOTENCY_KEY));
    if (run == null && ownKey != null) {
      run = KEY_ONLY_RUN; // the key names the action; the run is only recorded with the intent
    }
    if (run == null) {
      return Answers.refused(
          "RUN_ID_REQUIRED",
          "a write call needs the agent run it belongs to, and this one names none",
          "Send the run id in _meta \""
              + McpMeta.RUN_ID
              + "\""
              + (config.runHeader() == null ? "" : " or the " + config.runHeader() + " header")
              + ", or configure run.id or run.fallback: session in the gateway. Nothing was done.");
    }
    String step = text(meta.get(McpMeta.STEP_ID));
    String scope = text(meta.get(McpMeta.SCOPE));
    String arguments;
    try {
      arguments =
          JSON.writeValueAsString(request.arguments() == null ? Map.of() : request.arguments());
    } catch (JsonProcessingException e) {
      return Answers.refused("ARGUMENTS_NOT_JSON", JsonSyntax.describe(e), "Send JSON arguments.");
    }
    ToolCall derived =
        ToolCall.of(
            new StepContext(
                config.tenant(),
                run,
                step == null ? "mcp:" + entry.name() : step,
                scope == null ? "" : scope),
            entry.name(),
            arguments);
    ToolCall call;
    try {
      call = ownKey == null ? derived : derived.withIdempotencyKey(ownKey);
    } catch (IllegalArgumentException e) {
      return Answers.refused(
          "INVALID_IDEMPOTENCY_KEY",
          "_meta \"" + McpMeta.IDEMPOTENCY_KEY + "\": " + e.getMessage(),
          "Send a valid key, or none to have one derived. Nothing was done.");
    }
    try {
      CallResult result =
          ledger.invoke(call).get(config.callWait().toMillis() + 10_000, TimeUnit.MILLISECONDS);
      return Answers.of(result);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof KeyDerivationException k) {
        return Answers.refused(k.code(), k.getMessage(), "Fix the arguments. Nothing was done.");
      }
      return Answers.refused(
          "LEDGER_UNAVAILABLE",
          "the call could not be published to the ledger (" + e.getCause() + ")",
          "Call again with the same arguments in the same run: it takes effect at most once.");
    } catch (TimeoutException e) {
      return Answers.refused(
          "LEDGER_UNAVAILABLE",
          "the ledger did not answer",
          "Call again with the same arguments in the same run: it takes effect at most once.");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR).message("interrupted").build();
    }
  }

  private CallToolResult passThrough(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    McpSession session = upstreams.get(entry.upstream()).session;
    McpSyncClient client;
    try {
      client = session.client();
    } catch (RuntimeException e) {
      return Answers.refused(
          "UPSTREAM_UNAVAILABLE",
          "upstream " + entry.upstream() + " at " + session.where() + " is unreachable",
          "Call again later.");
    }
    // The agent's progress token is replaced by one of the gateway's own upstream (agents'
    // tokens are unique per session only), and the upstream's progress relayed back under it.
    Object agentToken = request.progressToken();
    String upstreamToken = null;
    Map<String, Object> meta = request.meta();
    if (agentToken != null) {
      upstreamToken = "effectledger-" + UUID.randomUUID();
      progress.put(upstreamToken, new Relay(exchange, agentToken));
      meta = new LinkedHashMap<>(meta);
      meta.put("progressToken", upstreamToken);
    }
    try {
      return client.callTool(new CallToolRequest(entry.tool().name(), request.arguments(), meta));
    } catch (McpError e) {
      throw e; // the upstream's protocol error, as it answered it
    } catch (RuntimeException e) {
      session.discard(client);
      return Answers.refused(
          "UPSTREAM_UNAVAILABLE",
          "lost upstream " + entry.upstream() + " during a read call (" + e.getMessage() + ")",
          "Call again: it only reads.");
    } finally {
      if (upstreamToken != null) {
        progress.remove(upstreamToken);
      }
    }
  }

  private void relayProgress(McpSchema.ProgressNotification notification) {
    Relay relay =
        notification.progressToken() == null
            ? null
            : progress.get(notification.progressToken().toString());
    if (relay == null) {
      return;
    }
    try {
      relay.send(notification);
    } catch (RuntimeException e) {
      log.debug("Could not relay progress to an agent that went away", e);
    }
  }

  /**
   * An upstream's resource changed: agents subscribed to it at the gateway are told, if the gateway
   * serves it from that upstream. (The SDK's client reads the resource again before it hands the
   * notification over; the gateway only passes the URI on.)
   */
  private void relayUpdates(Upstream upstream, List<McpSchema.ResourceContents> read) {
    McpSyncServer serving = server;
    if (serving == null) {
      return;
    }
    for (McpSchema.ResourceContents contents : read) {
      Listed<McpSchema.Resource> listed = resources.get(contents.uri());
      if (listed != null && listed.upstream().equals(upstream.name)) {
        try {
          serving.notifyResourcesUpdated(
              new McpSchema.ResourcesUpdatedNotification(contents.uri()));
        } catch (RuntimeException e) {
          log.debug("Could not tell agents that {} changed", contents.uri(), e);
        }
      }
    }
  }

  /**
   * An upstream's log message, to every agent connected to the gateway, if it is at least the
   * configured level; its logger names the upstream ({@code <upstream>} or {@code
   * <upstream>/<logger>}). An agent's own {@code logging/setLevel} does not filter these: the SDK's
   * server keeps that level for messages it sends itself.
   */
  private void relayLog(Upstream upstream, McpSchema.LoggingMessageNotification message) {
    McpSchema.LoggingLevel minimum = config.logging();
    McpServerTransportProviderBase to = agents;
    if (minimum == null
        || to == null
        || message.level() == null
        || message.level().level() < minimum.level()) {
      return;
    }
    McpSchema.LoggingMessageNotification relayed =
        new McpSchema.LoggingMessageNotification(
            message.level(),
            message.logger() == null ? upstream.name : upstream.name + "/" + message.logger(),
            message.data(),
            message.meta());
    to.notifyClients(McpSchema.METHOD_NOTIFICATION_MESSAGE, relayed)
        .subscribe(done -> {}, e -> log.debug("Could not relay a log message to agents", e));
  }

  private static String text(Object value) {
    if (value == null) {
      return null;
    }
    String s = value.toString();
    return s.isBlank() ? null : s;
  }

  /** The tools this gateway lists. */
  public ToolCatalog catalog() {
    return catalog;
  }

  /** The Streamable HTTP endpoint, e.g. {@code http://127.0.0.1:8097/mcp}. */
  public String url() {
    return "http://" + config.host() + ":" + connector.getLocalPort() + config.path();
  }

  /** Policies for the write tools tools.yaml does not name; see {@link PolicyGenerator}. */
  public ObjectNode missingPolicies() {
    return PolicyGenerator.missing(config, catalog, policy.policies());
  }

  @Override
  public void close() {
    closed = true;
    refresher.shutdownNow();
    if (server != null) {
      server.closeGracefully();
    }
    if (jetty != null) {
      try {
        jetty.stop();
      } catch (Exception e) {
        log.warn("Stopping the MCP gateway's HTTP server", e);
      }
    }
    if (policy != null) {
      policy.close();
    }
    if (ledger != null) {
      ledger.close();
    }
    upstreams.values().forEach(u -> u.session.close());
  }
}
