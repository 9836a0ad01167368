package dev.effectledger.connectors;

import dev.effectledger.schema.Traces;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;

/**
 * A connector's request to its downstream as a CLIENT span, a child of the attempt that {@link
 * EffectRequest#traceId()} names (none outside a trace), with the effect's key; its {@link
 * #traceparent()} goes with the request, so that the downstream's own spans join the trace. Ended
 * when closed, marked as an error when the call's outcome is not a success.
 */
public final class DownstreamSpan implements AutoCloseable {

  private final Span span;

  private DownstreamSpan(Span span) {
    this.span = span;
  }

  /**
   * Starts the span for {@code request}, named {@code operation}, or "{@code operation target}"
   * when {@code target} is not null (the name built only for a span that records).
   */
  public static DownstreamSpan start(String operation, String target, EffectRequest request) {
    Span span =
        Traces.continued(operation, Traces.extract(request.traceId(), null), SpanKind.CLIENT);
    if (span.isRecording()) {
      if (target != null) {
        span.updateName(operation + " " + target);
      }
      span.setAttribute(Traces.KEY, request.idempotencyKey());
    }
    return new DownstreamSpan(span);
  }

  /** The span, for attributes (set them only while it {@link Span#isRecording() records}). */
  public Span span() {
    return span;
  }

  /** The {@code traceparent} for the request; null outside a trace. */
  public String traceparent() {
    return Traces.traceparent(Context.root().with(span));
  }

  /** {@code outcome}, with the span marked as an error when it is not a success. */
  public EffectOutcome ended(EffectOutcome outcome) {
    if (!(outcome instanceof EffectOutcome.Succeeded) && span.isRecording()) {
      span.setStatus(StatusCode.ERROR, outcome.getClass().getSimpleName());
    }
    return outcome;
  }

  @Override
  public void close() {
    span.end();
  }
}
