package dev.effectledger.mcp.embedded;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.EndOfInput;
import dev.effectledger.mcp.McpMeta;
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
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
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

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(JSON);
  private static final String HEADER_KEY = "idempotency-key-header";

  /** Its one resource: {@code {"charges": n}}. */
  public static final String SUMMARY = "charges://summary";

  /** Its resource template: the charge made for {@code key}. */
  public static final String CHARGE = "charges://charge/{key}";

  /** The customers {@code refund_policy}'s argument completes from. */
  public static final List<String> CUSTOMERS = List.of("cus_1", "cus_2", "cus_3");

  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> keyHeaders = new ConcurrentHashMap<>();
  private final Map<String, Fault> faults = new ConcurrentHashMap<>();
  private final Map<String, Map<String, Object>> charges = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  private volatile boolean honoursKeys;
  private boolean notifiesToolChanges = true;
  private volatile Duration slow = Duration.ofSeconds(2);
  private final Path effectsFile;
  private Server jetty;
  private ServerConnector connector;
  private McpSyncServer server;

  private CountingMcpServer(Path effectsFile) {
    this.effectsFile = effectsFile;
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
                  String key = request.getHeader(McpMeta.IDEMPOTENCY_KEY_HEADER);
                  return McpTransportContext.create(
                      key == null ? Map.of() : Map.of(HEADER_KEY, key));
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
    counting.honoursKeys = honours;
    EndOfInput in = new EndOfInput(System.in);
    counting.server =
        counting.build(McpServer.sync(new StdioServerTransportProvider(MAPPER, in, System.out)));
    in.await(); // the client closed stdin (or died): this process ends with it
    System.exit(0);
  }

  private McpSyncServer build(McpServer.SyncSpecification<?> spec) {
    Map<String, Object> chargeSchema =
        schema(
            Map.of(
                "amount", Map.of("type", "integer"),
                "to", Map.of("type", "string"),
                "fault", Map.of("type", "string")),
            List.of("amount", "to"));
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
        .resourceTemplates(
            new SyncResourceTemplateSpecification(
                McpSchema.ResourceTemplate.builder()
                    .uriTemplate(CHARGE)
                    .name("charge")
                    .description("The charge made for a key")
                    .mimeType("application/json")
                    .build(),
                this::readCharge))
        .completions(
            new SyncCompletionSpecification(
                new McpSchema.PromptReference("refund_policy"),
                (exchange, request) -> completion(CUSTOMERS, request.argument().value())),
            new SyncCompletionSpecification(
                new McpSchema.ResourceReference(CHARGE),
                (exchange, request) ->
                    completion(List.copyOf(charges.keySet()), request.argument().value())))
        .resources(
            new SyncResourceSpecification(
                McpSchema.Resource.builder()
                    .uri(SUMMARY)
                    .name("charges")
                    .description("How many charges this server made")
                    .mimeType("application/json")
                    .build(),
                (exchange, request) ->
                    new McpSchema.ReadResourceResult(
                        List.of(
                            new McpSchema.TextResourceContents(
                                SUMMARY,
                                "application/json",
                                "{\"charges\":" + effectCount() + "}")))))
        .prompts(
            new SyncPromptSpecification(
                new McpSchema.Prompt(
                    "refund_policy",
                    "How to refund a customer",
                    List.of(new McpSchema.PromptArgument("customer", "the customer", true))),
                (exchange, request) ->
                    new McpSchema.GetPromptResult(
                        "refund policy",
                        List.of(
                            new McpSchema.PromptMessage(
                                McpSchema.Role.USER,
                                new McpSchema.TextContent(
                                    "Refund "
                                        + request.arguments().get("customer")
                                        + " within 30 days."))))))
        .tools(
            SyncToolSpecification.builder()
                .tool(
                    Tool.builder()
                        .name("create_charge")
                        .description("Charges a card: once per key")
                        .inputSchema(chargeSchema)
                        .annotations(
                            ToolAnnotations.builder()
                                .destructiveHint(true)
                                .idempotentHint(false)
                                .readOnlyHint(false)
                                .build())
                        .build())
                .callHandler(this::createCharge)
                .build(),
            SyncToolSpecification.builder()
                .tool(
                    Tool.builder()
                        .name("find_charge")
                        .description("Whether the charge for a key happened")
                        .inputSchema(
                            schema(Map.of("key", Map.of("type", "string")), List.of("key")))
                        .annotations(ToolAnnotations.builder().readOnlyHint(true).build())
                        .build())
                .callHandler(this::findCharge)
                .build(),
            SyncToolSpecification.builder()
                .tool(
                    Tool.builder()
                        .name("get_balance")
                        .description("The account's balance")
                        .inputSchema(schema(Map.of("steps", Map.of("type", "integer")), List.of()))
                        .annotations(ToolAnnotations.builder().readOnlyHint(true).build())
                        .build())
                .callHandler(
                    (exchange, request) -> {
                      // a caller that asks for progress gets `steps` notifications (default 2)
                      // first, the result right after the last
                      Object token = request.progressToken();
                      if (token != null) {
                        Object asked =
                            request.arguments() == null ? null : request.arguments().get("steps");
                        int steps = asked instanceof Number n ? n.intValue() : 2;
                        for (int step = 1; step <= steps; step++) {
                          exchange.progressNotification(
                              new McpSchema.ProgressNotification(
                                  token, (double) step, (double) steps, "counting, step " + step));
                        }
                      }
                      exchange.loggingNotification(
                          new McpSchema.LoggingMessageNotification(
                              McpSchema.LoggingLevel.NOTICE,
                              "balance",
                              "balance read: " + (100 - effectCount())));
                      return CallToolResult.builder()
                          .structuredContent(Map.of("balance", 100 - effectCount()))
                          .addTextContent("balance " + (100 - effectCount()))
                          .build();
                    })
                .build())
        .build();
  }

  private static Map<String, Object> schema(Map<String, Object> properties, List<String> required) {
    Map<String, Object> schema = new LinkedHashMap<>();
    schema.put("type", "object");
    schema.put("properties", properties);
    schema.put("required", required);
    return schema;
  }

  private CallToolResult createCharge(McpSyncServerExchange exchange, CallToolRequest request) {
    String key = keyOf(exchange, request);
    requests.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    Object header =
        exchange.transportContext() == null ? null : exchange.transportContext().get(HEADER_KEY);
    if (header != null) {
      keyHeaders.computeIfAbsent(header.toString(), k -> new AtomicInteger()).incrementAndGet();
    }
    Object asked = request.arguments() == null ? null : request.arguments().get("fault");
    Fault fault =
        asked != null
            ? Fault.valueOf(asked.toString().toUpperCase(Locale.ROOT))
            : faults.remove(key);
    if (fault == Fault.ERROR_BEFORE) {
      return CallToolResult.builder().isError(true).addTextContent("card declined").build();
    }
    if (fault == Fault.PROTOCOL_ERROR) {
      throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
          .message("amount must be positive")
          .build();
    }
    if (honoursKeys && charges.containsKey(key)) {
      return result(charges.get(key));
    }
    if (fault == Fault.SLOW) {
      sleep(slow);
    }
    Map<String, Object> charge = new LinkedHashMap<>();
    charge.put("id", "ch_" + ids.incrementAndGet());
    charge.put("amount", request.arguments().get("amount"));
    charge.put("to", request.arguments().get("to"));
    effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    charges.putIfAbsent(key, charge);
    record(key);
    // subscribers are told after the answer, not before it: a charge does not wait on them
    server
        .getAsyncServer()
        .notifyResourcesUpdated(new McpSchema.ResourcesUpdatedNotification(SUMMARY))
        .subscribe(done -> {}, e -> {});
    if (fault == Fault.DROP_AFTER) {
      drop();
    }
    return result(charge);
  }

  private static CallToolResult result(Map<String, Object> charge) {
    return CallToolResult.builder()
        .addTextContent("charged " + charge.get("amount") + " to " + charge.get("to"))
        .structuredContent(charge)
        .build();
  }

  private CallToolResult findCharge(McpSyncServerExchange exchange, CallToolRequest request) {
    Map<String, Object> charge = charges.get(String.valueOf(request.arguments().get("key")));
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("found", charge != null);
    if (charge != null) {
      answer.put("id", charge.get("id"));
    }
    return CallToolResult.builder()
        .structuredContent(answer)
        .addTextContent(charge == null ? "no charge" : "charge " + charge.get("id"))
        .build();
  }

  private McpSchema.ReadResourceResult readCharge(
      McpSyncServerExchange exchange, McpSchema.ReadResourceRequest request) {
    String prefix = CHARGE.substring(0, CHARGE.indexOf('{'));
    String key = request.uri().startsWith(prefix) ? request.uri().substring(prefix.length()) : "";
    Map<String, Object> charge = charges.get(key);
    if (charge == null) {
      throw McpError.builder(McpSchema.ErrorCodes.RESOURCE_NOT_FOUND)
          .message("no charge for key " + key)
          .build();
    }
    try {
      return new McpSchema.ReadResourceResult(
          List.of(
              new McpSchema.TextResourceContents(
                  request.uri(), "application/json", JSON.writeValueAsString(charge))));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static McpSchema.CompleteResult completion(List<String> values, String typed) {
    List<String> matching =
        values.stream().filter(v -> v.startsWith(typed == null ? "" : typed)).sorted().toList();
    return new McpSchema.CompleteResult(
        new McpSchema.CompleteResult.CompleteCompletion(matching, matching.size(), false));
  }

  private static String keyOf(McpSyncServerExchange exchange, CallToolRequest request) {
    Object key = request.meta() == null ? null : request.meta().get(McpMeta.IDEMPOTENCY_KEY);
    if (key == null && exchange.transportContext() != null) {
      key = exchange.transportContext().get(HEADER_KEY);
    }
    return key == null ? "" : key.toString();
  }

  private void record(String key) {
    if (effectsFile == null) {
      return;
    }
    try {
      Files.writeString(
          effectsFile,
          key + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND,
          StandardOpenOption.SYNC);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void drop() {
    if (connector == null) {
      Runtime.getRuntime().halt(3); // over stdio: the process dies after the effect
    }
    connector.getConnectedEndPoints().forEach(EndPoint::close);
  }

  private static void sleep(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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
                    .inputSchema(schema(Map.of(), List.of()))
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
    faults.put(key, fault);
    return this;
  }

  /** Whether a key seen before gets the first answer again (no second effect). */
  public CountingMcpServer honoursKeys(boolean honours) {
    this.honoursKeys = honours;
    return this;
  }

  /** How long a {@link Fault#SLOW} call waits before its effect. */
  public CountingMcpServer slow(Duration delay) {
    this.slow = delay;
    return this;
  }

  /** Effects performed for {@code key}. */
  public int effects(String key) {
    AtomicInteger n = effects.get(key);
    return n == null ? 0 : n.get();
  }

  /** {@code create_charge} calls received for {@code key}. */
  public int requests(String key) {
    AtomicInteger n = requests.get(key);
    return n == null ? 0 : n.get();
  }

  /** {@code create_charge} calls whose {@code Idempotency-Key} header was {@code key}. */
  public int keyHeaders(String key) {
    AtomicInteger n = keyHeaders.get(key);
    return n == null ? 0 : n.get();
  }

  public int effectCount() {
    return effects.values().stream().mapToInt(AtomicInteger::get).sum();
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
