package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class TracingTest {

  @Test
  void shouldTraceOnlyWhenAnExporterOrAnEndpointIsNamed() {
    assertThat(Tracing.wanted(Map.of())).as("off by default").isFalse();
    assertThat(Tracing.wanted(Map.of("OTEL_SERVICE_NAME", "ledger")))
        .as("a service name alone exports nothing")
        .isFalse();
    assertThat(Tracing.wanted(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")))
        .isTrue();
    assertThat(Tracing.wanted(Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318")))
        .isTrue();
    assertThat(Tracing.wanted(Map.of("OTEL_TRACES_EXPORTER", "otlp"))).isTrue();
    assertThat(Tracing.wanted(Map.of("OTEL_TRACES_EXPORTER", "none"))).isFalse();
    assertThat(Tracing.wanted(Map.of("OTEL_TRACES_EXPORTER", "otlp", "OTEL_SDK_DISABLED", "true")))
        .as("the SDK's own switch wins")
        .isFalse();
    io.opentelemetry.api.GlobalOpenTelemetry.resetForTest();
    assertThat(Tracing.start(Map.of(), "processor")).as("nothing started").isNull();
    assertThat(
            io.opentelemetry.api.GlobalOpenTelemetry.getTracer("t")
                .spanBuilder("s")
                .startSpan()
                .isRecording())
        .isFalse();
    io.opentelemetry.api.GlobalOpenTelemetry.resetForTest();
  }
}
