package dev.effectledger.mcp.gateway;

import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.Caller;
import dev.effectledger.auth.ResourceMetadata;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.HttpHeaders;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How agents reach the gateway: Streamable HTTP (the SDK's servlet on Jetty at the configured
 * address, a call's run id header carried into its transport context) or stdio. An instance is a
 * running HTTP server.
 */
final class McpTransports {

  /** Builds the gateway's MCP server on a transport's {@code spec}, serving {@code agents}. */
  interface Serve {
    void on(McpServer.SyncSpecification<?> spec, AgentSessions agents);
  }

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  // the SDK's records as it writes them, with what it has no field for (tasks: TaskWire)
  private static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(TaskWire.mapper());

  private final McpGatewayConfig config;
  private final Server jetty;
  private final ServerConnector connector;

  private McpTransports(McpGatewayConfig config, Server jetty, ServerConnector connector) {
    this.config = config;
    this.jetty = jetty;
    this.connector = connector;
  }

  /** Serves over Streamable HTTP at the configured address; the server is started. */
  static McpTransports http(
      McpGatewayConfig config,
      Serve serve,
      AgentSessions agents,
      CallRefusals refusals,
      Predicate<String> writes,
      Consumer<String> ended)
      throws Exception {
    HttpServletStreamableServerTransportProvider transport =
        HttpServletStreamableServerTransportProvider.builder()
            .jsonMapper(MAPPER)
            .mcpEndpoint(config.path())
            .contextExtractor(request -> context(config, request))
            .build();
    serve.on(McpServer.sync(agents.watch(transport)), agents);
    Server jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost(config.host());
    connector.setPort(config.port());
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(transport), config.path());
    if (config.auth() != null) {
      // first: nothing below sees a request without a token it takes
      context.addFilter(
          new FilterHolder(new TokenCheck(AccessTokens.of(config.auth()), writes)),
          config.path(),
          EnumSet.of(DispatcherType.REQUEST));
      ServletHolder metadata = new ServletHolder(TokenCheck.metadata(config.auth()));
      context.addServlet(metadata, ResourceMetadata.WELL_KNOWN);
      context.addServlet(
          metadata, ResourceMetadata.path(URI.create(config.auth().audience()).getRawPath()));
    }
    FilterHolder answering = new FilterHolder(refusals.servletFilter(r -> context(config, r)));
    answering.setAsyncSupported(true); // tasks/result is answered when its task ends
    context.addFilter(answering, config.path(), EnumSet.of(DispatcherType.REQUEST));
    context.addFilter(
        new FilterHolder(sessionsEnding(ended)), config.path(), EnumSet.of(DispatcherType.REQUEST));
    jetty.setHandler(context);
    jetty.start();
    return new McpTransports(config, jetty, connector);
  }

  /** What a call's HTTP request tells the gateway: its run id header, its caller's tenant. */
  private static McpTransportContext context(McpGatewayConfig config, HttpServletRequest request) {
    Map<String, Object> context = new HashMap<>();
    String run = config.runHeader() == null ? null : request.getHeader(config.runHeader());
    if (run != null && !run.isBlank()) {
      context.put(WriteCalls.RUN_HEADER, run);
    }
    if (request.getAttribute(TokenCheck.CALLER) instanceof Caller caller) {
      context.put(WriteCalls.TENANT, caller.tenant());
    }
    return McpTransportContext.create(context);
  }

  /**
   * Tells {@code ended} of each session an agent ends ({@code DELETE} with its {@code
   * Mcp-Session-Id}), once the SDK's servlet has ended it.
   */
  private static Filter sessionsEnding(Consumer<String> ended) {
    return (request, response, chain) -> {
      chain.doFilter(request, response);
      if (request instanceof HttpServletRequest http && "DELETE".equals(http.getMethod())) {
        String session = http.getHeader(HttpHeaders.MCP_SESSION_ID);
        if (session != null) {
          ended.accept(session);
        }
      }
    };
  }

  /**
   * Serves over {@code in} and {@code out} (a process's stdin and stdout: nothing else may write to
   * {@code out}).
   */
  static void stdio(
      InputStream in, OutputStream out, Serve serve, AgentSessions agents, CallRefusals refusals) {
    CallRefusals.Stdio agent = refusals.stdio(in, out);
    StdioServerTransportProvider transport =
        new StdioServerTransportProvider(MAPPER, agent.in, agent.out);
    serve.on(McpServer.sync(agents.watch(transport)), agents);
  }

  /** The Streamable HTTP endpoint, e.g. {@code http://127.0.0.1:8097/mcp}. */
  String url() {
    return "http://" + config.host() + ":" + connector.getLocalPort() + config.path();
  }

  /** Stops the HTTP server. */
  void stop() {
    try {
      jetty.stop();
    } catch (Exception e) {
      log.warn("Stopping the MCP gateway's HTTP server", e);
    }
  }
}
