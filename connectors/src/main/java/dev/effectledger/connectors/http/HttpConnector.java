package dev.effectledger.connectors.http;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.DownstreamSpan;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.schema.Traces;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Calls an HTTP API once per effect with the key in a header (default {@code Idempotency-Key}), and
 * classifies the answer: connection refused and 429/503 had no effect (retryable, honouring {@code
 * Retry-After}); a timeout or a connection lost after sending, and 500/502/504, may have acted
 * (ambiguous); other 4xx are poison (failed).
 */
public final class HttpConnector implements Connector {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern PLACEHOLDER =
      Pattern.compile("\\{(key|idempotencyKey|tenant|tool|arg:[^}]*)}");
  private static final Set<String> BODY_METHODS = Set.of("POST", "PUT", "PATCH");

  private final HttpConnectorSettings settings;
  private final HttpClient http;
  private final Clock clock;

  public HttpConnector(HttpConnectorSettings settings, Clock clock) {
    this.settings = settings;
    this.clock = clock;
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(settings.connectTimeout())
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(settings.honoursKeys(), false, settings.lookupUrlTemplate() != null);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(expand(settings.urlTemplate(), request)))
            .timeout(settings.timeout())
            .header(settings.keyHeader(), request.effectKey());
    settings.headers().forEach(builder::header);
    if (request.traceId() != null) {
      builder.header(
          "X-Trace-Id", request.traceId()); // as before traceparent: kept for those who read it
    }
    if (BODY_METHODS.contains(settings.method())) {
      builder
          .header("Content-Type", "application/json")
          .method(settings.method(), HttpRequest.BodyPublishers.ofString(request.arguments()));
    } else {
      builder.method(settings.method(), HttpRequest.BodyPublishers.noBody());
    }
    HttpRequest sent = builder.build();
    try (DownstreamSpan call = DownstreamSpan.start(settings.method(), null, request)) {
      if (call.span().isRecording()) {
        call.span()
            .setAttribute(HTTP_METHOD, settings.method())
            .setAttribute(URL_FULL, withoutSecrets(sent.uri()))
            .setAttribute(SERVER_ADDRESS, String.valueOf(sent.uri().getHost()));
      }
      String traceparent = call.traceparent();
      if (traceparent != null) {
        sent =
            HttpRequest.newBuilder(
                    sent, (name, value) -> !name.equalsIgnoreCase(Traces.TRACEPARENT))
                .header(Traces.TRACEPARENT, traceparent)
                .build();
      }
      return call.ended(send(sent, call.span()));
    }
  }

  private static final AttributeKey<String> HTTP_METHOD =
      AttributeKey.stringKey("http.request.method");
  private static final AttributeKey<String> URL_FULL = AttributeKey.stringKey("url.full");
  private static final AttributeKey<String> SERVER_ADDRESS =
      AttributeKey.stringKey("server.address");
  private static final AttributeKey<Long> HTTP_STATUS =
      AttributeKey.longKey("http.response.status_code");

  /** The URL without its query and user info, which may hold credentials. */
  static String withoutSecrets(URI uri) {
    return uri.getScheme()
        + "://"
        + uri.getHost()
        + (uri.getPort() < 0 ? "" : ":" + uri.getPort())
        + (uri.getRawPath() == null ? "" : uri.getRawPath());
  }

  private EffectOutcome send(HttpRequest sent, Span span) {
    HttpResponse<String> response;
    try {
      response = http.send(sent, HttpResponse.BodyHandlers.ofString());
      span.setAttribute(HTTP_STATUS, (long) response.statusCode());
    } catch (HttpConnectTimeoutException e) {
      return new EffectOutcome.Retryable(
          "CONNECT_TIMEOUT", "could not connect within " + settings.connectTimeout());
    } catch (ConnectException e) {
      return new EffectOutcome.Retryable(
          "CONNECTION_REFUSED", "could not connect: " + e.getMessage());
    } catch (HttpTimeoutException e) {
      return new EffectOutcome.Ambiguous(
          "TIMEOUT", "no answer within " + settings.timeout() + " after sending");
    } catch (IOException e) {
      return new EffectOutcome.Ambiguous(
          "CONNECTION_LOST", "connection lost after sending: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new EffectOutcome.Ambiguous("INTERRUPTED", "interrupted while waiting for the answer");
    }
    return classify(response);
  }

  private EffectOutcome classify(HttpResponse<String> response) {
    int status = response.statusCode();
    String code = "HTTP_" + status;
    return switch (settings.statuses().classify(status)) {
      case SUCCEEDED -> {
        JsonNode body = parse(response.body());
        yield new EffectOutcome.Succeeded(body.toString(), effectId(response, body));
      }
      case FAILED ->
          new EffectOutcome.Failed(code, "the downstream refused the request with " + status);
      case RETRYABLE ->
          new EffectOutcome.Retryable(
              code, "the downstream answered " + status + " without acting", retryAfter(response));
      case AMBIGUOUS ->
          new EffectOutcome.Ambiguous(
              code, "the downstream answered " + status + "; it may have acted");
    };
  }

  @Override
  public Lookup lookup(String effectKey) {
    if (settings.lookupUrlTemplate() == null) {
      return Lookup.unsupported();
    }
    String url = settings.lookupUrlTemplate().replace("{key}", encode(effectKey));
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(url)).timeout(settings.timeout()).GET();
    settings.headers().forEach(builder::header);
    try {
      HttpResponse<String> response =
          http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() == 404) {
        return Lookup.notFound();
      }
      if (response.statusCode() / 100 != 2) {
        return Lookup.unavailable();
      }
      JsonNode body = parse(response.body());
      return Lookup.found(effectId(response, body), body.toString());
    } catch (IOException e) {
      return Lookup.unavailable();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Lookup.unavailable();
    }
  }

  private String effectId(HttpResponse<String> response, JsonNode body) {
    if (settings.effectIdHeader() != null) {
      return response.headers().firstValue(settings.effectIdHeader()).orElse(null);
    }
    if (settings.effectIdPointer() != null) {
      JsonNode id = body.at(JsonPointer.compile(settings.effectIdPointer()));
      return id.isMissingNode() || id.isNull() ? null : id.asText();
    }
    return null;
  }

  /** {@code Retry-After} as seconds or an HTTP date; absent or unreadable means none. */
  private Optional<Duration> retryAfter(HttpResponse<String> response) {
    Optional<String> header = response.headers().firstValue("Retry-After");
    if (header.isEmpty()) {
      return Optional.empty();
    }
    String value = header.get().trim();
    try {
      return Optional.of(Duration.ofSeconds(Math.max(0, Long.parseLong(value))));
    } catch (NumberFormatException notSeconds) {
      try {
        ZonedDateTime at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME);
        Duration wait = Duration.between(clock.instant(), at.toInstant());
        return Optional.of(wait.isNegative() ? Duration.ZERO : wait);
      } catch (DateTimeParseException notDate) {
        return Optional.empty();
      }
    }
  }

  private static JsonNode parse(String body) {
    if (body == null || body.isBlank()) {
      return JSON.nullNode();
    }
    try {
      return JSON.readTree(body);
    } catch (IOException e) {
      return TextNode.valueOf(body);
    }
  }

  static String expand(String template, EffectRequest request) {
    Matcher m = PLACEHOLDER.matcher(template);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String name = m.group(1);
      String value =
          switch (name) {
            case "key" -> request.effectKey();
            case "idempotencyKey" -> request.idempotencyKey();
            case "tenant" -> request.tenant();
            case "tool" -> request.tool();
            default -> argument(request.arguments(), name.substring("arg:".length()));
          };
      m.appendReplacement(out, Matcher.quoteReplacement(encode(value)));
    }
    m.appendTail(out);
    return out.toString();
  }

  private static String argument(String arguments, String pointer) {
    try {
      JsonNode value = JSON.readTree(arguments).at(JsonPointer.compile(pointer));
      return value.isMissingNode() ? "" : value.asText();
    } catch (IOException | IllegalArgumentException e) {
      return "";
    }
  }

  private static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
