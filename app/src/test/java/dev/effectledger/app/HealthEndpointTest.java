package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class HealthEndpointTest {

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> get(HealthEndpoint endpoint, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoint.port() + path))
            .timeout(Duration.ofSeconds(5))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void shouldAnswerReadyUntilThePartStopsThenNameWhy() throws Exception {
    AtomicReference<String> notReady = new AtomicReference<>();
    try (HealthEndpoint health =
        HealthEndpoint.start("127.0.0.1", 0, "executor.http.port", notReady::get)) {
      assertThat(get(health, "/readyz").statusCode()).isEqualTo(200);

      notReady.set("the executor stopped: fenced");

      HttpResponse<String> readyz = get(health, "/readyz");
      assertThat(readyz.statusCode()).isEqualTo(503);
      assertThat(readyz.body()).isEqualTo("not ready: the executor stopped: fenced\n");
      assertThat(get(health, "/healthz").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void shouldNameTheSettingWhenThePortIsTaken() {
    try (HealthEndpoint first =
        HealthEndpoint.start("127.0.0.1", 0, "executor.http.port", () -> null)) {
      assertThatThrownBy(
              () ->
                  HealthEndpoint.start("127.0.0.1", first.port(), "executor.http.port", () -> null))
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("(executor.http.port)");
    }
  }
}
