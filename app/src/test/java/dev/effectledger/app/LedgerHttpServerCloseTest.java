package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The processor's HTTP server leaves no thread behind when it closes: {@code HttpServer.stop} does
 * not stop the executor it was given, and every closed server kept its 16 handler threads
 * (testkit's Leftovers found them after each class that ran a processor; issue 53).
 */
class LedgerHttpServerCloseTest {

  @Test
  void shouldStopItsHandlerThreadsWhenItCloses(@TempDir Path state) throws Exception {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream("in").to("out");
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "http-close-test");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9"); // never started
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    HttpClient http = HttpClient.newHttpClient();
    try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
      LedgerHttpServer server =
          new LedgerHttpServer(
              "127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
      server.serve(streams);
      URI healthz = URI.create("http://127.0.0.1:" + server.port() + "/healthz");
      List<CompletableFuture<HttpResponse<String>>> calls =
          IntStream.range(0, 8)
              .mapToObj(
                  i ->
                      http.sendAsync(
                          HttpRequest.newBuilder(healthz).build(),
                          HttpResponse.BodyHandlers.ofString()))
              .toList();
      for (CompletableFuture<HttpResponse<String>> call : calls) {
        assertThat(call.get().statusCode()).isEqualTo(200);
      }
      assertThat(handlerThreads()).as("handler threads while serving").isPositive();

      server.close();

      await("no ledger-http thread left after close")
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(() -> assertThat(handlerThreads()).as("ledger-http threads").isZero());
    }
  }

  private static long handlerThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().equals("ledger-http"))
        .count();
  }
}
