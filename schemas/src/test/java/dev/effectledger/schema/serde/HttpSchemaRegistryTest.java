package dev.effectledger.schema.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.schema.ErrorInfo;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.avro.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Against a loopback server that answers the registry's documented endpoints. */
class HttpSchemaRegistryTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  private HttpServer server;
  private final Map<Integer, String> schemas = new ConcurrentHashMap<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final AtomicInteger nextId = new AtomicInteger(41);

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/subjects/", this::register);
    server.createContext("/schemas/ids/", this::fetch);
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  private void register(HttpExchange exchange) throws IOException {
    requests.add(
        exchange.getRequestMethod()
            + " "
            + exchange.getRequestURI().getRawPath()
            + " "
            + exchange.getRequestHeaders().getFirst("Content-Type"));
    JsonNode body = JSON.readTree(exchange.getRequestBody());
    String schema = body.path("schema").asText();
    if (schema.isEmpty()) {
      answer(exchange, 422, "{\"error_code\":42201,\"message\":\"Invalid schema\"}");
      return;
    }
    int id = nextId.incrementAndGet();
    schemas.put(id, schema);
    answer(exchange, 200, "{\"id\":" + id + "}");
  }

  private void fetch(HttpExchange exchange) throws IOException {
    requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getRawPath());
    int id =
        Integer.parseInt(exchange.getRequestURI().getPath().substring("/schemas/ids/".length()));
    String schema = schemas.get(id);
    if (schema == null) {
      answer(exchange, 404, "{\"error_code\":40403,\"message\":\"Schema " + id + " not found\"}");
      return;
    }
    answer(exchange, 200, JSON.createObjectNode().put("schema", schema).toString());
  }

  private static void answer(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().add("Content-Type", "application/vnd.schemaregistry.v1+json");
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
    exchange.close();
  }

  @Test
  void shouldRegisterUnderSubjectWithRegistryContentTypeAndCacheTheId() {
    var registry = new HttpSchemaRegistry(uri());

    int first = registry.register("tool-results-value", ErrorInfo.getClassSchema());
    int second = registry.register("tool-results-value", ErrorInfo.getClassSchema());

    assertThat(first).isEqualTo(42).isEqualTo(second);
    assertThat(requests)
        .containsExactly(
            "POST /subjects/tool-results-value/versions application/vnd.schemaregistry.v1+json");
    assertThat(new Schema.Parser().parse(schemas.get(42))).isEqualTo(ErrorInfo.getClassSchema());
  }

  @Test
  void shouldFetchSchemaByIdOnceThenServeFromCache() {
    schemas.put(7, ErrorInfo.getClassSchema().toString());
    var registry = new HttpSchemaRegistry(uri());

    assertThat(registry.schemaById(7)).isEqualTo(ErrorInfo.getClassSchema());
    assertThat(registry.schemaById(7)).isEqualTo(ErrorInfo.getClassSchema());
    assertThat(requests).containsExactly("GET /schemas/ids/7");
  }

  @Test
  void shouldReportNotFoundWithRegistryErrorCode() {
    var registry = new HttpSchemaRegistry(uri());

    assertThatThrownBy(() -> registry.schemaById(5))
        .isInstanceOfSatisfying(
            SchemaRegistryException.class, e -> assertThat(e.isNotFound()).isTrue())
        .hasMessageContaining("40403")
        .hasMessageContaining("Schema 5 not found");
  }

  @Test
  void shouldServeTheSerdeEndToEnd() {
    var writer = new RegistryAvroSerde<>(new HttpSchemaRegistry(uri()), ErrorInfo.class);
    var reader = new RegistryAvroSerde<>(new HttpSchemaRegistry(uri()), ErrorInfo.class);
    ErrorInfo error =
        ErrorInfo.newBuilder()
            .setCode("C")
            .setMessage("m")
            .setRetriable(false)
            .setCorrectiveAction("a")
            .build();

    assertThat(reader.deserialize("t", writer.serialize("t", error))).isEqualTo(error);
  }

  @Test
  void shouldSayWhatToCheckWhenRegistryIsUnreachable() throws IOException {
    server.stop(0);
    var registry = new HttpSchemaRegistry(uri());

    assertThatThrownBy(() -> registry.schemaById(1))
        .isInstanceOf(SchemaRegistryException.class)
        .hasMessageContaining("unreachable")
        .hasMessageContaining("schema.registry.url");
  }
}
