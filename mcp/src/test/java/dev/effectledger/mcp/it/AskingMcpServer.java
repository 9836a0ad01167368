package dev.effectledger.mcp.it;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.McpMeta;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * A real MCP server (the Java SDK's, over Streamable HTTP on 127.0.0.1) whose tools ask their
 * caller while they run: {@code ask_model} (sampling), {@code ask_user} (form elicitation), {@code
 * show_roots} (roots), each read-only and logging a notice to the calling session only; {@code
 * confirm_transfer} (destructive) asks the user to confirm, then records one effect per key it is
 * sent ({@code _meta} {@value McpMeta#IDEMPOTENCY_KEY}); {@code approve_refund} (destructive) only
 * counts its calls. It counts the sessions its clients open and end ({@code DELETE}).
 */
final class AskingMcpServer implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();

  final Map<String, AtomicInteger> transfersByKey = new ConcurrentHashMap<>();
  final AtomicInteger refundCalls = new AtomicInteger();
  final AtomicInteger initialized = new AtomicInteger();
  final AtomicInteger ended = new AtomicInteger();
  private final McpSyncServer server;
  private final Server jetty;
  private final ServerConnector connector;

  AskingMcpServer() throws Exception {
    HttpServletStreamableServerTransportProvider transport =
        HttpServletStreamableServerTransportProvider.builder()
            .jsonMapper(new JacksonMcpJsonMapper(JSON))
            .mcpEndpoint("/mcp")
            .build();
    server =
        McpServer.sync(transport)
            .serverInfo("asking", "1")
            .capabilities(McpSchema.ServerCapabilities.builder().tools(true).logging().build())
            .tools(
                tool("ask_model", true, this::askModel),
                tool("ask_user", true, this::askUser),
                tool("show_roots", true, this::showRoots),
                tool("confirm_transfer", false, this::confirmTransfer),
                tool(
                    "approve_refund",
                    false,
                    (exchange, request) -> {
                      refundCalls.incrementAndGet();
                      return text("approved");
                    }))
            .build();
    jetty = new Server();
    connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(transport), "/mcp");
    Filter counting =
        (request, response, chain) -> {
          HttpServletRequest http = (HttpServletRequest) request;
          if ("DELETE".equals(http.getMethod())) {
            ended.incrementAndGet();
          } else if ("POST".equals(http.getMethod()) && http.getHeader("Mcp-Session-Id") == null) {
            initialized.incrementAndGet(); // an initialize: the only POST without a session
          }
          chain.doFilter(request, response);
        };
    context.addFilter(new FilterHolder(counting), "/mcp", EnumSet.of(DispatcherType.REQUEST));
    jetty.setHandler(context);
    jetty.start();
  }

  String url() {
    return "http://127.0.0.1:" + connector.getLocalPort() + "/mcp";
  }

  private static SyncToolSpecification tool(
      String name,
      boolean readOnly,
      BiFunction<McpSyncServerExchange, McpSchema.CallToolRequest, CallToolResult> call) {
    return SyncToolSpecification.builder()
        .tool(
            Tool.builder()
                .name(name)
                .inputSchema(
                    new McpSchema.JsonSchema(
                        "object",
                        Map.of("text", Map.of("type", "string")),
                        List.of(),
                        null,
                        null,
                        null))
                .annotations(new ToolAnnotations(null, readOnly, !readOnly, false, false, null))
                .build())
        .callHandler(
            (exchange, request) -> {
              try {
                return call.apply(exchange, request);
              } catch (RuntimeException e) { // as a server tells its caller a tool failed
                return CallToolResult.builder()
                    .addTextContent(name + " failed: " + e.getMessage())
                    .isError(true)
                    .build();
              }
            })
        .build();
  }

  private CallToolResult askModel(
      McpSyncServerExchange exchange, McpSchema.CallToolRequest request) {
    Map<String, Object> arguments = arguments(request);
    String prompt = String.valueOf(arguments.get("text"));
    exchange.loggingNotification(
        new McpSchema.LoggingMessageNotification(
            McpSchema.LoggingLevel.NOTICE, "asker", "asking the model: " + prompt));
    McpSchema.CreateMessageResult answer =
        exchange.createMessage(
            McpSchema.CreateMessageRequest.builder()
                .messages(
                    List.of(
                        new McpSchema.SamplingMessage(
                            McpSchema.Role.USER, new McpSchema.TextContent(prompt))))
                .maxTokens(50)
                .build());
    return text(((McpSchema.TextContent) answer.content()).text() + " (" + answer.model() + ")");
  }

  private CallToolResult askUser(
      McpSyncServerExchange exchange, McpSchema.CallToolRequest request) {
    Map<String, Object> arguments = arguments(request);
    McpSchema.ElicitResult answer = exchange.createElicitation(confirm(arguments.get("text")));
    return text(answer.action() + " " + answer.content());
  }

  private CallToolResult showRoots(
      McpSyncServerExchange exchange, McpSchema.CallToolRequest request) {
    return text(
        String.join(",", exchange.listRoots().roots().stream().map(McpSchema.Root::uri).toList()));
  }

  private CallToolResult confirmTransfer(
      McpSyncServerExchange exchange, McpSchema.CallToolRequest request) {
    Map<String, Object> arguments = arguments(request);
    McpSchema.ElicitResult answer =
        exchange.createElicitation(confirm("transfer " + arguments.get("text") + "?"));
    if (answer.action() != McpSchema.ElicitResult.Action.ACCEPT) {
      return text("not transferred: " + answer.action());
    }
    Object key = request.meta() == null ? null : request.meta().get(McpMeta.IDEMPOTENCY_KEY);
    int effects =
        transfersByKey
            .computeIfAbsent(String.valueOf(key), k -> new AtomicInteger())
            .incrementAndGet();
    return text("transferred under " + key + " (effect " + effects + ")");
  }

  private static Map<String, Object> arguments(McpSchema.CallToolRequest request) {
    return request.arguments() == null ? Map.of() : request.arguments();
  }

  private static McpSchema.ElicitFormRequest confirm(Object message) {
    return new McpSchema.ElicitFormRequest(
        String.valueOf(message),
        Map.of(
            "type",
            "object",
            "properties",
            Map.of("confirmed", Map.of("type", "boolean")),
            "required",
            List.of("confirmed")),
        null);
  }

  private static CallToolResult text(String text) {
    return CallToolResult.builder().addTextContent(text).build();
  }

  @Override
  public void close() throws Exception {
    server.close();
    jetty.stop();
  }
}
