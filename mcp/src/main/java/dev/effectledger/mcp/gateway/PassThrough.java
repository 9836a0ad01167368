package dev.effectledger.mcp.gateway;

import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.connector.McpSession;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What goes straight to an upstream, not through the ledger, on the agent's own session with it
 * ({@link AgentLinks}): a read tool's call (its progress relayed back by a {@link ProgressRelay}),
 * a resource read, a prompt and a completion; and what comes straight back from one: the log
 * messages of the gateway's own sessions, relayed to every agent.
 */
final class PassThrough {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  private final McpGatewayConfig config;
  private final Upstreams upstreams;
  private final AgentLinks links;
  private final ProgressRelay progress = new ProgressRelay();

  /** The agents' sessions, once serving: where upstreams' log messages go. */
  private volatile AgentSessions agents;

  PassThrough(McpGatewayConfig config, Upstreams upstreams, AgentLinks links) {
    this.config = config;
    this.upstreams = upstreams;
    this.links = links;
  }

  /** A read tool's call, on the agent's session with its upstream. */
  CallToolResult call(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    return call(entry, exchange, request, request.meta());
  }

  /**
   * A tool's call on the agent's session with its upstream, sent with {@code meta} (the agent's, or
   * with a key added): its result, or its JSON-RPC error as the upstream answered it.
   */
  CallToolResult call(
      ToolCatalog.Entry entry,
      McpSyncServerExchange exchange,
      CallToolRequest request,
      Map<String, Object> meta) {
    Upstreams.Upstream upstream = upstreams.get(entry.upstream());
    try (AgentLinks.Use use = links.use(upstream, exchange)) {
      return call(entry, upstream, use, exchange, request, meta);
    }
  }

  private CallToolResult call(
      ToolCatalog.Entry entry,
      Upstreams.Upstream upstream,
      AgentLinks.Use use,
      McpSyncServerExchange exchange,
      CallToolRequest request,
      Map<String, Object> meta) {
    McpSession session = use.session();
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
    if (agentToken != null) {
      upstreamToken = progress.open(exchange::progressNotification, agentToken);
      meta = new LinkedHashMap<>(meta);
      meta.put("progressToken", upstreamToken);
    }
    try {
      CallToolRequest upstreamCall =
          new CallToolRequest(entry.tool().name(), request.arguments(), meta);
      if ("required".equals(upstream.taskSupport.get(entry.tool().name()))) {
        // a tool the upstream runs only as a task: called as one, its result waited for
        return use.tasks().callAsTask(upstreamCall, upstream.settings.timeout());
      }
      return client.callTool(upstreamCall);
    } catch (McpError e) {
      throw e; // the upstream's protocol error, as it answered it
    } catch (RuntimeException e) {
      session.discard(client);
      boolean write = meta != null && meta.containsKey(McpMeta.IDEMPOTENCY_KEY);
      return Answers.refused(
          "UPSTREAM_UNAVAILABLE",
          "lost upstream "
              + entry.upstream()
              + (write ? " during a pass-through write (" : " during a read call (")
              + e.getMessage()
              + ")",
          write
              ? "It may have taken effect. Call again the same way only if the upstream honours"
                  + " the idempotency key it was sent; otherwise ask it what happened."
              : "Call again: it only reads.");
    } finally {
      if (upstreamToken != null) {
        // before the answer goes back: the progress the upstream sent before its result
        progress.finish(upstreamToken);
      }
    }
  }

  /**
   * A resource read, a prompt or a completion, on the agent's session with its upstream: its
   * answer, or its JSON-RPC error as it gave it; an unreachable upstream is an internal error
   * naming it.
   */
  <T> T forward(String upstream, McpSyncServerExchange exchange, Function<McpSyncClient, T> call) {
    try (AgentLinks.Use use = links.use(upstreams.get(upstream), exchange)) {
      return forward(upstream, use.session(), call);
    }
  }

  private static <T> T forward(
      String upstream, McpSession session, Function<McpSyncClient, T> call) {
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

  /**
   * An upstream's progress, to the agent whose call it is: told in the order the upstream sent it,
   * on the thread reading the upstream (see {@link ProgressRelay}).
   */
  void relayProgress(McpSchema.ProgressNotification notification) {
    progress.relay(notification);
  }

  /** Stops relaying progress: the gateway is closing. */
  void close() {
    progress.close();
  }

  /** Serving: upstreams' log messages go to {@code agents} from now on. */
  void relayLogsTo(AgentSessions agents) {
    this.agents = agents;
  }

  /**
   * An upstream's log message, if it is at least the configured level, to every agent connected to
   * the gateway whose own level ({@code logging/setLevel}) it reaches; its logger names the
   * upstream ({@code <upstream>} or {@code <upstream>/<logger>}).
   */
  void relayLog(String upstream, McpSchema.LoggingMessageNotification message) {
    AgentSessions to = agents;
    McpSchema.LoggingMessageNotification relayed = relayed(upstream, message, config.logging());
    if (to == null || relayed == null) {
      return;
    }
    to.log(relayed);
  }

  /**
   * {@code message} of {@code upstream} as the agents are sent it, its logger naming the upstream;
   * null when it is below {@code minimum}, has no level, or no message is relayed (no minimum).
   */
  static McpSchema.LoggingMessageNotification relayed(
      String upstream,
      McpSchema.LoggingMessageNotification message,
      McpSchema.LoggingLevel minimum) {
    if (minimum == null || message.level() == null || message.level().level() < minimum.level()) {
      return null;
    }
    return new McpSchema.LoggingMessageNotification(
        message.level(),
        message.logger() == null ? upstream : upstream + "/" + message.logger(),
        message.data(),
        message.meta());
  }
}
