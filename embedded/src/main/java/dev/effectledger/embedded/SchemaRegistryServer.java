package dev.effectledger.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.schema.serde.InMemorySchemaRegistry;
import dev.effectledger.schema.serde.SchemaRegistryException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.Set;
import org.apache.avro.Schema;

/**
 * The two Schema Registry endpoints the serdes call, served on 127.0.0.1 from an in-memory
 * registry, so that processes in separate JVMs agree on schema ids.
 */
public final class SchemaRegistryServer implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final InMemorySchemaRegistry registry = new InMemorySchemaRegistry();
  private final HttpServer server;
  private volatile Set<String> acceptedAuthorizations = Set.of();

  private SchemaRegistryServer(HttpServer server) {
    this.server = server;
  }

  public static SchemaRegistryServer start() {
    return start(0);
  }

  /** Starts on 127.0.0.1:{@code port}; 0 picks a free port. */
  public static SchemaRegistryServer start(int port) {
    try {
      HttpServer http = JdkHttpServers.create(new InetSocketAddress("127.0.0.1", port), 0);
      SchemaRegistryServer server = new SchemaRegistryServer(http);
      http.createContext("/subjects/", server::register);
      http.createContext("/schemas/ids/", server::fetch);
      http.start();
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("Could not start the loopback Schema Registry", e);
    }
  }

  /**
   * From now on, answers 401 (as a managed registry does) to a request whose {@code Authorization}
   * header is none of {@code accepted} ({@code "Basic ..."} or {@code "Bearer ..."}): one registry
   * can then be reached with basic credentials by some clients and a bearer token by others.
   */
  public SchemaRegistryServer requireAuthorization(String... accepted) {
    if (accepted.length == 0) {
      throw new IllegalArgumentException("name at least one accepted Authorization header");
    }
    this.acceptedAuthorizations = Set.of(accepted);
    return this;
  }

  private boolean refused(HttpExchange exchange) throws IOException {
    Set<String> accepted = acceptedAuthorizations;
    String given = exchange.getRequestHeaders().getFirst("Authorization");
    if (!accepted.isEmpty() && (given == null || !accepted.contains(given))) {
      answer(exchange, 401, "{\"error_code\":401,\"message\":\"Unauthorized\"}");
      return true;
    }
    return false;
  }

  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  private void register(HttpExchange exchange) throws IOException {
    if (refused(exchange)) {
      return;
    }
    String path = exchange.getRequestURI().getPath();
    if (!"POST".equals(exchange.getRequestMethod()) || !path.endsWith("/versions")) {
      answer(exchange, 404, "{\"error_code\":404,\"message\":\"Not found\"}");
      return;
    }
    String subject = path.substring("/subjects/".length(), path.length() - "/versions".length());
    try {
      JsonNode body = JSON.readTree(exchange.getRequestBody());
      Schema schema = new Schema.Parser().parse(body.path("schema").asText());
      answer(exchange, 200, "{\"id\":" + registry.register(subject, schema) + "}");
    } catch (RuntimeException e) {
      answer(
          exchange,
          422,
          JSON.createObjectNode()
              .put("error_code", 42201)
              .put("message", "Invalid schema")
              .toString());
    }
  }

  private void fetch(HttpExchange exchange) throws IOException {
    if (refused(exchange)) {
      return;
    }
    String id = exchange.getRequestURI().getPath().substring("/schemas/ids/".length());
    try {
      Schema schema = registry.schemaById(Integer.parseInt(id));
      answer(exchange, 200, JSON.createObjectNode().put("schema", schema.toString()).toString());
    } catch (NumberFormatException | SchemaRegistryException e) {
      answer(exchange, 404, "{\"error_code\":40403,\"message\":\"Schema " + id + " not found\"}");
    }
  }

  private static void answer(HttpExchange exchange, int status, String body) throws IOException {
    JdkHttpServers.answer(exchange, status, "application/vnd.schemaregistry.v1+json", body);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
