package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.app.console.HttpAuth;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LedgerHttpServerTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @Test
  void shouldReadTheExpiryWindowFromTheQueryTheFirstOneWinning() {
    assertThat(LedgerHttpServer.window("window=7d")).isEqualTo(Duration.ofDays(7));
    assertThat(LedgerHttpServer.window("x=1&window=PT90M")).isEqualTo(Duration.ofMinutes(90));
    assertThat(LedgerHttpServer.window("window=1d&window=12h"))
        .as("as every query of this project's servers: the first value of a name counts")
        .isEqualTo(Duration.ofDays(1));
    assertThat(LedgerHttpServer.window("window=%2030s"))
        .as("decoded, then trimmed")
        .isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void shouldFindNoWindowWhenTheQueryNamesNoDuration() {
    assertThat(LedgerHttpServer.window(null)).isNull();
    assertThat(LedgerHttpServer.window("")).isNull();
    assertThat(LedgerHttpServer.window("windows=7d")).isNull();
    assertThat(LedgerHttpServer.window("window=a+week")).isNull();
  }

  /** Every error of the query API is an RFC 9457 problem, as the gateway's are. */
  @Test
  void shouldAnswerEveryErrorAsAProblem(@TempDir Path state) throws Exception {
    Properties tokens = new Properties();
    tokens.setProperty(
        "http.auth.ops.sha256", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    try (KafkaStreams streams = neverStarted(state);
        LedgerHttpServer open =
            new LedgerHttpServer(
                "127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        LedgerHttpServer closed =
            new LedgerHttpServer(
                "127.0.0.1",
                0,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                HttpAuth.fromProperties(tokens),
                false)) {
      open.serve(streams);
      closed.serve(streams);

      assertProblem(get(open, "/v1/keys/acme"), 400, "invalid-path");
      assertProblem(get(open, "/v1/tools/charge/expiry?window=soon"), 400, "invalid-query");
      assertProblem(get(open, "/v1/policy"), 404, "policy-not-read");
      HttpResponse<String> notRunning = get(open, "/v1/keys/acme/k1");
      assertProblem(notRunning, 503, "unavailable");
      assertThat(json(notRunning).get("detail").asText()).contains("CREATED");

      HttpResponse<String> refused = get(closed, "/v1/keys/acme/k1");
      assertProblem(refused, 401, "unauthorized");
      assertThat(refused.headers().firstValue("WWW-Authenticate"))
          .contains("Bearer realm=\"effectledger\"");
    }
  }

  private static void assertProblem(HttpResponse<String> response, int status, String slug)
      throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).contains("application/problem+json");
    JsonNode body = json(response);
    assertThat(body.get("type").asText()).isEqualTo("urn:effectledger:problem:" + slug);
    assertThat(body.get("status").asInt()).isEqualTo(status);
    assertThat(body.get("title").asText()).isNotBlank();
    assertThat(body.get("detail").asText()).isNotBlank();
  }

  private static JsonNode json(HttpResponse<String> response) throws Exception {
    return JSON.readTree(response.body());
  }

  private static HttpResponse<String> get(LedgerHttpServer server, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A Kafka Streams client that is never started: its state stays CREATED. */
  private static KafkaStreams neverStarted(Path state) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream("in").to("out");
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "http-problem-test");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9"); // never started
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    return new KafkaStreams(builder.build(), props);
  }
}
