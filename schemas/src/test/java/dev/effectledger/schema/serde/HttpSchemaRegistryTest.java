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
import org.apache.avro.SchemaBuilder;
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
  private volatile String requiredAuthorization;
  private final List<String> authorizations = new CopyOnWriteArrayList<>();

  /** Answers 401 as a managed registry does when the credentials are missing or wrong. */
  private boolean refused(HttpExchange exchange) throws IOException {
    String sent = exchange.getRequestHeaders().getFirst("Authorization");
    authorizations.add(String.valueOf(sent));
    if (requiredAuthorization != null && !requiredAuthorization.equals(sent)) {
      answer(exchange, 401, "{\"error_code\":401,\"message\":\"Unauthorized\"}");
      return true;
    }
    return false;
  }

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
    if (refused(exchange)) {
      return;
    }
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
    if (refused(exchange)) {
      return;
    }
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

  private static final Schema SCHEMA =
      SchemaBuilder.record("Probe").fields().requiredString("name").endRecord();

  private static String basic(String userInfo) {
    return "Basic "
        + java.util.Base64.getEncoder().encodeToString(userInfo.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void shouldSendBasicCredentialsFromTheSettingsToARegistryThatDemandsThem() {
    requiredAuthorization = basic("KEY42:s3cr3t");
    SchemaRegistry registry =
        SchemaRegistries.forUrl(
            uri().toString(),
            Map.of(
                RegistryAuth.BASIC_SOURCE,
                "USER_INFO",
                RegistryAuth.BASIC_USER_INFO,
                "KEY42:s3cr3t"));

    int id = registry.register("probe-value", SCHEMA);

    assertThat(
            new HttpSchemaRegistry(
                    uri(),
                    java.time.Duration.ofSeconds(5),
                    RegistryAuth.of(uri(), Map.of(RegistryAuth.BASIC_USER_INFO, "KEY42:s3cr3t")))
                .schemaById(id))
        .isEqualTo(SCHEMA);
  }

  @Test
  void shouldTakeBasicCredentialsFromTheUrlAndKeepThemOutOfTheRequestLine() {
    requiredAuthorization = basic("KEY42:p@ss:word");
    String url = "http://KEY42:p%40ss:word@127.0.0.1:" + server.getAddress().getPort();

    int id = SchemaRegistries.forUrl(url).register("probe-value", SCHEMA);

    assertThat(id).isPositive();
    assertThat(authorizations).containsExactly(basic("KEY42:p@ss:word"));
    assertThat(requests).noneMatch(r -> r.contains("p@ss") || r.contains("p%40ss"));
  }

  @Test
  void shouldSendABearerToken() {
    requiredAuthorization = "Bearer tok-123";

    int id =
        SchemaRegistries.forUrl(
                uri().toString(),
                Map.of(
                    RegistryAuth.BEARER_SOURCE,
                    "STATIC_TOKEN",
                    RegistryAuth.BEARER_TOKEN,
                    "tok-123",
                    "bootstrap.servers",
                    "ignored:9092"))
            .register("probe-value", SCHEMA);

    assertThat(id).isPositive();
  }

  @Test
  void shouldSayWhatToSetWhenTheRegistryRefusesTheCredentialsWithoutShowingThem() {
    requiredAuthorization = basic("KEY42:right");
    SchemaRegistry wrong =
        SchemaRegistries.forUrl(
            uri().toString(), Map.of(RegistryAuth.BASIC_USER_INFO, "KEY42:wrong-secret"));
    SchemaRegistry none = SchemaRegistries.forUrl(uri().toString());

    assertThatThrownBy(() -> wrong.register("probe-value", SCHEMA))
        .isInstanceOf(SchemaRegistryException.class)
        .hasMessageContaining("refused the basic credentials (HTTP 401)")
        .hasMessageContaining(RegistryAuth.BASIC_USER_INFO)
        .hasMessageNotContaining("wrong-secret");
    assertThatThrownBy(() -> none.schemaById(1))
        .isInstanceOf(SchemaRegistryException.class)
        .hasMessageContaining("refused a request without credentials");
  }

  @Test
  void shouldRefuseCredentialsSettingsThatContradictEachOther() {
    String url = uri().toString();
    assertThatThrownBy(
            () ->
                SchemaRegistries.forUrl(
                    url,
                    Map.of(RegistryAuth.BASIC_USER_INFO, "k:s", RegistryAuth.BEARER_TOKEN, "t")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("give one");
    assertThatThrownBy(
            () -> SchemaRegistries.forUrl(url, Map.of(RegistryAuth.BASIC_SOURCE, "SASL_INHERIT")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("USER_INFO or URL");
    assertThatThrownBy(
            () -> SchemaRegistries.forUrl(url, Map.of(RegistryAuth.BASIC_SOURCE, "USER_INFO")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(RegistryAuth.BASIC_USER_INFO);
    assertThatThrownBy(
            () -> SchemaRegistries.forUrl(url, Map.of(RegistryAuth.BASIC_USER_INFO, "no-colon")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("<key>:<secret>");
  }
}
