package dev.effectledger.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.auth.FairShare;
import dev.effectledger.client.DerivedKey;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.IntentPublisher;
import dev.effectledger.client.KeyDerivationException;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.PendingReply;
import dev.effectledger.client.ReplyRouter;
import dev.effectledger.client.StepContext;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.ReplyJson;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Traces;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.util.URIUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/tools/{tool}/calls}: authenticates the caller, checks the tool, the media type,
 * the size and the headers, derives the key from the body (or takes the caller's {@code
 * Idempotency-Key}), publishes the intent and waits for its answer on the instance's reply topic up
 * to the call's wait, when it answers 202 with where to ask again.
 */
final class CallRoute {

  private static final Logger log = LoggerFactory.getLogger(CallRoute.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9_.-]{1,128}");

  private final GatewayConfig config;
  private final Supplier<ToolPolicies> policies;
  private final Readiness readiness;
  private final IntentPublisher intents;
  private final ReplyRouter replies;
  private final ScheduledExecutorService timers;
  private final Clock clock;

  CallRoute(
      GatewayConfig config,
      Supplier<ToolPolicies> policies,
      Readiness readiness,
      IntentPublisher intents,
      ReplyRouter replies,
      ScheduledExecutorService timers,
      Clock clock) {
    this.config = config;
    this.policies = policies;
    this.readiness = readiness;
    this.intents = intents;
    this.replies = replies;
    this.timers = timers;
    this.clock = clock;
  }

  void post(Exchange ex, String rawTool) {
    String tool;
    try {
      tool = URIUtil.decodePath(rawTool);
    } catch (IllegalArgumentException e) {
      tool = rawTool; // not a valid encoding: no tool has that name
    }
    Optional<Credentials.Caller> caller = ex.authenticate(config.credentials());
    if (caller.isEmpty()) {
      return;
    }
    if (!caller.get().mayWrite()) {
      String scope = config.credentials().tokens().settings().writeScope();
      ex.insufficientScope(scope, "calling a tool needs " + scope + "; nothing was published");
      return;
    }
    Optional<ToolPolicy> policy =
        TOOL.matcher(tool).matches() ? policies.get().forTool(tool) : Optional.empty();
    if (policy.isEmpty()) {
      ex.problem(
          Problem.of(404, "unknown-tool", "Unknown tool", "no tool named '" + clip(tool) + "'")
              .code(ErrorCode.UNKNOWN_TOOL.name(), false, ErrorCode.UNKNOWN_TOOL.correctiveAction())
              .field("{tool}"));
      return;
    }
    ex.tool = tool;
    if (!caller.get().mayCall(tool)) {
      ex.problem(
          Problem.of(
              403,
              "forbidden",
              "Forbidden",
              "credential '" + caller.get().name() + "' may not call " + tool));
      return;
    }
    String type = ex.header(HttpHeader.CONTENT_TYPE);
    if (type == null || !isJson(type)) {
      ex.problem(
          Problem.of(
                  415,
                  "unsupported-media-type",
                  "Unsupported media type",
                  "send the body as application/json (UTF-8), not "
                      + (type == null ? "nothing" : clip(type)))
              .field("Content-Type"),
          Map.of("Accept-Post", "application/json"));
      return;
    }
    if (ex.request.getLength() > config.maxBodyBytes()) {
      tooLarge(ex);
      return;
    }
    Optional<String> suppliedKey;
    Duration wait;
    try {
      suppliedKey = HeaderSyntax.idempotencyKey(ex.headers("Idempotency-Key"));
      wait = HeaderSyntax.wait(ex.headers("Prefer"), config.defaultWait(), config.maxWait());
    } catch (HeaderSyntax.Invalid e) {
      ex.problem(
          Problem.of(400, "invalid-header", "Invalid header", e.getMessage())
              .field("Idempotency-Key"));
      return;
    }
    BoundedBody.read(
        ex.request,
        config.maxBodyBytes(),
        new BoundedBody.Outcome() {
          @Override
          public void body(byte[] bytes) {
            ex.bodyRead = true;
            call(ex, caller.get(), policy.get(), suppliedKey, wait, bytes);
          }

          @Override
          public void tooLarge() {
            CallRoute.this.tooLarge(ex);
          }

          @Override
          public void unreadable(Throwable failure) {
            ex.problem(
                Problem.of(400, "unreadable-body", "Bad request", "the body could not be read"));
          }
        });
  }

  private static void overLimit(Exchange ex, FairShare.OverLimit over) {
    ex.problem(
        Problem.of(
            429,
            "too-many-requests",
            "Too many requests",
            over.getMessage() + "; nothing was published: call again after Retry-After"),
        Map.of("Retry-After", Long.toString(over.retryAfter().toSeconds())));
  }

  private void tooLarge(Exchange ex) {
    ex.problem(
        Problem.of(
            413,
            "body-too-large",
            "Content too large",
            "the body is larger than "
                + config.maxBodyBytes()
                + " bytes; pass a reference to large data instead"),
        Map.of("Connection", "close"));
  }

  private void call(
      Exchange ex,
      Credentials.Caller caller,
      ToolPolicy policy,
      Optional<String> suppliedKey,
      Duration wait,
      byte[] bytes) {
    // the tenant's share first, before the body is parsed and its key derived: refusing a flood
    // costs as little as it can (the body is read, so that the connection goes on)
    FairShare.Ticket place;
    try {
      place = config.fairShare().admitTenant(caller.tenant());
    } catch (FairShare.OverLimit over) {
      overLimit(ex, over);
      return;
    }
    ex.onEnd = place::close;
    CallBody body;
    DerivedKey derived;
    try {
      body = CallBody.parse(bytes);
      derived =
          IdempotencyKeys.derive(
              new StepContext(caller.tenant(), body.run(), body.step(), body.scope()),
              policy.name(),
              body.argumentsJson(),
              new KeyRules(policy.key().ignore(), policy.key().require()));
    } catch (CallBody.Invalid e) {
      ex.problem(
          Problem.of(400, "invalid-body", "Invalid request body", e.getMessage()).field(e.field));
      return;
    } catch (KeyDerivationException e) {
      ex.problem(
          Problem.of(400, "invalid-arguments", "Invalid arguments", e.getMessage())
              .field("/arguments")
              .code(e.code(), false, HttpMapping.correctiveAction(e.code())));
      return;
    }
    String why = readiness.why();
    if (why != null) {
      HttpMapping.unavailable(ex, why);
      return;
    }
    try {
      config.fairShare().admitRun(caller.tenant(), body.run());
    } catch (FairShare.OverLimit over) {
      place.giveBack(); // the run's own limit: its tenant's other runs keep the share
      overLimit(ex, over);
      return;
    }
    String key = suppliedKey.orElse(derived.key());
    // the call's span (GenAI execute_tool), a child of the caller's traceparent; it ends with the
    // exchange, and the ledger's decision, the executor's attempt and the downstream request are
    // its children
    Context parent =
        Traces.extract(ex.shortHeader(Traces.TRACEPARENT), ex.shortHeader(Traces.TRACESTATE));
    Span span =
        Traces.toolCall(parent, policy.name(), body.step(), caller.tenant(), body.run(), key);
    ex.traced(span);
    String requestId = UUID.randomUUID().toString();
    PendingCall pending = new PendingCall(ex, key, policy, requestId, wait);
    ToolIntent intent =
        ToolIntent.newBuilder()
            .setIdempotencyKey(key)
            .setTenant(caller.tenant())
            .setRunId(body.run())
            .setStepId(body.step())
            .setTool(policy.name())
            .setArguments(body.argumentsJson())
            .setArgumentsHash(derived.argumentsHash())
            .setBusinessScope(body.scope())
            .setRequestedAt(clock.instant())
            .setReplyTopic(config.replyTopic())
            .setBypassApproval(body.bypassApproval())
            .setTraceId(
                Traces.carried(span, parent) ? Traces.traceparent(Context.root().with(span)) : null)
            .build();
    CompletableFuture<Long> published;
    try (Scope scope = Traces.enter(span, parent)) {
      published = intents.publish(intent, requestId);
    }
    published.whenComplete(
        (offset, error) -> {
          if (error != null) {
            pending.notPublished(error);
          } else {
            pending.published(offset);
          }
        });
  }

  static boolean isJson(String contentType) {
    String[] parts = contentType.split(";");
    if (!parts[0].trim().equalsIgnoreCase("application/json")) {
      return false;
    }
    for (int i = 1; i < parts.length; i++) {
      String[] kv = parts[i].trim().split("=", 2);
      if (kv[0].trim().equalsIgnoreCase("charset")
          && (kv.length < 2 || !kv[1].trim().replace("\"", "").equalsIgnoreCase("utf-8"))) {
        return false;
      }
    }
    return true;
  }

  private static String clip(String s) {
    return s.length() > 64 ? s.substring(0, 64) + "..." : s;
  }

  /** A published call waiting for its answer on the reply topic, up to its wait. */
  private final class PendingCall implements ReplyRouter.Listener {
    final Exchange ex;
    final String key;
    final ToolPolicy policy;
    final String requestId;
    final Runnable stopListening;
    final long waitUntil;
    volatile ScheduledFuture<?> timeout;
    volatile ToolResult latest;

    /** Which final reply answers this call: not a release made before its intent was read. */
    final PendingReply answer = new PendingReply();

    PendingCall(Exchange ex, String key, ToolPolicy policy, String requestId, Duration wait) {
      this.ex = ex;
      this.key = key;
      this.policy = policy;
      this.requestId = requestId;
      this.waitUntil = System.nanoTime() + wait.toNanos();
      answer
          .result()
          .thenAccept(
              reply -> {
                stop();
                HttpMapping.answer(ex, reply, answer.intentOffset());
              });
      this.stopListening = replies.listen(key, this);
      ex.onAbandon = this::stop;
      ex.waits();
    }

    /**
     * The broker took the intent: from now on the wait bound may answer 202. Before, it may not: a
     * 202 says the call runs, and an intent the broker then refuses never runs (found by
     * RegistryAuthIT: with wait=0 the bound answered 202 before the serializer failed).
     */
    void published(long offset) {
      // On the producer's I/O thread: a release kept aside is answered from a timer thread.
      ToolResult kept = answer.publish(offset);
      if (kept != null) {
        timers.execute(() -> answer.result().complete(kept));
      }
      if (ex.answered.get()) {
        return;
      }
      long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(waitUntil - System.nanoTime()));
      timeout = timers.schedule(this::waited, left, TimeUnit.MILLISECONDS);
      if (ex.answered.get()) {
        timeout.cancel(false);
      }
    }

    @Override
    public void onReply(ToolResult reply, String forRequest, Long through) {
      boolean mine = forRequest == null || forRequest.equals(requestId);
      boolean settled =
          reply.getStatus() == ResultStatus.SUCCEEDED || reply.getStatus() == ResultStatus.FAILED;
      if (!mine && !settled) {
        return; // another call's refusal, notice or replay
      }
      if (reply.getStatus() == ResultStatus.IN_FLIGHT) {
        latest = reply; // attached (coalesce): wait on for the result
        return;
      }
      // a settled answer naming another call's request id: this call joined the action, a replay
      answer.offer(PendingReply.asSeenBy(reply, forRequest, requestId), through);
    }

    void waited() {
      stopListening.run();
      ToolResult last = latest;
      ObjectNode body =
          last != null
              ? ReplyJson.of(last)
              : JSON.createObjectNode()
                  .put("key", key)
                  .put("tool", policy.name())
                  .put("status", ResultStatus.IN_FLIGHT.name());
      ex.json(202, body, HttpMapping.stillRunning(key, answer.intentOffset()));
    }

    /** The intent was not published: the call is answered 503. */
    void notPublished(Throwable error) {
      stop();
      log.warn("Could not publish an intent for key {}: {}", key, error.getMessage());
      HttpMapping.unavailable(
          ex, "the intent could not be published (" + error.getClass().getSimpleName() + ")");
    }

    void stop() {
      stopListening.run();
      ScheduledFuture<?> bound = timeout;
      if (bound != null) {
        bound.cancel(false);
      }
    }
  }
}
