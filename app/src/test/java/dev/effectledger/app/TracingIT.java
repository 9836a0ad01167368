package dev.effectledger.app;

import static dev.effectledger.app.GatewayPipeline.call;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Traces;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One trace per tool call, through the real parts (the HTTP gateway, the ledger on Kafka, an
 * executor and the payment API it calls), with the SDK's in-memory exporter as the process's global
 * OpenTelemetry: the gateway's {@code execute_tool} span under the caller's {@code traceparent},
 * the ledger's decision, the executor's attempt and the downstream request as its children, the
 * downstream receiving the request span's {@code traceparent}; a replay, a conflict and a held key
 * each a trace of its own, the replay and the held retry linked to the decision that dispatched the
 * key's effect. The SDK is the command's ({@link Tracing}, from {@code OTEL_*} variables),
 * exporting over OTLP to a receiver the test starts ({@link OtlpReceiver}), which reads the spans
 * back. The latency timers of the gateway, the ledger and the executor, registered as the commands
 * register them, carry those spans as OpenMetrics exemplars.
 */
@Tag("integration")
@Timeout(180)
class TracingIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private static final HttpClient http = HttpClient.newHttpClient();
  private static OpenTelemetrySdk sdk;
  private static OtlpReceiver receiver;
  private static GatewayPipeline pipeline;
  private static Gateway gateway;

  @BeforeAll
  static void start() throws Exception {
    // the global OpenTelemetry of this test JVM: another class may have read the no-op one
    GlobalOpenTelemetry.resetForTest();
    receiver = OtlpReceiver.start();
    // as the command starts it from OTEL_* variables, exporting over OTLP to the test's receiver;
    // the in-memory exporter beside it is what the tests read spans from
    sdk =
        Tracing.start(
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                receiver.url(),
                // not the default 5 s: the export test reads the receiver soon after its call
                "OTEL_BSP_SCHEDULE_DELAY",
                "200"),
            "tracing-it",
            builder ->
                builder.addTracerProviderCustomizer(
                    (provider, config) ->
                        provider.addSpanProcessor(SimpleSpanProcessor.create(spans))));
    pipeline = GatewayPipeline.start(kafka.bootstrapServers(), "tracing-it");
    gateway = Gateway.start(pipeline.gatewayConfig("gw-traced", pipeline.ledgerUrl()));
    GatewayReadiness.awaitReady("gateway gw-traced", gateway, Duration.ofSeconds(90));
  }

  @AfterAll
  static void stop() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
    if (pipeline != null) {
      pipeline.close();
    }
    if (sdk != null) {
      sdk.close();
    }
    if (receiver != null) {
      receiver.close();
    }
    GlobalOpenTelemetry.resetForTest();
  }

  @Test
  void shouldExportTheCallsSpansOverOtlpAsTheCommandConfiguresIt() throws Exception {
    String trace = "99999999999999999999999999999999";
    chargeSettled(trace, "run-otlp");

    await("the call's spans at the OTLP receiver")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(receiver.spanNames(trace))
                    .contains(
                        "execute_tool charge_card",
                        "effectledger decide charge_card",
                        "effectledger attempt charge_card",
                        "POST",
                        "effectledger settle charge_card"));
    assertThat(receiver.serviceNames()).contains("effectledger-tracing-it");
  }

  @Test
  void shouldTraceACallFromTheGatewayToTheDownstreamAndLinkItsReplay() throws Exception {
    String trace = "0af7651916cd43dd8448eb211c80319c";
    String caller = "b7ad6b7169203331";
    String body = call("run-traced", "charge", "{\"amount\":42,\"to\":\"acct-9\"}");
    HttpResponse<String> first = post("charge_card", body, traceparent(trace, caller));
    assertThat(first.statusCode()).as(first.body()).isEqualTo(200);

    SpanData call = awaitSpan(trace, "execute_tool charge_card");
    SpanData decide = awaitSpan(trace, "effectledger decide charge_card");
    SpanData attempt = awaitSpan(trace, "effectledger attempt charge_card");
    SpanData request = awaitSpan(trace, "POST");
    SpanData settle = awaitSpan(trace, "effectledger settle charge_card");
    assertThat(call.getParentSpanId())
        .as("the agent's span is the call's parent")
        .isEqualTo(caller);
    assertThat(call.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(call.getAttributes().get(Traces.OPERATION)).isEqualTo("execute_tool");
    assertThat(call.getAttributes().get(Traces.TOOL)).isEqualTo("charge_card");
    assertThat(call.getAttributes().get(Traces.TOOL_CALL_ID)).isEqualTo("charge");
    assertThat(decide.getParentSpanId()).isEqualTo(call.getSpanId());
    assertThat(decide.getAttributes().get(Traces.DECISION)).isEqualTo("dispatched");
    String key = decide.getAttributes().get(Traces.KEY);
    assertThat(call.getAttributes().get(Traces.KEY)).isEqualTo(key);
    assertThat(attempt.getParentSpanId()).isEqualTo(decide.getSpanId());
    assertThat(request.getParentSpanId()).isEqualTo(attempt.getSpanId());
    assertThat(request.getKind()).isEqualTo(SpanKind.CLIENT);
    assertThat(settle.getParentSpanId()).isEqualTo(attempt.getSpanId());
    assertThat(settle.getAttributes().get(Traces.DECISION)).isEqualTo("completed");
    assertThat(pipeline.payments.traceHeader(key, "traceparent"))
        .as("the payment API got the request span's traceparent")
        .isEqualTo("00-" + trace + "-" + request.getSpanId() + "-01");
    assertThat(pipeline.payments.traceHeader(key, "X-Trace-Id"))
        .as("and, as before traceparent, the attempt's trace in X-Trace-Id")
        .isEqualTo("00-" + trace + "-" + attempt.getSpanId() + "-01");

    // the agent retries in a trace of its own: a replay, linked to the decision of the effect
    String retryTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    HttpResponse<String> again = post("charge_card", body, traceparent(retryTrace, caller));
    assertThat(again.statusCode()).isEqualTo(200);
    SpanData replay = awaitSpan(retryTrace, "effectledger decide charge_card");
    assertThat(replay.getAttributes().get(Traces.DECISION)).isEqualTo("replayed");
    assertThat(replay.getLinks())
        .extracting(LinkData::getSpanContext)
        .anySatisfy(
            linked -> {
              assertThat(linked.getTraceId()).isEqualTo(trace);
              assertThat(linked.getSpanId()).isEqualTo(decide.getSpanId());
            });
    assertThat(spansOf(retryTrace))
        .as("no attempt and no downstream request in the replay's trace")
        .extracting(SpanData::getName)
        .doesNotContain("effectledger attempt charge_card", "POST");
    assertThat(pipeline.payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldPublishAJavaClientsCallInTheAgentsCurrentSpan() throws Exception {
    Span agent = GlobalOpenTelemetry.getTracer("agent").spanBuilder("agent tool call").startSpan();
    String trace = agent.getSpanContext().getTraceId();
    try (ToolCallClient client =
            ToolCallClient.builder()
                .kafka(pipeline.kafka())
                .schemaRegistryUrl(pipeline.registry())
                .timeout(Duration.ofSeconds(30))
                .build();
        Scope scope = agent.makeCurrent()) {
      ToolResult result =
          client.callAndWait(
              ToolCall.of(
                  StepContext.of("acme", "run-client", "charge"),
                  "charge_card",
                  "{\"amount\":3,\"to\":\"acct-3\"}"));
      assertThat(result.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    } finally {
      agent.end();
    }
    SpanData decide = awaitSpan(trace, "effectledger decide charge_card");
    assertThat(decide.getParentSpanId())
        .as("the ledger's decision under the agent's span")
        .isEqualTo(agent.getSpanContext().getSpanId());
    awaitSpan(trace, "POST");
  }

  @Test
  void shouldMarkAKeyReusedWithOtherArgumentsAsAConflict() throws Exception {
    String trace = "11111111111111111111111111111111";
    String caller = "2222222222222222";
    String key = "traced-conflict";
    assertThat(
            post(
                    "send_email",
                    call("run-conflict", "mail", "{\"to\":\"a@example.com\"}"),
                    traceparent(trace, caller),
                    "Idempotency-Key",
                    key)
                .statusCode())
        .isEqualTo(200);
    String otherTrace = "33333333333333333333333333333333";
    HttpResponse<String> reused =
        post(
            "send_email",
            call("run-conflict", "mail", "{\"to\":\"b@example.com\"}"),
            traceparent(otherTrace, caller),
            "Idempotency-Key",
            key);
    assertThat(reused.statusCode()).isEqualTo(422);
    SpanData conflict = awaitSpan(otherTrace, "effectledger decide send_email");
    assertThat(conflict.getAttributes().get(Traces.DECISION)).isEqualTo("conflict");
    assertThat(spansOf(otherTrace)).extracting(SpanData::getName).doesNotContain("POST");
  }

  @Test
  void shouldTraceAHeldKeyAndItsRetryLinkedToTheAttemptThatMayHaveActed() throws Exception {
    String key = "traced-held";
    pipeline.risky.inject(key, Fault.ERROR_AFTER_EFFECT);
    String trace = "55555555555555555555555555555555";
    String caller = "6666666666666666";
    String body = call("run-held", "move", "{\"amount\":11}");
    HttpResponse<String> held =
        post("transfer", body, traceparent(trace, caller), "Idempotency-Key", key);
    assertThat(held.statusCode()).as(held.body()).isEqualTo(202);
    SpanData decide = awaitSpan(trace, "effectledger decide transfer");
    SpanData settle = awaitSpan(trace, "effectledger settle transfer");
    assertThat(decide.getAttributes().get(Traces.DECISION)).isEqualTo("dispatched");
    assertThat(settle.getAttributes().get(Traces.DECISION)).isEqualTo("held");

    String retryTrace = "77777777777777777777777777777777";
    HttpResponse<String> retry =
        post("transfer", body, traceparent(retryTrace, caller), "Idempotency-Key", key);
    assertThat(retry.statusCode()).isEqualTo(202);
    SpanData retried = awaitSpan(retryTrace, "effectledger decide transfer");
    assertThat(retried.getAttributes().get(Traces.DECISION)).isEqualTo("held");
    assertThat(retried.getLinks())
        .extracting(l -> l.getSpanContext().getSpanId())
        .contains(decide.getSpanId());
    assertThat(pipeline.risky.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldGiveTheLatencyMetricsTheTracesTheyWereRecordedInAsExemplars() throws Exception {
    chargeSettled("abababababababababababababababab", "run-exemplar");

    // each timer's exemplar names a span of this class's calls, recorded where that span was
    // current: the gateway's wait in the call's span, the ledger's outcome latency in its settling,
    // the executor's effect in its attempt (which call's, the exemplar sampler picks)
    assertExemplarNames(
        scrape(URI.create(gateway.uri() + "/metrics")),
        "gateway_call_wait_seconds_count",
        "execute_tool charge_card");
    assertExemplarNames(
        scrape(URI.create(pipeline.ledgerUrl() + "/metrics")),
        "effectledger_outcome_latency_seconds_count{tool=\"charge_card\"}",
        "effectledger settle charge_card");
    assertExemplarNames(
        PrometheusMetrics.scrape(pipeline.executorMetrics, OPEN_METRICS).body(),
        "effectledger_executor_effect_seconds_count{tool=\"charge_card\"}",
        "effectledger attempt charge_card");

    HttpResponse<String> classic =
        http.send(
            HttpRequest.newBuilder(URI.create(gateway.uri() + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(classic.headers().firstValue("Content-Type"))
        .hasValue("text/plain; version=0.0.4; charset=utf-8");
    assertThat(classic.body())
        .as("no exemplars in the classic text format")
        .contains("gateway_call_wait_seconds_count")
        .doesNotContain("trace_id");
  }

  // --- helpers ---------------------------------------------------------------------------------

  /** What Prometheus sends in its Accept header (OpenMetrics first). */
  private static final String OPEN_METRICS =
      "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

  private static String scrape(URI metrics) throws Exception {
    HttpResponse<String> scraped =
        http.send(
            HttpRequest.newBuilder(metrics).header("Accept", OPEN_METRICS).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(scraped.statusCode()).isEqualTo(200);
    assertThat(scraped.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/openmetrics-text");
    return scraped.body();
  }

  private static void assertExemplarNames(String scraped, String series, String spanName) {
    Matcher exemplar =
        Pattern.compile(
                "(?m)^"
                    + Pattern.quote(series)
                    + " \\d+ # \\{span_id=\"(\\p{XDigit}{16})\",trace_id=\"(\\p{XDigit}{32})\"\\}")
            .matcher(scraped);
    assertThat(exemplar.find()).as(series + " with an exemplar in:%n%s", scraped).isTrue();
    assertThat(spans.getFinishedSpanItems())
        .as(series + "'s exemplar")
        .anySatisfy(
            span -> {
              assertThat(span.getName()).isEqualTo(spanName);
              assertThat(span.getSpanId()).isEqualTo(exemplar.group(1));
              assertThat(span.getTraceId()).isEqualTo(exemplar.group(2));
            });
  }

  /** A charge_card call under the caller's span in {@code trace}, answered and settled. */
  private static void chargeSettled(String trace, String run) throws Exception {
    HttpResponse<String> answered =
        post(
            "charge_card",
            call(run, "charge", "{\"amount\":7,\"to\":\"acct-" + run + "\"}"),
            traceparent(trace, "8888888888888888"));
    assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
    awaitSpan(trace, "effectledger settle charge_card");
  }

  private static String traceparent(String trace, String span) {
    return "00-" + trace + "-" + span + "-01";
  }

  private static List<SpanData> spansOf(String trace) {
    return spans.getFinishedSpanItems().stream().filter(s -> s.getTraceId().equals(trace)).toList();
  }

  private static SpanData awaitSpan(String trace, String name) {
    return await(name + " in trace " + trace)
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> spansOf(trace).stream().filter(s -> s.getName().equals(name)).findFirst(),
            Optional::isPresent)
        .orElseThrow();
  }

  private static HttpResponse<String> post(
      String tool, String body, String traceparent, String... headers) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(gateway.uri() + "/v1/tools/" + tool + "/calls"))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + GatewayPipeline.TOKEN)
            .header("Content-Type", "application/json")
            .header(Traces.TRACEPARENT, traceparent)
            .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
