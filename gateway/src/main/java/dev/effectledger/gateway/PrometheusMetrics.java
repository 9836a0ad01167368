package dev.effectledger.gateway;

import io.micrometer.core.instrument.Clock;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.prometheus.metrics.expositionformats.ExpositionFormatWriter;
import io.prometheus.metrics.expositionformats.ExpositionFormats;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.tracer.common.SpanContext;
import io.prometheus.metrics.tracer.otel.OpenTelemetrySpanContext;

/**
 * The Prometheus registry each Effect Ledger process serves on {@code /metrics} (the gateway, the
 * ledger, the executor), and its scrape in the format the scraper asks for.
 *
 * <p>A timer records the OpenTelemetry span current where it is recorded as its exemplar, when that
 * span is sampled and this process's SDK records it (the Prometheus client's {@code
 * OpenTelemetrySpanContext}, rate-limited by the client's exemplar sampler): {@code
 * gateway_call_wait} the call's {@code execute_tool} span, {@code effectledger_outcome_latency} the
 * ledger's {@code settle} span, {@code effectledger_executor_effect} the executor's {@code attempt}
 * span. With tracing off a caller's sampled trace is still carried on (a non-recording span of its
 * context is current), and gives no exemplar: a process that does not trace writes none.
 *
 * <p>Exemplars go out only in OpenMetrics, which Prometheus asks for first in its {@code Accept}
 * header (every version since 2.5; scrapes keep exemplars with {@code exemplar-storage} on); the
 * classic text format, for a scraper that does not ask, has none.
 */
public final class PrometheusMetrics {

  /** The classic text format, for a scraper that does not ask for OpenMetrics. */
  public static final String TEXT = "text/plain; version=0.0.4; charset=utf-8";

  private static final ExpositionFormatWriter OPEN_METRICS =
      ExpositionFormats.init().getOpenMetricsTextFormatWriter();

  private PrometheusMetrics() {}

  /** A registry whose timers take the current sampled span as their exemplar. */
  public static PrometheusMeterRegistry registry() {
    return new PrometheusMeterRegistry(
        PrometheusConfig.DEFAULT, new PrometheusRegistry(), Clock.SYSTEM, new RecordedSpans());
  }

  /** The current span as an exemplar only when this process's SDK records it. */
  private static final class RecordedSpans implements SpanContext {
    private final OpenTelemetrySpanContext current = new OpenTelemetrySpanContext();

    @Override
    public String getCurrentTraceId() {
      return Span.current().isRecording() ? current.getCurrentTraceId() : null;
    }

    @Override
    public String getCurrentSpanId() {
      return Span.current().isRecording() ? current.getCurrentSpanId() : null;
    }

    @Override
    public boolean isCurrentSpanSampled() {
      return Span.current().isRecording() && current.isCurrentSpanSampled();
    }

    @Override
    public void markCurrentSpanAsExemplar() {
      current.markCurrentSpanAsExemplar();
    }
  }

  /** A scrape's body and the content type to send it with. */
  public record Scrape(String contentType, String body) {}

  /**
   * The scrape for a request with this {@code Accept} header (null: none): OpenMetrics, with
   * exemplars, when it accepts it, else the classic text format.
   */
  public static Scrape scrape(PrometheusMeterRegistry registry, String accept) {
    if (accept != null && OPEN_METRICS.accepts(accept)) {
      String type = OPEN_METRICS.getContentType();
      return new Scrape(type, registry.scrape(type));
    }
    return new Scrape(TEXT, registry.scrape());
  }
}
