package dev.effectledger.mcp.embedded;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.EndOfInput;
import dev.effectledger.mcp.McpMeta;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * An MCP server with a payment-like write tool that counts its effects per key, for tests and the
 * demo: the upstream an MCP gateway or the {@code mcp} connector stands in front of. It runs
 * in-process over Streamable HTTP ({@link #startHttp}) or as its own process over stdio ({@link
 * #main}).
 *
 * <p>Tools: {@code create_charge} ({@code {amount, to}}; destructive, not idempotent) records one
 * effect under the key it is sent ({@code _meta} {@value McpMeta#IDEMPOTENCY_KEY}, else the {@code
 * Idempotency-Key} header) and answers {@code {id, amount, to}} as structured content; when it
 * honours keys, a key it has seen gets the first answer again. {@code find_charge} ({@code {key}};
 * read-only) answers {@code {found, id}}: the lookup tool for reconciliation. {@code get_balance}
 * (read-only) answers {@code {balance}}, logging a notice and, when asked, reporting progress first
 * ({@code steps} notifications, 2 unless its argument {@code steps} says otherwise).
 *
 * <p>For what passes through a gateway: a resource, {@value #SUMMARY}, whose subscribers are told
 * of each charge; a resource template, {@value #CHARGE} (the charge made for a key), whose {@code
 * key} completes from the keys charged; a prompt, {@code refund_policy} ({@code customer}, which
 * completes from {@link #CUSTOMERS}); and tools added and removed while it runs ({@link #addTool},
 * {@link #removeTool}), each telling its clients that the list changed.
 *
 * <p>Faults, per key ({@link #inject}) or per call (an argument {@code "fault"}): {@code
 * ERROR_BEFORE} answers {@code isError: true} without the effect; {@code PROTOCOL_ERROR} answers a
 * JSON-RPC error without it; {@code SLOW} waits {@link #slow} before the effect; {@code DROP_AFTER}
 * performs the effect and then drops every connection (over stdio: the process exits), so the
 * caller never gets the answer.
 */
public final class CountingMcpServer implements AutoCloseable {

  /** What the server tells a client on initialize: a gateway in front passes it on as it is. */
  public static final String INSTRUCTIONS =
      "Charge with create_charge (amount in cents, to a customer id); find_charge looks one up by"
          + " its key; get_balance reads a customer's balance.";

  /** What a call does instead of, or besides, its effect. */
  public enum Fault {
    ERROR_BEFORE,
    PROTOCOL_ERROR,
    SLOW,
    DROP_AFTER
  }

  static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(JSON);

  /** Its one resource: {@code {"charges": n}}. */
  public static final String SUMMARY = "charges://summary";

  /** Its resource template: the charge made for {@code key}. */
  public static final String CHARGE = "charges://charge/{key}";

  /** The customers {@code refund_policy}'s argument completes from. */
  public static final List<String> CUSTOMERS = List.of("cus_1", "cus_2", "cus_3");

  private final ChargeLedger ledger;
  private final ChargeTools tools;
  private final CountingFeatures features;
  private boolean notifiesToolChanges = true;
  private Server jetty;
  private ServerConnector connector;
  private McpSyncServer server;

  private final java.util.Set<String> authorizations =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private CountingMcpServer(Path effectsFile) {
    this.ledger = new ChargeLedger(effectsFile);
    this.tools = new ChargeTools(ledger, this);
    this.features = new CountingFeatures(ledger);
  }

  /** Starts on 127.0.0.1 ({@code port} 0 picks one), the MCP endpoint at {@code /mcp}. */
  public static CountingMcpServer startHttp(int port) {
    return startHttp(port, true);
  }

  /**
   * As {@link #startHttp(int)}; {@code notifiesToolChanges} false: a server that does not tell its
   * clients when its tools change (their {@code listChanged} capability off), as many do not.
   */
  public static CountingMcpServer startHttp(int port, boolean notifiesToolChanges) {
    CountingMcpServer counting = new CountingMcpServer(null);
    counting.notifiesToolChanges = notifiesToolChanges;
    HttpServletStreamableServerTransportProvider transport =
        HttpServletStreamableServerTransportProvider.builder()
            .jsonMapper(MAPPER)
            .mcpEndpoint("/mcp")
            .contextExtractor(
                request -> {
                  String authorization = request.getHeader("Authorization");
                  if (authorization != null) {
                    counting.authorizations.add(authorization);
                  }
                  String key = request.getHeader(McpMeta.IDEMPOTENCY_KEY_HEADER);
                  return McpTransportContext.create(
                      key == null ? Map.of() : Map.of(ChargeTools.HEADER_KEY, key));
                })
            .build();
    counting.server = counting.build(McpServer.sync(transport));
    Server jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(transport), "/mcp");
    jetty.setHandler(context);
    try {
      jetty.start();
    } catch (Exception e) {
      counting.server.close();
      throw new IllegalStateException("Could not start the counting MCP server: " + e, e);
    }
    counting.jetty = jetty;
    counting.connector = connector;
    return counting;
  }

  /**
   * Over stdio, as its own process: {@code --effects FILE} appends one line per effect (the key),
   * {@code --honours-keys} dedups on keys. Runs until stdin closes.
   */
  public static void main(String[] args) throws Exception {
    Path file = null;
    boolean honours = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--effects" -> file = Path.of(args[++i]);
        case "--honours-keys" -> honours = true;
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    CountingMcpServer counting = new CountingMcpServer(file);
    counting.tools.honoursKeys(honours);
    EndOfInput in = new EndOfInput(System.in);
    counting.server =
        counting.build(McpServer.sync(new StdioServerTransportProvider(MAPPER, in, System.out)));
    in.await(); // the client closed stdin (or died): this process ends with it
    System.exit(0);
  }

  private McpSyncServer build(McpServer.SyncSpecification<?> spec) {
    return spec.serverInfo("counting-payments", "1.0.0")
        .instructions(INSTRUCTIONS)
        .capabilities(
            McpSchema.ServerCapabilities.builder()
                .tools(notifiesToolChanges)
                .resources(true, true)
                .prompts(true)
                .completions()
                .logging()
                .build())
        .resourceTemplates(features.chargeTemplate())
        .completions(features.completions())
        .resources(features.summary())
        .prompts(CountingFeatures.refundPolicy())
        .tools(tools.specifications())
        .build();
  }

  /** Tells subscribers of {@value #SUMMARY} that it changed, without waiting on them. */
  void notifySummaryUpdated() {
    server
        .getAsyncServer()
        .notifyResourcesUpdated(new McpSchema.ResourcesUpdatedNotification(SUMMARY))
        .subscribe(done -> {}, e -> {});
  }

  /** Drops every connection, so a caller never gets the answer to the call in flight. */
  void drop() {
    if (connector == null) {
      Runtime.getRuntime().halt(3); // over stdio: the process dies after the effect
    }
    connector.getConnectedEndPoints().forEach(EndPoint::close);
  }

  /**
   * Adds a read-only tool {@code name} answering {@code {"tool": name}}; the server tells its
   * clients that its tools changed.
   */
  public CountingMcpServer addTool(String name) {
    server.addTool(
        SyncToolSpecification.builder()
            .tool(
                Tool.builder()
                    .name(name)
                    .description("Added while running")
                    .inputSchema(ChargeTools.schema(Map.of(), List.of()))
                    .annotations(ToolAnnotations.builder().readOnlyHint(true).build())
                    .build())
            .callHandler(
                (exchange, request) ->
                    CallToolResult.builder()
                        .structuredContent(Map.of("tool", name))
                        .addTextContent(name)
                        .build())
            .build());
    return this;
  }

  /** Removes tool {@code name}; the server tells its clients that its tools changed. */
  public CountingMcpServer removeTool(String name) {
    server.removeTool(name);
    return this;
  }

  /** Calls of {@code fault} for {@code key} from now on, once (the next call for it). */
  public CountingMcpServer inject(String key, Fault fault) {
    ledger.inject(key, fault);
    return this;
  }

  /** Whether a key seen before gets the first answer again (no second effect). */
  public CountingMcpServer honoursKeys(boolean honours) {
    tools.honoursKeys(honours);
    return this;
  }

  /** How long a {@link Fault#SLOW} call waits before its effect. */
  public CountingMcpServer slow(Duration delay) {
    tools.slow(delay);
    return this;
  }

  /** Effects performed for {@code key}. */
  /** Every {@code Authorization} header value its clients sent (over HTTP). */
  public java.util.Set<String> authorizations() {
    return java.util.Set.copyOf(authorizations);
  }

  public int effects(String key) {
    return ledger.effects(key);
  }

  /** {@code create_charge} calls received for {@code key}. */
  public int requests(String key) {
    return ledger.requests(key);
  }

  /** {@code create_charge} calls whose {@code Idempotency-Key} header was {@code key}. */
  public int keyHeaders(String key) {
    return ledger.keyHeaders(key);
  }

  /** The {@code _meta.traceparent} of the latest {@code create_charge} call for {@code key}. */
  public String traceparent(String key) {
    return ledger.traceparent(key);
  }

  public int effectCount() {
    return ledger.effectCount();
  }

  /** The Streamable HTTP endpoint, e.g. {@code http://127.0.0.1:41234/mcp}. */
  public String url() {
    return "http://127.0.0.1:" + connector.getLocalPort() + "/mcp";
  }

  public int port() {
    return connector.getLocalPort();
  }

  @Override
  public void close() {
    server.closeGracefully();
    if (jetty != null) {
      try {
        jetty.stop();
      } catch (Exception e) {
        throw new IllegalStateException("Could not stop the counting MCP server", e);
      }
    }
  }
}
