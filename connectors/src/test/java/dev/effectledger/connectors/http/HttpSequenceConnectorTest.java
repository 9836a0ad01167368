package dev.effectledger.connectors.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The http-sequence connector against a real HTTP server on loopback. */
class HttpSequenceConnectorTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  private HttpServer server;
  private final Map<String, Integer> statusByPath = new ConcurrentHashMap<>();
  private final List<String> keysSeen = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        ex -> {
          ex.getRequestBody().readAllBytes();
          String path = ex.getRequestURI().getPath();
          keysSeen.add(path + " " + ex.getRequestHeaders().getFirst("Idempotency-Key"));
          int status = statusByPath.getOrDefault(path, 200);
          if (status == 0) { // hang past the client's timeout
            try {
              Thread.sleep(3_000);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            status = 200;
          }
          byte[] body =
              ("{\"id\":\"" + path.substring(1) + "_1\"}").getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(status, body.length);
          ex.getResponseBody().write(body);
          ex.close();
        });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private HttpSequenceConnector connector() throws Exception {
    String base = "http://127.0.0.1:" + server.getAddress().getPort();
    JsonNode settings =
        JSON.readTree(
            ("{\"steps\":[{\"url\":\"%s/charge\",\"honoursKeys\":true,\"effectIdPointer\":\"/id\"},"
                    + "{\"url\":\"%s/ship\",\"honoursKeys\":true,\"timeout\":\"1s\"},"
                    + "{\"url\":\"%s/email\",\"honoursKeys\":true}],"
                    + "\"correctiveAction\":\"refund\"}")
                .formatted(base, base, base));
    return HttpSequenceConnector.from("order", settings, Clock.systemUTC());
  }

  private static EffectRequest request() {
    return new EffectRequest("k1", "k1", "acme", "order", "{\"order\":7}", 1, null);
  }

  @Test
  void everyStepSucceedingIsASuccessWithEachStepsResultEachUnderItsOwnKey() throws Exception {
    EffectOutcome outcome = connector().execute(request());

    assertThat(outcome).isInstanceOf(EffectOutcome.Succeeded.class);
    EffectOutcome.Succeeded done = (EffectOutcome.Succeeded) outcome;
    assertThat(done.effectId()).isEqualTo("charge_1");
    assertThat(JSON.readTree(done.resultJson()).path("steps")).hasSize(3);
    assertThat(keysSeen).containsExactly("/charge k1#1", "/ship k1#2", "/email k1#3");
  }

  @Test
  void aFirstStepThatFailsIsTheToolsOutcome() throws Exception {
    statusByPath.put("/charge", 503);

    EffectOutcome outcome = connector().execute(request());

    assertThat(outcome).isInstanceOf(EffectOutcome.Retryable.class);
    assertThat(keysSeen).containsExactly("/charge k1#1");
  }

  @Test
  void aLaterStepRefusedIsAPartialSuccessNamingWhatHappened() throws Exception {
    statusByPath.put("/ship", 422);

    EffectOutcome outcome = connector().execute(request());

    assertThat(outcome).isInstanceOf(EffectOutcome.Partial.class);
    EffectOutcome.Partial partial = (EffectOutcome.Partial) outcome;
    assertThat(partial.correctiveAction()).isEqualTo("refund");
    JsonNode report = JSON.readTree(partial.reportJson());
    assertThat(report.path("done")).hasSize(1);
    assertThat(report.path("failed").path("outcome").asText()).isEqualTo("failed");
    assertThat(report.path("notDone").get(0).path("step").asInt()).isEqualTo(3);
    assertThat(keysSeen).doesNotContain("/email k1#3");
  }

  @Test
  void aLaterStepThatTimesOutIsAPartialSuccessThatMayHaveActed() throws Exception {
    statusByPath.put("/ship", 0);

    EffectOutcome outcome = connector().execute(request());

    assertThat(outcome).isInstanceOf(EffectOutcome.Partial.class);
    JsonNode report = JSON.readTree(((EffectOutcome.Partial) outcome).reportJson());
    assertThat(report.path("failed").path("outcome").asText()).isEqualTo("ambiguous");
    assertThat(((EffectOutcome.Partial) outcome).message()).contains("may have");
  }

  @Test
  void settingsWithoutStepsOrCorrectiveActionAreRefusedNamingBoth() throws Exception {
    assertThatThrownBy(() -> HttpSequenceConnector.check("order", JSON.readTree("{\"steps\":[]}")))
        .hasMessageContaining("settings.steps")
        .hasMessageContaining("settings.correctiveAction");
  }
}
