package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checks a real gateway response against docs/openapi.yaml (on the class path as /openapi.yaml):
 * the status is declared for the operation, the declared media type and required headers are there,
 * and the body validates against the declared schema (networknt's JSON Schema 2020-12 validator
 * with the OpenAPI 3.1 dialect).
 */
final class OpenApiContract {

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final ObjectMapper JSON = new ObjectMapper();
  private final JsonNode doc;
  private final SchemaRegistry factory = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31());
  private final Map<String, Schema> schemas = new ConcurrentHashMap<>();

  OpenApiContract() {
    try (InputStream in = OpenApiContract.class.getResourceAsStream("/openapi.yaml")) {
      assertThat(in).as("openapi.yaml on the class path").isNotNull();
      this.doc = YAML.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Asserts {@code response} to {@code method} on the path template {@code path} is as documented.
   */
  void check(String method, String path, HttpResponse<String> response) {
    String status = String.valueOf(response.statusCode());
    JsonNode operation = doc.path("paths").path(path).path(method.toLowerCase());
    assertThat(operation.isMissingNode()).as(method + " " + path + " is documented").isFalse();
    JsonNode declared = resolve(operation.path("responses").path(status));
    assertThat(declared.isMissingNode())
        .as("%s %s: status %s is documented (body %s)", method, path, status, response.body())
        .isFalse();
    for (Iterator<Map.Entry<String, JsonNode>> h = declared.path("headers").fields();
        h.hasNext(); ) {
      Map.Entry<String, JsonNode> header = h.next();
      if (resolve(header.getValue()).path("required").asBoolean(false)) {
        assertThat(response.headers().firstValue(header.getKey()))
            .as("%s %s %s: required header %s", method, path, status, header.getKey())
            .isPresent();
      }
    }
    JsonNode content = declared.path("content");
    if (content.isMissingNode() || content.isEmpty()) {
      return;
    }
    String type = response.headers().firstValue("Content-Type").orElse("").split(";")[0].trim();
    assertThat(content.has(type))
        .as("%s %s %s: media type %s is documented (%s)", method, path, status, type, content)
        .isTrue();
    JsonNode schema = content.path(type).path("schema");
    if (!schema.has("$ref") || !type.endsWith("json")) {
      return;
    }
    String pointer = schema.get("$ref").asText();
    Schema validator =
        schemas.computeIfAbsent(
            pointer, p -> factory.getSchema(SchemaLocation.of("classpath:openapi.yaml" + p)));
    List<Error> errors;
    try {
      errors = validator.validate(JSON.readTree(response.body()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(errors)
        .as("%s %s %s: body %s against %s", method, path, status, response.body(), pointer)
        .isEmpty();
  }

  private JsonNode resolve(JsonNode node) {
    if (node.has("$ref")) {
      return doc.at(node.get("$ref").asText().substring(1));
    }
    return node;
  }
}
