package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class PrometheusMetricsTest {

  /** What Prometheus sends. */
  private static final String PROMETHEUS_ACCEPT =
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
          + "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

  @Test
  void shouldGiveATimerTheSpanItWasRecordedInAsItsExemplarInOpenMetricsOnly() {
    PrometheusMeterRegistry registry = PrometheusMetrics.registry();
    Timer timer = Timer.builder("call.wait").publishPercentiles(0.5, 0.99).register(registry);
    Span span = spanOf(Sampler.alwaysOn());
    try (Scope scope = span.makeCurrent()) {
      timer.record(Duration.ofMillis(12));
    } finally {
      span.end();
    }

    PrometheusMetrics.Scrape open = PrometheusMetrics.scrape(registry, PROMETHEUS_ACCEPT);
    assertThat(open.contentType()).startsWith("application/openmetrics-text; version=1.0.0");
    assertThat(countLine(open.body()))
        .startsWith(
            "call_wait_seconds_count 1 # {span_id=\""
                + span.getSpanContext().getSpanId()
                + "\",trace_id=\""
                + span.getSpanContext().getTraceId()
                + "\"} 0.012 "); // the exemplar's value, then its time
    assertThat(open.body()).endsWith("# EOF\n");

    PrometheusMetrics.Scrape text = PrometheusMetrics.scrape(registry, null);
    assertThat(text.contentType()).isEqualTo("text/plain; version=0.0.4; charset=utf-8");
    assertThat(countLine(text.body())).isEqualTo("call_wait_seconds_count 1");
    assertThat(countLine(PrometheusMetrics.scrape(registry, "text/plain").body()))
        .isEqualTo("call_wait_seconds_count 1");
  }

  @Test
  void shouldGiveNoExemplarWithoutASpanThisProcessRecords() {
    PrometheusMeterRegistry registry = PrometheusMetrics.registry();
    Timer timer = Timer.builder("call.wait").publishPercentiles(0.5, 0.99).register(registry);
    // tracing off: a caller's sampled trace carried on as a span that does not record
    Span carried =
        Span.wrap(
            SpanContext.create(
                "0af7651916cd43dd8448eb211c80319c",
                "b7ad6b7169203331",
                TraceFlags.getSampled(),
                TraceState.getDefault()));
    Span unsampled = spanOf(Sampler.alwaysOff());
    for (Span span : new Span[] {carried, unsampled, Span.getInvalid()}) {
      try (Scope scope = span.makeCurrent()) {
        timer.record(Duration.ofMillis(12));
      }
      sleepPastTheSamplersInterval();
    }

    assertThat(countLine(PrometheusMetrics.scrape(registry, PROMETHEUS_ACCEPT).body()))
        .isEqualTo("call_wait_seconds_count 3");
  }

  private static Span spanOf(Sampler sampler) {
    // with no span processor the SDK records nothing: one that exports nowhere
    return SdkTracerProvider.builder()
        .setSampler(sampler)
        .addSpanProcessor(SimpleSpanProcessor.create(SpanExporter.composite()))
        .build()
        .get("test")
        .spanBuilder("execute_tool charge_card")
        .startSpan();
  }

  private static String countLine(String scraped) {
    return Arrays.stream(scraped.split("\n"))
        .filter(l -> l.startsWith("call_wait_seconds_count"))
        .findFirst()
        .orElseThrow();
  }

  /** The Prometheus client samples at most one observation each 90 ms. */
  private static void sleepPastTheSamplersInterval() {
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
