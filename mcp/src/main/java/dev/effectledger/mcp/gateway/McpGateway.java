package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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
 *
 * <p>Its parts: {@link Upstreams} (the gateway's sessions with the upstreams and what they list),
 * {@link AgentLinks} (each agent's own sessions with them), {@link ServedCatalog} (what is served,
 * mirrored from them), {@link WriteCalls} (write calls through the ledger), {@link PassThrough}
 * (what goes straight upstream and back) and {@link McpTransports} (how agents reach it).
 */
public final class McpGateway implements AutoCloseable {

  private final McpGatewayConfig config;
  private final WriteCalls writes;
  private final Upstreams upstreams;
  private final AgentLinks links;
  private final AgentSessions agents = new AgentSessions();
  private final AgentTasks tasks;
  private final PassThrough reads;
  private final ServedCatalog served;
  private McpTransports http; // null unless serving over Streamable HTTP

  private McpGateway(McpGatewayConfig config, ToolPolicies policies) {
    this.config = config;
    this.writes = new WriteCalls(config, policies);
    // what the upstreams' sessions tell (only once they are opened, by start()) goes to the parts
    // built below
    this.upstreams =
        new Upstreams(
            config,
            new Upstreams.Events() {
              @Override
              public void progress(McpSchema.ProgressNotification notification) {
                reads.relayProgress(notification);
              }

              @Override
              public void resourcesUpdated(
                  Upstreams.Upstream upstream, List<McpSchema.ResourceContents> read) {
                served.relayUpdates(upstream.name, read);
              }

              @Override
              public void log(
                  Upstreams.Upstream upstream, McpSchema.LoggingMessageNotification message) {
                reads.relayLog(upstream.name, message);
              }

              @Override
              public void listed() {
                served.apply();
              }
            });
    this.links = new AgentLinks(config, this::relayProgress);
    this.reads = new PassThrough(config, upstreams, links);
    this.served = new ServedCatalog(upstreams, reads, this::call, writes::warnOfMissingPolicies);
    this.tasks =
        new AgentTasks(
            agents,
            new AgentTasks.Calls() {
              @Override
              public CallToolResult call(
                  String tool,
                  McpSyncServerExchange exchange,
                  CallToolRequest request,
                  Duration wait) {
                ToolCatalog.Entry entry = served.catalog().byName().get(tool);
                if (entry == null) {
                  throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
                      .message("Unknown tool: " + tool + " (no longer served)")
                      .build();
                }
                return McpGateway.this.call(entry, exchange, request, wait);
              }

              @Override
              public boolean writes(String tool) {
                return McpGateway.this.writes(tool);
              }
            });
    upstreams.start();
  }

  /** Lists the upstreams' tools without serving them: for {@link #missingPolicies}. */
  public static McpGateway inspect(McpGatewayConfig config, ToolPolicies policies) {
    return new McpGateway(config, policies);
  }

  /** Lists the upstreams' tools and serves them over Streamable HTTP at the configured address. */
  public static McpGateway startHttp(McpGatewayConfig config, ToolPolicies policies) {
    McpGateway gateway = new McpGateway(config, policies);
    try {
      gateway.writes.connectLedger(gateway.served.catalog().entries());
      gateway.http =
          McpTransports.http(
              config,
              gateway::serve,
              gateway.agents,
              gateway.refusals(),
              gateway::writes,
              session -> {
                gateway.links.ended(session);
                gateway.agents.ended(session);
              });
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
      gateway.writes.connectLedger(gateway.served.catalog().entries());
      McpTransports.stdio(in, out, gateway::serve, gateway.agents, gateway.refusals());
    } catch (RuntimeException e) {
      gateway.close();
      throw e;
    }
    return gateway;
  }

  private void relayProgress(McpSchema.ProgressNotification notification) {
    reads.relayProgress(notification);
  }

  private void serve(McpServer.SyncSpecification<?> spec, AgentSessions agents) {
    // an upstream's request relayed to an agent may wait as long as the call that caused it
    spec.requestTimeout(AgentLinks.requestTimeout(upstreams.all()))
        .rootsChangeHandler((exchange, roots) -> links.rootsChanged(exchange.sessionId(), roots));
    served.build(spec);
    reads.relayLogsTo(agents);
    links.serving(agents, tasks::waitingForInput);
  }

  /** Whether the served tool {@code tool} writes: its calls go through the ledger. */
  private boolean writes(String tool) {
    ToolCatalog.Entry entry = served.catalog().byName().get(tool);
    return entry != null && writes.classOf(entry) != ToolClass.READ;
  }

  private CallRefusals refusals() {
    return new CallRefusals(served::serves, tasks, agents);
  }

  private CallToolResult call(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    return call(entry, exchange, request, config.callWait());
  }

  /** A call of a served tool; a write's answer waited for as long as {@code wait}. */
  private CallToolResult call(
      ToolCatalog.Entry entry,
      McpSyncServerExchange exchange,
      CallToolRequest request,
      Duration wait) {
    if (writes.classOf(entry) == ToolClass.READ) {
      return reads.call(entry, exchange, request);
    }
    McpGatewayConfig.Interactive interactive = config.interactive().get(entry.name());
    if (interactive == McpGatewayConfig.Interactive.REFUSE) {
      return Answers.refused(
          "AGENT_REQUESTS_UNAVAILABLE",
          "tool "
              + entry.name()
              + " asks its agent (sampling or elicitation) while it runs, and a write through the"
              + " ledger runs later in an executor, where no agent is on the line",
          "Call it directly, or have the operator set interactive: {"
              + entry.name()
              + ": pass-through} in the gateway's configuration. Nothing was done.");
    }
    if (interactive == McpGatewayConfig.Interactive.PASS_THROUGH) {
      return writes.passThrough(
          entry, exchange, request, meta -> reads.call(entry, exchange, request, meta));
    }
    return writes.call(entry, exchange, request, wait);
  }

  /** The applied policy version this gateway decides by; 0: its own tools.yaml. */
  public long policyVersion() {
    return writes.policyVersion();
  }

  /** What the agent is told on initialize; see {@link ServedCatalog#instructions(Map)}. */
  static String instructions(Map<String, String> byUpstream) {
    return ServedCatalog.instructions(byUpstream);
  }

  /** The tools this gateway lists. */
  public ToolCatalog catalog() {
    return served.catalog();
  }

  /** The Streamable HTTP endpoint, e.g. {@code http://127.0.0.1:8097/mcp}. */
  public String url() {
    return http.url();
  }

  /** Policies for the write tools tools.yaml does not name; see {@link PolicyGenerator}. */
  public ObjectNode missingPolicies() {
    return PolicyGenerator.missing(config, served.catalog(), writes.policies());
  }

  @Override
  public void close() {
    upstreams.stopRefreshing();
    served.close();
    if (http != null) {
      http.stop();
    }
    tasks.close();
    writes.close();
    links.close();
    upstreams.closeSessions();
    reads.close();
  }
}
