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
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncPromptSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceSpecification;
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
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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

  /** A resource (by its URI) or a prompt (by the gateway's name for it) of one upstream. */
  private record Listed<T>(String upstream, T item) {}

  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(JSON);
  private static final String RUN_HEADER = "effectledger-run-header";

  private final McpGatewayConfig config;
  private final ToolPolicies policies;
  private final Map<String, McpSession> upstreams = new LinkedHashMap<>();
  private final ToolCatalog catalog;
  private final Map<String, Listed<McpSchema.Resource>> resources = new LinkedHashMap<>();
  private final Map<String, Listed<McpSchema.Prompt>> prompts = new LinkedHashMap<>();

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
  private McpSyncServer server;
  private Server jetty;
  private ServerConnector connector;

  private McpGateway(McpGatewayConfig config, ToolPolicies policies) {
    this.config = config;
    this.policies = policies;
    config
        .upstreams()
        .forEach(
            (name, node) ->
                upstreams.put(
                    name,
                    new McpSession(
                        name,
                        McpConnectorSettings.from(
                            "upstream " + name, McpGatewayConfig.withTool(node)),
                        spec -> spec.progressConsumer(this::relayProgress))));
    try {
      this.catalog = ToolCatalog.of(listTools());
      listResourcesAndPrompts();
    } catch (RuntimeException e) {
      upstreams.values().forEach(McpSession::close);
      throw e;
    }
  }

  private void connectLedger() {
    List<String> missing = new ArrayList<>();
    for (ToolCatalog.Entry entry : catalog.entries()) {
      if (classOf(entry) != ToolClass.READ && policies.forTool(entry.name()).isEmpty()) {
        missing.add(entry.name());
      }
    }
    if (!missing.isEmpty()) {
      log.warn(
          "Write tools without a policy in the ledger's tools.yaml: {}. Their calls are refused until the ledger knows"
              + " them: run `effectledger mcp policies --config <mcp.yaml>` and restart the"
              + " processor, the executors and this gateway with its output.",
          missing);
    }
    ToolCallClient.Builder client =
        ToolCallClient.builder()
            .kafka(config.kafka())
            .schemaRegistryUrl(config.schemaRegistryUrl())
            .timeout(config.callWait());
    for (ToolPolicy policy : policies.tools().values()) {
      client.keyRules(policy.name(), new KeyRules(policy.key().ignore(), policy.key().require()));
    }
    this.ledger = client.build();
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
      gateway.server = gateway.build(McpServer.sync(transport));
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
      gateway.server =
          gateway.build(McpServer.sync(new StdioServerTransportProvider(MAPPER, in, out)));
    } catch (RuntimeException e) {
      gateway.close();
      throw e;
    }
    return gateway;
  }

  private Map<String, List<Tool>> listTools() {
    Map<String, List<Tool>> tools = new LinkedHashMap<>();
    upstreams.forEach(
        (name, session) -> {
          List<Tool> listed = new ArrayList<>();
          try {
            McpSyncClient client = session.client();
            String cursor = null;
            do {
              ListToolsResult page = client.listTools(cursor);
              listed.addAll(page.tools());
              cursor = page.nextCursor();
            } while (cursor != null);
          } catch (RuntimeException e) {
            throw new IllegalStateException(
                "Could not list the tools of upstream "
                    + name
                    + " at "
                    + session.where()
                    + " ("
                    + e.getMessage()
                    + "); start it, or fix upstreams."
                    + name
                    + " in the MCP gateway's configuration",
                e);
          }
          tools.put(name, listed);
        });
    return tools;
  }

  /**
   * The upstreams' resources (each under its own URI; where two upstreams have one URI, the first
   * upstream's) and prompts (each under its own name unless two upstreams have a prompt of that
   * name, then as {@code <upstream>_<name>}), passed through untouched.
   */
  private void listResourcesAndPrompts() {
    Map<String, Integer> promptOwners = new LinkedHashMap<>();
    Map<String, List<McpSchema.Prompt>> promptsByUpstream = new LinkedHashMap<>();
    upstreams.forEach(
        (name, session) -> {
          McpSyncClient client = session.client();
          McpSchema.ServerCapabilities capabilities = client.getServerCapabilities();
          if (capabilities != null && capabilities.resources() != null) {
            String cursor = null;
            do {
              McpSchema.ListResourcesResult page = client.listResources(cursor);
              for (McpSchema.Resource resource : page.resources()) {
                if (resources.putIfAbsent(resource.uri(), new Listed<>(name, resource)) != null) {
                  log.warn(
                      "Upstreams {} and {} both have resource {}; the gateway serves {}'s",
                      resources.get(resource.uri()).upstream(),
                      name,
                      resource.uri(),
                      resources.get(resource.uri()).upstream());
                }
              }
              cursor = page.nextCursor();
            } while (cursor != null);
          }
          if (capabilities != null && capabilities.prompts() != null) {
            List<McpSchema.Prompt> listed = new ArrayList<>();
            String cursor = null;
            do {
              McpSchema.ListPromptsResult page = client.listPrompts(cursor);
              listed.addAll(page.prompts());
              cursor = page.nextCursor();
            } while (cursor != null);
            listed.forEach(p -> promptOwners.merge(p.name(), 1, Integer::sum));
            promptsByUpstream.put(name, listed);
          }
        });
    promptsByUpstream.forEach(
        (upstream, listed) -> {
          for (McpSchema.Prompt prompt : listed) {
            String name =
                promptOwners.get(prompt.name()) > 1
                    ? upstream + "_" + prompt.name()
                    : prompt.name();
            prompts.put(name, new Listed<>(upstream, prompt));
          }
        });
  }

  private McpSyncServer build(McpServer.SyncSpecification<?> spec) {
    List<SyncToolSpecification> tools = new ArrayList<>();
    for (ToolCatalog.Entry entry : catalog.entries()) {
      tools.add(
          SyncToolSpecification.builder()
              .tool(entry.listed())
              .callHandler((exchange, request) -> call(entry, exchange, request))
              .build());
    }
    List<SyncResourceSpecification> resourceSpecs = new ArrayList<>();
    resources.forEach(
        (uri, listed) ->
            resourceSpecs.add(
                new SyncResourceSpecification(
                    listed.item(),
                    (exchange, request) ->
                        forward(listed.upstream(), client -> client.readResource(request)))));
    List<SyncPromptSpecification> promptSpecs = new ArrayList<>();
    prompts.forEach(
        (name, listed) -> {
          McpSchema.Prompt upstreamPrompt = listed.item();
          McpSchema.Prompt shown =
              new McpSchema.Prompt(
                  name,
                  upstreamPrompt.title(),
                  upstreamPrompt.description(),
                  upstreamPrompt.arguments(),
                  upstreamPrompt.meta(),
                  upstreamPrompt.icons());
          promptSpecs.add(
              new SyncPromptSpecification(
                  shown,
                  (exchange, request) ->
                      forward(
                          listed.upstream(),
                          client ->
                              client.getPrompt(
                                  new McpSchema.GetPromptRequest(
                                      upstreamPrompt.name(),
                                      request.arguments(),
                                      request.meta())))));
        });
    McpSchema.ServerCapabilities.Builder capabilities =
        McpSchema.ServerCapabilities.builder().tools(true);
    if (!resourceSpecs.isEmpty()) {
      capabilities.resources(false, false);
    }
    if (!promptSpecs.isEmpty()) {
      capabilities.prompts(false);
    }
    return spec.serverInfo("effectledger-mcp-gateway", "1")
        .capabilities(capabilities.build())
        .tools(tools)
        .resources(resourceSpecs)
        .prompts(promptSpecs)
        .build();
  }

  /**
   * A resource read or a prompt, on its upstream: its answer, or its JSON-RPC error as it gave it;
   * an unreachable upstream is an internal error naming it.
   */
  private <T> T forward(String upstream, java.util.function.Function<McpSyncClient, T> call) {
    McpSession session = upstreams.get(upstream);
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
    return policies
        .forTool(entry.name())
        .map(ToolPolicy::toolClass)
        .orElse(ToolCatalog.classOf(entry, config.annotations()));
  }

  private CallToolResult call(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    if (classOf(entry) == ToolClass.READ) {
      return passThrough(entry, exchange, request);
    }
    if (policies.forTool(entry.name()).isEmpty()) {
      return Answers.refused(
          "POLICY_MISSING",
          "tool " + entry.name() + " writes, and the ledger has no policy for it",
          "An operator adds it: `effectledger mcp policies --config <mcp.yaml>`, then restarts the"
              + " ledger, the executors and this gateway. Nothing was done.");
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
      return Answers.refused("ARGUMENTS_NOT_JSON", e.getOriginalMessage(), "Send JSON arguments.");
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
    String ownKey = text(meta.get(McpMeta.IDEMPOTENCY_KEY));
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
    McpSession session = upstreams.get(entry.upstream());
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
    return PolicyGenerator.missing(config, catalog, policies);
  }

  @Override
  public void close() {
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
    if (ledger != null) {
      ledger.close();
    }
    upstreams.values().forEach(McpSession::close);
  }
}
