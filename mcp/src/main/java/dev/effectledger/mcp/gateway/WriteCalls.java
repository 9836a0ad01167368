package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.auth.FairShare;
import dev.effectledger.client.CallOptions;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.KeyDerivationException;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.policy.FollowedPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.JsonSyntax;
import dev.effectledger.schema.Traces;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Write tool calls through the ledger: the policy that classes tools ({@link #classOf}; the file's,
 * then the applied one as it changes), the Java client that publishes a call as an intent and waits
 * for its answer, and a call's key: its run ({@link #runOf}), its step and scope, or its own
 * idempotency key, from {@code _meta}.
 */
final class WriteCalls implements AutoCloseable {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Where the HTTP transport puts the run id header's value in a call's transport context. */
  static final String RUN_HEADER = "effectledger-run-header";

  /** The transport context's key of the caller's tenant, from its access token. */
  static final String TENANT = "effectledger-tenant";

  /**
   * In an interactive write's answer {@code _meta}: how it was performed ({@code pass-through}).
   */
  static final String PERFORMED = "effectledger.dev/performed";

  /** The run recorded with a write call whose {@code _meta} gives its key and no run. */
  static final String KEY_ONLY_RUN = "mcp-idempotency-key";

  private final McpGatewayConfig config;

  /** The file's policies, then (once serving) the applied policy as it changes. */
  private volatile FollowedPolicy policy;

  private ToolCallClient ledger;

  WriteCalls(McpGatewayConfig config, ToolPolicies policies) {
    this.config = config;
    this.policy = FollowedPolicy.fixed("MCP gateway", policies);
  }

  /** Connects to the ledger to serve {@code served}, warning of its write tools without policy. */
  void connectLedger(List<ToolCatalog.Entry> served) {
    warnOfMissingPolicies(served);
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

  /** The policies decided by now. */
  ToolPolicies policies() {
    return policy.policies();
  }

  /** The applied policy version decided by; 0: the gateway's own tools.yaml. */
  long policyVersion() {
    return policy.version();
  }

  /** Warns of the write tools among {@code entries} that the ledger's tools.yaml does not name. */
  void warnOfMissingPolicies(List<ToolCatalog.Entry> entries) {
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

  /** The tool's class: its policy's, else the configured one of its annotations. */
  ToolClass classOf(ToolCatalog.Entry entry) {
    return policy
        .policies()
        .forTool(entry.name())
        .map(ToolPolicy::toolClass)
        .orElse(ToolCatalog.classOf(entry, config.annotations()));
  }

  /**
   * The ledger's answer to a published call: within {@code wait} (the client answers {@code
   * STILL_RUNNING} then), and 10 s more for the reply to arrive. While it waits, an agent that
   * asked for progress ({@code progressToken}) is sent a notification every {@code progress}, so
   * that it knows the call is alive and a client that resets its timeout on progress keeps waiting.
   */
  private CallResult answer(
      CompletableFuture<CallResult> pending,
      McpSyncServerExchange exchange,
      Object token,
      Duration wait)
      throws ExecutionException, TimeoutException, InterruptedException {
    long started = System.nanoTime();
    long deadline = started + wait.toNanos() + TimeUnit.SECONDS.toNanos(10);
    if (token == null) {
      return pending.get(deadline - started, TimeUnit.NANOSECONDS);
    }
    long every = config.writeProgress().toNanos();
    int sent = 0;
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new TimeoutException();
      }
      try {
        return pending.get(Math.min(every, left), TimeUnit.NANOSECONDS);
      } catch (TimeoutException stillWaiting) {
        if (deadline - System.nanoTime() <= 0) {
          throw stillWaiting;
        }
        long waited = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
        sent++;
        try {
          exchange.progressNotification(
              new McpSchema.ProgressNotification(
                  token,
                  sent,
                  null,
                  "in the ledger, waiting for its effect ("
                      + waited
                      + " s; answered within "
                      + wait.toSeconds()
                      + " s)"));
        } catch (RuntimeException e) {
          log.debug("Could not send a waiting write call's progress", e);
        }
      }
    }
  }

  /** A write call as the ledger takes it, or why it is refused (nothing done). */
  private record Prepared(ToolCall call, CallToolResult refused) {}

  /** A write tool's call: published to the ledger, and answered with the ledger's answer. */
  CallToolResult call(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    return call(entry, exchange, request, config.callWait());
  }

  /**
   * A write tool's call, its answer waited for as long as {@code wait} ({@code STILL_RUNNING}
   * then): the gateway's {@code wait}, or a task's life.
   */
  CallToolResult call(
      ToolCatalog.Entry entry,
      McpSyncServerExchange exchange,
      CallToolRequest request,
      Duration wait) {
    Prepared prepared = prepare(entry, exchange, request);
    if (prepared.refused() != null) {
      return prepared.refused();
    }
    ToolCall call = prepared.call();
    FairShare.Ticket place;
    try {
      place = config.fairShare().admit(call.step().tenant(), call.step().runId());
    } catch (FairShare.OverLimit over) {
      return Answers.later(
          "OVER_LIMIT",
          over.getMessage(),
          "Call again in "
              + over.retryAfter().toSeconds()
              + " s with the same arguments in the same run. Nothing was done.");
    }
    // the call's span (GenAI execute_tool), a child of the traceparent in the request's _meta
    Context parent =
        Traces.extract(
            metaText(request.meta(), Traces.TRACEPARENT),
            metaText(request.meta(), Traces.TRACESTATE));
    Span span =
        Traces.toolCall(
            parent,
            call.tool(),
            call.step().stepId(),
            call.step().tenant(),
            call.step().runId(),
            null);
    if (Traces.carried(span, parent)) {
      call = call.withTraceId(Traces.traceparent(Context.root().with(span)));
    }
    try (place;
        Scope scope = Traces.enter(span, parent)) {
      return Answers.of(
          answer(
              ledger.invoke(call, CallOptions.timeout(wait)),
              exchange,
              request.progressToken(),
              wait));
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
    } finally {
      span.end();
    }
  }

  /** A text entry of a request's {@code _meta}; null when absent or not text. */
  private static String metaText(Map<String, Object> meta, String name) {
    return meta != null && meta.get(name) instanceof String text ? text : null;
  }

  /**
   * An interactive write tool's call performed as pass-through ({@code interactive: pass-through}):
   * by {@code perform} in the agent's own session with the upstream, sent with the key the ledger
   * would give it in {@code _meta} (and so in an {@code Idempotency-Key} header over HTTP), which
   * the answer's {@code _meta} names too. The ledger does not record it.
   */
  CallToolResult passThrough(
      ToolCatalog.Entry entry,
      McpSyncServerExchange exchange,
      CallToolRequest request,
      Function<Map<String, Object>, CallToolResult> perform) {
    Prepared prepared = prepare(entry, exchange, request);
    if (prepared.refused() != null) {
      return prepared.refused();
    }
    String key;
    try {
      key = ledger.keyOf(prepared.call()).key();
    } catch (KeyDerivationException k) {
      return Answers.refused(k.code(), k.getMessage(), "Fix the arguments. Nothing was done.");
    }
    Map<String, Object> meta =
        new LinkedHashMap<>(request.meta() == null ? Map.of() : request.meta());
    meta.put(McpMeta.IDEMPOTENCY_KEY, key);
    CallToolResult result = perform.apply(meta);
    Map<String, Object> answered =
        new LinkedHashMap<>(result.meta() == null ? Map.of() : result.meta());
    answered.put(McpMeta.IDEMPOTENCY_KEY, key);
    answered.put(PERFORMED, "pass-through");
    return new CallToolResult(
        result.content(), result.isError(), result.structuredContent(), answered);
  }

  /** The policy, the run and the key of a write call, or why it is refused. */
  private Prepared prepare(
      ToolCatalog.Entry entry, McpSyncServerExchange exchange, CallToolRequest request) {
    if (policy.policies().forTool(entry.name()).isEmpty()) {
      return refused(
          "POLICY_MISSING",
          "tool " + entry.name() + " writes, and the ledger has no policy for it",
          "An operator adds it: `effectledger mcp policies --config <mcp.yaml>`, then"
              + " `effectledger tools apply` with it in tools.yaml. Nothing was done.");
    }
    Map<String, Object> meta = request.meta() == null ? Map.of() : request.meta();
    String run =
        runOf(
            meta,
            exchange.transportContext() == null
                ? null
                : exchange.transportContext().get(RUN_HEADER),
            config,
            exchange::sessionId);
    if (run == null) {
      return refused(
          "RUN_ID_REQUIRED",
          "a write call needs the agent run it belongs to, and this one names none",
          "Send the run id in _meta \""
              + McpMeta.RUN_ID
              + "\""
              + (config.runHeader() == null ? "" : " or the " + config.runHeader() + " header")
              + ", or configure run.id or run.fallback: session in the gateway. Nothing was done.");
    }
    String ownKey = text(meta.get(McpMeta.IDEMPOTENCY_KEY));
    String step = text(meta.get(McpMeta.STEP_ID));
    String scope = text(meta.get(McpMeta.SCOPE));
    String arguments;
    try {
      arguments =
          JSON.writeValueAsString(request.arguments() == null ? Map.of() : request.arguments());
    } catch (JsonProcessingException e) {
      return refused("ARGUMENTS_NOT_JSON", JsonSyntax.describe(e), "Send JSON arguments.");
    }
    Object callerTenant =
        exchange.transportContext() == null ? null : exchange.transportContext().get(TENANT);
    String tenant = callerTenant instanceof String t ? t : config.tenant();
    if (tenant == null) {
      return refused(
          "TENANT_REQUIRED",
          "a write call needs the tenant it is for, and neither the agent's token nor the"
              + " gateway's configuration names one",
          "Configure tenant: in the gateway (stdio), or auth: with a tenant claim. Nothing was"
              + " done.");
    }
    ToolCall derived =
        ToolCall.of(
            new StepContext(
                tenant,
                run,
                step == null ? "mcp:" + entry.name() : step,
                scope == null ? "" : scope),
            entry.name(),
            arguments);
    try {
      return new Prepared(ownKey == null ? derived : derived.withIdempotencyKey(ownKey), null);
    } catch (IllegalArgumentException e) {
      return refused(
          "INVALID_IDEMPOTENCY_KEY",
          "_meta \"" + McpMeta.IDEMPOTENCY_KEY + "\": " + e.getMessage(),
          "Send a valid key, or none to have one derived. Nothing was done.");
    }
  }

  private static Prepared refused(String code, String what, String next) {
    return new Prepared(null, Answers.refused(code, what, next));
  }

  /**
   * The run a write call belongs to: the one in its {@code _meta}, else the run id header's ({@code
   * header}), else the configured run id, else its MCP session's (with {@code run.fallback:
   * session}), else {@link #KEY_ONLY_RUN} when {@code _meta} gives the call's own key; null when
   * none of these.
   */
  static String runOf(
      Map<String, Object> meta, Object header, McpGatewayConfig config, Supplier<String> session) {
    String run = text(meta.get(McpMeta.RUN_ID));
    if (run == null) {
      run = text(header);
    }
    if (run == null) {
      run = config.runId();
    }
    if (run == null && config.runFallback() == McpGatewayConfig.RunFallback.SESSION) {
      run = "mcp-session:" + session.get();
    }
    if (run == null && text(meta.get(McpMeta.IDEMPOTENCY_KEY)) != null) {
      run = KEY_ONLY_RUN; // the key names the action; the run is only recorded with the intent
    }
    return run;
  }

  private static String text(Object value) {
    if (value == null) {
      return null;
    }
    String s = value.toString();
    return s.isBlank() ? null : s;
  }

  /** Stops following the applied policy, and closes the ledger's client. */
  @Override
  public void close() {
    if (policy != null) {
      policy.close();
    }
    if (ledger != null) {
      ledger.close();
    }
  }
}
