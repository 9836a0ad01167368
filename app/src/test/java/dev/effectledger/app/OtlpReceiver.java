package dev.effectledger.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.embedded.JdkHttpServers;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP/HTTP trace receiver on 127.0.0.1 ({@code POST /v1/traces}, protobuf), as a collector
 * takes spans: it reads each export request with OpenTelemetry's own protocol classes and keeps the
 * spans, for a test to read back.
 */
final class OtlpReceiver implements AutoCloseable {

  /** One received span: its trace, its name, and the service that sent it. */
  record Received(String traceId, String name, String service) {}

  private final HttpServer server;
  private final List<Received> received = new CopyOnWriteArrayList<>();

  private OtlpReceiver(HttpServer server) {
    this.server = server;
  }

  static OtlpReceiver start() throws IOException {
    HttpServer server = JdkHttpServers.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
    OtlpReceiver receiver = new OtlpReceiver(server);
    server.createContext("/v1/traces", receiver::export);
    server.start();
    return receiver;
  }

  /** The base URL exporters are given ({@code OTEL_EXPORTER_OTLP_ENDPOINT}). */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  List<String> spanNames(String traceId) {
    return received.stream().filter(r -> r.traceId().equals(traceId)).map(Received::name).toList();
  }

  List<String> serviceNames() {
    return received.stream().map(Received::service).distinct().toList();
  }

  private void export(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!"POST".equals(exchange.getRequestMethod())) {
        exchange.sendResponseHeaders(405, -1);
        return;
      }
      InputStream body = exchange.getRequestBody();
      if ("gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))) {
        body = new GZIPInputStream(body);
      }
      ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(body);
      for (ResourceSpans resource : request.getResourceSpansList()) {
        String service =
            resource.getResource().getAttributesList().stream()
                .filter(a -> a.getKey().equals("service.name"))
                .map(KeyValue::getValue)
                .map(v -> v.getStringValue())
                .findFirst()
                .orElse("");
        for (ScopeSpans scope : resource.getScopeSpansList()) {
          for (Span span : scope.getSpansList()) {
            received.add(
                new Received(
                    HexFormat.of().formatHex(span.getTraceId().toByteArray()),
                    span.getName(),
                    service));
          }
        }
      }
      byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
      exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
      exchange.sendResponseHeaders(200, answer.length == 0 ? -1 : answer.length);
      if (answer.length > 0) {
        exchange.getResponseBody().write(answer);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
