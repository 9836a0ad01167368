package dev.effectledger.connectors.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.FieldReader;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One tool's HTTP connector settings.
 *
 * <pre>
 * settings:
 *   url: http://127.0.0.1:8080/charges/{key}  # {key} {idempotencyKey} {tenant} {tool} {arg:/json/pointer}
 *   method: POST                               # body is the arguments for POST, PUT, PATCH
 *   headers: {Authorization: "Bearer ..."}
 *   keyHeader: Idempotency-Key
 *   timeout: 10s                               # request timeout; past it the outcome is ambiguous
 *   connectTimeout: 2s
 *   honoursKeys: false                         # true only if the API dedups on keyHeader
 *   effectIdPointer: /id                       # or effectIdHeader: X-Charge-Id
 *   lookupUrl: http://127.0.0.1:8080/charges?key={key}
 *   statuses: {"409": failed}                  # overrides: succeeded, failed, retryable, ambiguous
 * </pre>
 */
public record HttpConnectorSettings(
    String urlTemplate,
    String method,
    Map<String, String> headers,
    String keyHeader,
    Duration timeout,
    Duration connectTimeout,
    boolean honoursKeys,
    String effectIdPointer,
    String effectIdHeader,
    String lookupUrlTemplate,
    StatusMapping statuses) {

  private static final List<String> FIELDS =
      List.of(
          "url",
          "method",
          "headers",
          "keyHeader",
          "timeout",
          "connectTimeout",
          "honoursKeys",
          "effectIdPointer",
          "effectIdHeader",
          "lookupUrl",
          "statuses");
  private static final Set<String> METHODS = Set.of("GET", "POST", "PUT", "PATCH", "DELETE");

  public HttpConnectorSettings {
    headers = Map.copyOf(headers);
  }

  /** Reads and validates {@code node}; the exception lists every problem. */
  public static HttpConnectorSettings from(String tool, JsonNode node) {
    FieldReader s = FieldReader.of("tools." + tool + ".settings", node);
    s.allowOnly(FIELDS);
    String url = s.requiredText("url", "give the URL template, e.g. http://host/charges");
    if (url != null && !url.startsWith("http://") && !url.startsWith("https://")) {
      s.problem("url", "'" + url + "' must start with http:// or https://");
    }
    String method = s.text("method", "POST").toUpperCase(Locale.ROOT);
    if (!METHODS.contains(method)) {
      s.problem(
          "method", "'" + method + "' is not allowed; allowed: DELETE, GET, PATCH, POST, PUT");
    }
    Map<String, String> headers = new LinkedHashMap<>();
    JsonNode headerNode = s.object("headers");
    if (headerNode != null) {
      headerNode.properties().forEach(e -> headers.put(e.getKey(), e.getValue().asText()));
    }
    String pointer = s.text("effectIdPointer", null);
    if (pointer != null && !pointer.startsWith("/")) {
      s.problem("effectIdPointer", "'" + pointer + "' is not a JSON pointer; start it with /");
    }
    Map<Integer, StatusMapping.Kind> overrides = new HashMap<>();
    JsonNode statusNode = s.object("statuses");
    if (statusNode != null) {
      statusNode
          .properties()
          .forEach(
              e -> {
                try {
                  int status = Integer.parseInt(e.getKey());
                  overrides.put(
                      status,
                      StatusMapping.Kind.valueOf(e.getValue().asText().toUpperCase(Locale.ROOT)));
                } catch (IllegalArgumentException bad) {
                  s.problem(
                      "statuses." + e.getKey(),
                      "'"
                          + e.getValue().asText()
                          + "' is not allowed; map a status code to succeeded, failed, retryable or ambiguous");
                }
              });
    }
    HttpConnectorSettings settings =
        new HttpConnectorSettings(
            url,
            method,
            headers,
            s.text("keyHeader", "Idempotency-Key"),
            s.duration("timeout", Duration.ofSeconds(10)),
            s.duration("connectTimeout", Duration.ofSeconds(2)),
            s.bool("honoursKeys", false),
            pointer,
            s.text("effectIdHeader", null),
            s.text("lookupUrl", null),
            new StatusMapping(overrides));
    s.check();
    return settings;
  }
}
