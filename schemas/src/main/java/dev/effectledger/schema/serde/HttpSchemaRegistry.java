package dev.effectledger.schema.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;

/**
 * A client of the Schema Registry REST API: {@code POST /subjects/{subject}/versions} to register
 * and {@code GET /schemas/ids/{id}} to fetch. Both answers are cached for the life of the client,
 * since a schema id never changes meaning. Authenticates as {@link RegistryAuth} says (basic or
 * bearer, as managed registries require).
 */
public final class HttpSchemaRegistry implements SchemaRegistry {

  private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final URI baseUri;
  private final HttpClient http;
  private final Duration requestTimeout;
  private final RegistryAuth auth;
  private final Map<String, Integer> idsBySubjectAndSchema = new ConcurrentHashMap<>();
  private final Map<Integer, Schema> schemasById = new ConcurrentHashMap<>();

  public HttpSchemaRegistry(URI baseUri) {
    this(baseUri, Duration.ofSeconds(10));
  }

  public HttpSchemaRegistry(URI baseUri, Duration requestTimeout) {
    this(baseUri, requestTimeout, RegistryAuth.of(baseUri, java.util.Map.of()));
  }

  /** A client that sends {@code auth}'s credentials; {@code baseUri}'s user info is dropped. */
  public HttpSchemaRegistry(URI baseUri, Duration requestTimeout, RegistryAuth auth) {
    String base = RegistryAuth.withoutCredentials(baseUri).toString();
    this.baseUri = URI.create(base.endsWith("/") ? base : base + "/");
    this.requestTimeout = requestTimeout;
    this.auth = auth;
    this.http = HttpClient.newBuilder().connectTimeout(requestTimeout).build();
  }

  @Override
  public int register(String subject, Schema schema) {
    String cacheKey = subject + '\n' + schema;
    Integer cached = idsBySubjectAndSchema.get(cacheKey);
    if (cached != null) {
      return cached;
    }
    String body = JSON.createObjectNode().put("schema", schema.toString()).toString();
    URI uri =
        baseUri.resolve(
            "subjects/" + URLEncoder.encode(subject, StandardCharsets.UTF_8) + "/versions");
    HttpRequest request =
        HttpRequest.newBuilder(uri)
            .timeout(requestTimeout)
            .header("Content-Type", CONTENT_TYPE)
            .header("Accept", CONTENT_TYPE)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    JsonNode answer = send(request, "register a schema under subject " + subject);
    int id = answer.path("id").asInt(-1);
    if (id < 0) {
      throw new SchemaRegistryException(
          "Schema Registry at "
              + baseUri
              + " answered registration under "
              + subject
              + " without an id",
          false);
    }
    idsBySubjectAndSchema.put(cacheKey, id);
    schemasById.putIfAbsent(id, schema);
    return id;
  }

  @Override
  public Schema schemaById(int id) {
    Schema cached = schemasById.get(id);
    if (cached != null) {
      return cached;
    }
    HttpRequest request =
        HttpRequest.newBuilder(baseUri.resolve("schemas/ids/" + id))
            .timeout(requestTimeout)
            .header("Accept", CONTENT_TYPE)
            .GET()
            .build();
    JsonNode answer = send(request, "fetch schema id " + id);
    Schema schema = new Schema.Parser().parse(answer.path("schema").asText());
    schemasById.putIfAbsent(id, schema);
    return schema;
  }

  private JsonNode send(HttpRequest unauthenticated, String what) {
    HttpRequest request =
        auth.header()
            .map(
                value ->
                    HttpRequest.newBuilder(unauthenticated, (name, v) -> true)
                        .header("Authorization", value)
                        .build())
            .orElse(unauthenticated);
    HttpResponse<String> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new SchemaRegistryException(
          "Could not "
              + what
              + ": Schema Registry at "
              + baseUri
              + " is unreachable ("
              + e.getMessage()
              + "); check schema.registry.url",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SchemaRegistryException("Interrupted while trying to " + what, e);
    }
    JsonNode json = parse(response.body());
    if (response.statusCode() == 401 || response.statusCode() == 403) {
      throw new SchemaRegistryException(
          "Could not "
              + what
              + ": Schema Registry at "
              + baseUri
              + " refused "
              + (auth.kind().equals("none")
                  ? "a request without credentials"
                  : "the " + auth.kind() + " credentials")
              + " (HTTP "
              + response.statusCode()
              + "); set "
              + RegistryAuth.BASIC_USER_INFO
              + "=<key>:<secret> or "
              + RegistryAuth.BEARER_TOKEN
              + " beside schema.registry.url",
          false);
    }
    if (response.statusCode() / 100 != 2) {
      int errorCode = json.path("error_code").asInt(response.statusCode());
      String message = json.path("message").asText(response.body());
      boolean notFound = response.statusCode() == 404;
      throw new SchemaRegistryException(
          "Could not "
              + what
              + ": Schema Registry answered HTTP "
              + response.statusCode()
              + " error_code "
              + errorCode
              + ": "
              + message,
          notFound);
    }
    return json;
  }

  private static JsonNode parse(String body) {
    try {
      return JSON.readTree(body == null || body.isEmpty() ? "{}" : body);
    } catch (IOException e) {
      return JSON.createObjectNode();
    }
  }
}
