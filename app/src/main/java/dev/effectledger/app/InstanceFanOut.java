package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.kafka.streams.state.HostInfo;

/**
 * Asking the other processor instances: every one of them for its own answer to a route, and
 * merging those answers into this instance's (the held keys, the overview's per-tool figures, a
 * tool's expiry counts), with the instances that could not answer listed as unreachable; or the one
 * instance that owns a key. Every request goes out marked as forwarded, so the instance asked
 * answers for itself alone and never asks on.
 */
final class InstanceFanOut {

  /** The header that marks a request another instance forwarded. */
  static final String FORWARDED = "X-Effectledger-Forwarded";

  /** How long one instance may take to answer the console's views and a key lookup. */
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  /**
   * The answers of every instance in {@code instances} but {@code self} (and those that advertise
   * no port) to {@code GET path}, asked with the caller's {@code authorization} as forwarded
   * requests (they answer for themselves only); those that could not answer are added to {@code
   * unreachable}, as {@code host:port} with the HTTP status or the interruption when there is one.
   */
  List<JsonNode> ask(
      Collection<HostInfo> instances,
      HostInfo self,
      String path,
      String authorization,
      ArrayNode unreachable,
      Duration timeout) {
    List<JsonNode> answers = new ArrayList<>();
    for (HostInfo host : instances) {
      if (host.equals(self) || host.port() <= 0) {
        continue;
      }
      try {
        HttpResponse<String> response =
            client.send(
                HttpRequest.newBuilder(URI.create("http://" + address(host) + path))
                    .timeout(timeout)
                    .header(FORWARDED, "1")
                    .header("Authorization", authorization == null ? "" : authorization)
                    .GET()
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 200) {
          answers.add(JSON.readTree(response.body()));
        } else {
          unreachable.add(address(host) + " (HTTP " + response.statusCode() + ")");
        }
      } catch (IOException e) {
        unreachable.add(address(host));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        unreachable.add(address(host) + " (interrupted)");
        break;
      }
    }
    return answers;
  }

  /** Asks {@code owner} for {@code route}'s answer about one key, as a forwarded request. */
  HttpResponse<String> askOwner(
      HostInfo owner, String route, String tenant, String key, String query, String authorization)
      throws IOException, InterruptedException {
    URI uri =
        URI.create(
            "http://"
                + address(owner)
                + route
                + URLEncoder.encode(tenant, StandardCharsets.UTF_8)
                + "/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8)
                + query);
    return client.send(
        HttpRequest.newBuilder(uri)
            .timeout(TIMEOUT)
            .header(FORWARDED, "1")
            .header("Authorization", authorization == null ? "" : authorization)
            .GET()
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** How an instance is named in answers: {@code host:port}. */
  static String address(HostInfo host) {
    return host.host() + ":" + host.port();
  }

  /**
   * Adds another instance's {@code GET /v1/held} answer to {@code out}: its held keys, whether it
   * counts, and one more instance.
   */
  static void mergeHeld(ObjectNode out, JsonNode other) {
    ArrayNode keys = (ArrayNode) out.get("held");
    other.path("held").forEach(keys::add);
    mergeCommon(out, other);
  }

  /**
   * Adds another instance's {@code GET /v1/overview} answer to {@code out}: per tool, the decisions
   * and the entries in flight and held summed, the percentiles the higher of the two; its double
   * effects; whether it counts, and one more instance.
   */
  static void mergeOverview(ObjectNode out, JsonNode other) {
    ObjectNode tools = (ObjectNode) out.get("tools");
    other
        .path("tools")
        .fields()
        .forEachRemaining(
            e -> {
              ObjectNode tool = tool(tools, e.getKey());
              e.getValue()
                  .path("decisions")
                  .fields()
                  .forEachRemaining(
                      d ->
                          tool.with("decisions")
                              .put(
                                  d.getKey(),
                                  tool.path("decisions").path(d.getKey()).asLong()
                                      + d.getValue().asLong()));
              for (String sum : new String[] {"inFlight", "held"}) {
                tool.put(sum, tool.path(sum).asLong() + e.getValue().path(sum).asLong());
              }
              for (String max : new String[] {"p50Ms", "p99Ms"}) {
                if (e.getValue().has(max)) {
                  tool.put(
                      max, Math.max(tool.path(max).asDouble(), e.getValue().path(max).asDouble()));
                }
              }
            });
    ArrayNode doubles = (ArrayNode) out.get("doubleEffects");
    other.path("doubleEffects").forEach(doubles::add);
    mergeCommon(out, other);
  }

  /**
   * Adds another instance's {@code GET /v1/tools/{tool}/expiry} answer to {@code out}: its settled
   * and expiring counts, and one more instance.
   */
  static void mergeExpiry(ObjectNode out, JsonNode other) {
    out.put("settled", out.path("settled").asLong() + other.path("settled").asLong());
    out.put(
        "expiringAtOnce",
        out.path("expiringAtOnce").asLong() + other.path("expiringAtOnce").asLong());
    out.put("instances", out.path("instances").asInt() + 1);
  }

  /** The figures of tool {@code name} in an overview's {@code tools}, added when not there yet. */
  static ObjectNode tool(ObjectNode tools, String name) {
    return tools.has(name) ? (ObjectNode) tools.get(name) : tools.putObject(name);
  }

  /** Still counting when either instance still counts its entries after it started; one more. */
  private static void mergeCommon(ObjectNode out, JsonNode other) {
    out.put("counting", out.path("counting").asBoolean() || other.path("counting").asBoolean());
    out.put("instances", out.path("instances").asInt() + 1);
  }
}
