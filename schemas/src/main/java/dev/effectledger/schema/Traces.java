package dev.effectledger.schema;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * One trace per tool call, from the agent to the downstream: W3C trace context ({@code
 * traceparent}, {@code tracestate}) carried on every record of a call (intent, dispatch, outcome,
 * reply) as headers of those names, and the spans Effect Ledger adds to the agent's trace. Spans go
 * to the global OpenTelemetry: a no-op until a process configures the SDK ({@code OTEL_*}
 * variables, see docs/operations.md), in which case the trace context is still carried on, so that
 * a traced agent's downstream requests stay in its trace.
 *
 * <p>Attribute names follow OpenTelemetry's GenAI conventions where they apply ({@code
 * execute_tool} spans: {@code gen_ai.operation.name}, {@code gen_ai.tool.name}, {@code
 * gen_ai.tool.call.id}) and are {@code effectledger.*} where none exists: the key, the tenant, the
 * run, the ledger's decision.
 *
 * <p>The W3C format is OpenTelemetry's own propagator's; this class only adapts Kafka's headers to
 * it.
 */
public final class Traces {

  /** The instrumentation scope of every Effect Ledger span. */
  public static final String SCOPE = "dev.effectledger";

  public static final String TRACEPARENT = "traceparent";
  public static final String TRACESTATE = "tracestate";

  public static final AttributeKey<String> OPERATION =
      AttributeKey.stringKey("gen_ai.operation.name");
  public static final AttributeKey<String> TOOL = AttributeKey.stringKey("gen_ai.tool.name");
  public static final AttributeKey<String> TOOL_CALL_ID =
      AttributeKey.stringKey("gen_ai.tool.call.id");
  public static final AttributeKey<String> TOOL_TYPE = AttributeKey.stringKey("gen_ai.tool.type");
  public static final AttributeKey<String> KEY = AttributeKey.stringKey("effectledger.key");
  public static final AttributeKey<String> TENANT = AttributeKey.stringKey("effectledger.tenant");
  public static final AttributeKey<String> RUN = AttributeKey.stringKey("effectledger.run");

  /**
   * What the ledger did with an intent: {@code dispatched} (its effect runs), {@code replayed}
   * (answered from the key's settled result, no second effect), {@code conflict} (the key's
   * arguments differ), {@code held} (the key is held as UNKNOWN), {@code released} (an earlier life
   * was released and this intent starts the next), {@code in_flight} (the first is still running),
   * {@code refused} (bad input or policy), {@code passed_through} (a read tool).
   */
  public static final AttributeKey<String> DECISION =
      AttributeKey.stringKey("effectledger.decision");

  public static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("effectledger.attempt");
  public static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("effectledger.outcome");

  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  private static final TextMapGetter<Headers> FROM_HEADERS =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Headers carrier) {
          List<String> keys = new ArrayList<>();
          for (Header header : carrier) {
            keys.add(header.key());
          }
          return keys;
        }

        @Override
        public String get(Headers carrier, String key) {
          if (carrier == null) {
            return null;
          }
          Header header = carrier.lastHeader(key);
          return header == null || header.value() == null
              ? null
              : new String(header.value(), StandardCharsets.UTF_8);
        }
      };

  private static final TextMapSetter<Headers> TO_HEADERS =
      (carrier, key, value) -> {
        carrier.remove(key);
        carrier.add(key, value.getBytes(StandardCharsets.UTF_8));
      };

  private static final TextMapGetter<Map<String, String>> FROM_MAP =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private Traces() {}

  private record CachedTracer(OpenTelemetry of, Tracer tracer) {}

  private static volatile CachedTracer cached;

  /** Effect Ledger's tracer, from the global OpenTelemetry as it is now (kept while it stays). */
  public static Tracer tracer() {
    OpenTelemetry global = GlobalOpenTelemetry.get();
    CachedTracer known = cached;
    if (known == null || known.of() != global) {
      known = new CachedTracer(global, global.getTracer(SCOPE));
      cached = known;
    }
    return known.tracer();
  }

  /**
   * A gateway's span of one tool call (GenAI {@code execute_tool}, kind SERVER) under {@code
   * parent}, the caller's context: its attributes set when it records.
   *
   * @param key the call's idempotency key; null when not known yet
   */
  public static Span toolCall(
      Context parent, String tool, String step, String tenant, String run, String key) {
    Span span =
        tracer()
            .spanBuilder("execute_tool")
            .setParent(parent)
            .setSpanKind(SpanKind.SERVER)
            .startSpan();
    if (span.isRecording()) { // the name and attributes built only for a span that records
      span.updateName("execute_tool " + tool)
          .setAttribute(OPERATION, "execute_tool")
          .setAttribute(TOOL, tool)
          .setAttribute(TOOL_TYPE, "function")
          .setAttribute(TOOL_CALL_ID, step)
          .setAttribute(TENANT, tenant)
          .setAttribute(RUN, run);
      if (key != null) {
        span.setAttribute(KEY, key);
      }
    }
    return span;
  }

  /**
   * A span that continues the trace {@code parent} names (the executor's attempt, the downstream
   * request, the ledger's settling); the invalid span, which records and carries nothing, outside a
   * trace: those parts never start one of their own.
   */
  public static Span continued(String name, Context parent, SpanKind kind) {
    return inTrace(parent)
        ? tracer().spanBuilder(name).setParent(parent).setSpanKind(kind).startSpan()
        : Span.getInvalid();
  }

  /**
   * {@link #continued} for one attempt at a key's effect (the executor's attempt, the ledger
   * settling it): named "{@code operation tool}", with the tool, key, tenant and attempt, the name
   * and attributes built only for a span that records (nothing per record with tracing off).
   */
  public static Span continuedAttempt(
      String operation,
      Context parent,
      SpanKind kind,
      String tool,
      String key,
      String tenant,
      int attempt) {
    Span span = continued(operation, parent, kind);
    if (span.isRecording()) {
      span.updateName(operation + " " + tool)
          .setAttribute(TOOL, tool)
          .setAttribute(KEY, key)
          .setAttribute(TENANT, tenant)
          .setAttribute(ATTEMPT, (long) attempt);
    }
    return span;
  }

  /**
   * Whether {@code span} (started under {@code parent}) is carried on: made current, its context
   * put on the records it causes. Always under a caller's context, sampled or not (the W3C trace
   * goes on); a span that starts a trace only when it is sampled, so that an unsampled call costs
   * what it costs with tracing off (no headers, no stored context).
   */
  public static boolean carried(Span span, Context parent) {
    return Span.fromContext(parent).getSpanContext().isValid() || span.getSpanContext().isSampled();
  }

  /**
   * Whether {@code parent} names a span: a part that only continues a call's trace (the executor's
   * attempt, the downstream request, the ledger's settling) starts no trace of its own.
   */
  public static boolean inTrace(Context parent) {
    return Span.fromContext(parent).getSpanContext().isValid();
  }

  /**
   * Makes {@code span} current when it is {@link #carried}; a scope that does nothing otherwise.
   */
  public static Scope enter(Span span, Context parent) {
    return carried(span, parent) ? span.makeCurrent() : Scope.noop();
  }

  /** The trace context a record's headers carry, as a parent; the root context when none. */
  public static Context extract(Headers headers) {
    if (headers == null) {
      return Context.root();
    }
    return W3C.extract(Context.root(), headers, FROM_HEADERS);
  }

  /**
   * The trace context a {@code traceparent} (and {@code tracestate}, or null) names, as a parent;
   * the root context when it is absent or malformed.
   */
  public static Context extract(String traceparent, String tracestate) {
    if (traceparent == null || traceparent.isBlank()) {
      return Context.root();
    }
    Map<String, String> carrier = new HashMap<>();
    carrier.put(TRACEPARENT, traceparent.trim());
    if (tracestate != null && !tracestate.isBlank()) {
      carrier.put(TRACESTATE, tracestate.trim());
    }
    return W3C.extract(Context.root(), carrier, FROM_MAP);
  }

  /** Writes {@code context}'s trace context onto {@code headers}, replacing what they had. */
  public static void inject(Context context, Headers headers) {
    if (Span.fromContext(context).getSpanContext().isValid()) {
      W3C.inject(context, headers, TO_HEADERS);
    }
  }

  /** The current context when it has a span, else the one {@code traceparent} names. */
  public static Context currentOr(String traceparent) {
    return Span.current().getSpanContext().isValid()
        ? Context.current()
        : extract(traceparent, null);
  }

  /** The current span's {@code traceparent}, else {@code fallback}. */
  public static String currentTraceparentOr(String fallback) {
    String current = traceparent(Context.current());
    return current != null ? current : fallback;
  }

  /** The {@code traceparent} of {@code context}'s span; null when it has no valid one. */
  public static String traceparent(Context context) {
    SpanContext span = Span.fromContext(context).getSpanContext();
    if (!span.isValid()) {
      return null;
    }
    // version 00 of the W3C format, as the propagator writes it
    return "00-" + span.getTraceId() + "-" + span.getSpanId() + "-" + span.getTraceFlags().asHex();
  }

  /** The span context a {@code traceparent} names; invalid when absent or malformed. */
  public static SpanContext spanContext(String traceparent) {
    return Span.fromContext(extract(traceparent, null)).getSpanContext();
  }
}
