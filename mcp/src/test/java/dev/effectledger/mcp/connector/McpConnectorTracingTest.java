package dev.effectledger.mcp.connector;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.schema.Traces;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The mcp connector's {@code tools/call} span with the OpenTelemetry SDK as the process's global
 * one, against a real MCP server (the SDK's, over Streamable HTTP): a CLIENT child of the attempt,
 * whose {@code traceparent} the server receives in {@code _meta}.
 */
@Timeout(60)
class McpConnectorTracingTest {

  private static final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private static OpenTelemetrySdk sdk;
  private static CountingMcpServer upstream;

  @BeforeAll
  static void start() {
    GlobalOpenTelemetry.resetForTest(); // another class of this JVM may have read the no-op one
    sdk =
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(spans))
                    .build())
            .buildAndRegisterGlobal();
    upstream = CountingMcpServer.startHttp(0);
  }

  @AfterAll
  static void stop() {
    if (upstream != null) {
      upstream.close();
    }
    sdk.close();
    GlobalOpenTelemetry.resetForTest();
  }

  @Test
  void shouldCallTheUpstreamInASpanOfTheAttemptAndSendItsTraceparentInMeta() throws Exception {
    String trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    String attempt = "00f067aa0ba902b7";
    McpConnector connector =
        new McpConnector(
            "create_charge",
            McpConnectorSettings.from(
                "create_charge",
                new YAMLMapper().readTree("url: " + upstream.url() + "\neffectIdPointer: /id\n")));
    try {
      EffectOutcome outcome =
          connector.execute(
              new EffectRequest(
                  "k-span",
                  "k-span",
                  "acme",
                  "create_charge",
                  "{\"amount\":5,\"to\":\"cus_5\"}",
                  1,
                  "00-" + trace + "-" + attempt + "-01"));
      assertThat(outcome).isInstanceOf(EffectOutcome.Succeeded.class);
    } finally {
      connector.close();
    }

    SpanData call =
        spans.getFinishedSpanItems().stream()
            .filter(s -> s.getName().equals("tools/call create_charge"))
            .findFirst()
            .orElseThrow();
    assertThat(call.getTraceId()).isEqualTo(trace);
    assertThat(call.getParentSpanId()).as("a child of the attempt").isEqualTo(attempt);
    assertThat(call.getKind()).isEqualTo(SpanKind.CLIENT);
    assertThat(call.getAttributes().get(Traces.TOOL)).isEqualTo("create_charge");
    assertThat(call.getAttributes().get(Traces.KEY)).isEqualTo("k-span");
    assertThat(upstream.traceparent("k-span"))
        .as("the upstream got the call span's traceparent")
        .isEqualTo("00-" + trace + "-" + call.getSpanId() + "-01");
  }
}
