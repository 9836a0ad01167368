package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.embedded.CountingDownstream.Fault;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CountingDownstreamTest {

  private final HttpClient http = HttpClient.newHttpClient();
  private final CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));

  @AfterEach
  void stop() {
    downstream.close();
  }

  private HttpResponse<String> charge(String key, String body)
      throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create(downstream.url()))
            .header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + downstream.port() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void shouldActOncePerKeyAndCountByTheBodysField() throws Exception {
    downstream.countBy("/order");

    HttpResponse<String> first = charge("k1", "{\"order\":\"o-1\"}");
    HttpResponse<String> repeat = charge("k1", "{\"order\":\"o-1\"}");
    HttpResponse<String> otherParameters = charge("k1", "{\"order\":\"o-2\"}");
    charge("k2", "{\"order\":\"o-1\"}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(repeat.statusCode()).isEqualTo(200);
    assertThat(repeat.body()).isEqualTo(first.body());
    assertThat(otherParameters.statusCode()).isEqualTo(422);
    assertThat(downstream.requests("k1")).isEqualTo(3);
    assertThat(downstream.effectsByKey()).isEqualTo(Map.of("k1", 1, "k2", 1));
    assertThat(downstream.effectsBy("o-1")).isEqualTo(2);
    assertThat(get("/effects?by=order").body()).isEqualTo("{\"o-1\":2}");
    assertThat(get("/charges?key=k1").body()).isEqualTo(first.body());
  }

  @Test
  void shouldGiveAPlannedFaultOnAKeysFirstRequestOnly() throws Exception {
    downstream.faultMix(3, Map.of(Fault.RATE_LIMITED, 100));

    assertThat(charge("k1", "{}").statusCode()).isEqualTo(429);
    assertThat(charge("k1", "{}").statusCode()).isEqualTo(201);
    assertThat(downstream.totalEffects()).isEqualTo(1);
  }

  @Test
  void shouldActOnEveryRequestWhenIgnoringKeysAndStillAnswerALookup() throws Exception {
    downstream.honoursKeys(false);
    downstream.inject("k1", Fault.ERROR_AFTER_EFFECT);

    assertThat(charge("k1", "{}").statusCode()).isEqualTo(500);
    assertThat(charge("k1", "{}").statusCode()).isEqualTo(201);
    assertThat(downstream.effects("k1")).isEqualTo(2);
    assertThat(get("/charges?key=k1").statusCode()).isEqualTo(200);
    assertThat(get("/charges?key=k9").statusCode()).isEqualTo(404);
  }
}
