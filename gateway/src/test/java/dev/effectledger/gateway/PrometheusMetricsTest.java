package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class PrometheusMetricsTest {

  /** What a Prometheus with exemplar storage sends. */
  private static final String PROMETHEUS_ACCEPT =
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
          + "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

  private static final String TRACE = "0af7651916cd43dd8448eb211c80319c";
  private static final String SPAN = "b7ad6b7169203331";

  @Test
  void shouldGiveATimerTheSampledSpanItWasRecordedInAsItsExemplarInOpenMetrics() {
    PrometheusMeterRegistry registry = PrometheusMetrics.registry();
    Timer timer = Timer.builder("call.wait").publishPercentiles(0.5, 0.99).register(registry);
    try (Scope scope = span(TraceFlags.getSampled()).makeCurrent()) {
      timer.record(Duration.ofMillis(12));
    }

    PrometheusMetrics.Scrape open = PrometheusMetrics.scrape(registry, PROMETHEUS_ACCEPT);
    assertThat(open.contentType()).startsWith("application/openmetrics-text; version=1.0.0");
    assertThat(open.body())
        .contains(
            "call_wait_seconds_count 1 # {span_id=\"" + SPAN + "\",trace_id=\"" + TRACE + "\"}")
        .endsWith("# EOF\n");

    PrometheusMetrics.Scrape text = PrometheusMetrics.scrape(registry, null);
    assertThat(text.contentType()).isEqualTo("text/plain; version=0.0.4; charset=utf-8");
    assertThat(text.body()).contains("call_wait_seconds_count 1").doesNotContain(TRACE);
    assertThat(PrometheusMetrics.scrape(registry, "text/plain").body()).doesNotContain(TRACE);
  }

  @Test
  void shouldGiveNoExemplarForAnUnsampledSpanOrNone() {
    PrometheusMeterRegistry registry = PrometheusMetrics.registry();
    Timer timer = Timer.builder("call.wait").publishPercentiles(0.5, 0.99).register(registry);
    try (Scope scope = span(TraceFlags.getDefault()).makeCurrent()) {
      timer.record(Duration.ofMillis(12));
    }
    timer.record(Duration.ofMillis(3));

    String body = PrometheusMetrics.scrape(registry, PROMETHEUS_ACCEPT).body();
    assertThat(body).contains("call_wait_seconds_count 2").doesNotContain("trace_id");
  }

  private static Span span(TraceFlags flags) {
    return Span.wrap(SpanContext.create(TRACE, SPAN, flags, TraceState.getDefault()));
  }
}
