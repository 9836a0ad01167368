package dev.effectledger.connectors.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP connector against a real loopback API that counts effects and injects faults. */
class HttpConnectorTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String ARGS = "{\"amount\":1000,\"currency\":\"EUR\"}";

  private CountingDownstream downstream;
  private HttpConnector connector;

  @BeforeEach
  void start() throws IOException {
    downstream = CountingDownstream.start(Duration.ofSeconds(2));
    connector =
        connector(
            "{\"url\":\""
                + downstream.url()
                + "\",\"timeout\":\"400ms\",\"honoursKeys\":true,"
                + "\"effectIdPointer\":\"/id\",\"lookupUrl\":\""
                + downstream.url()
                + "?key={key}\"}");
  }

  @AfterEach
  void stop() {
    downstream.close();
  }

  private static HttpConnector connector(String settingsJson) throws IOException {
    JsonNode settings = JSON.readTree(settingsJson);
    return new HttpConnector(HttpConnectorSettings.from("charge", settings), Clock.systemUTC());
  }

  private static EffectRequest request(String key, String args) {
    return new EffectRequest(key, key, "acme", "charge", args, 1, "trace-1");
  }

  @Test
  void shouldSucceedOnceAndReadEffectIdFromBody() {
    EffectOutcome outcome = connector.execute(request("k1", ARGS));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            EffectOutcome.Succeeded.class,
            s -> {
              assertThat(s.effectId()).startsWith("ch_");
              assertThat(s.resultJson()).contains("\"key\":\"k1\"");
            });
    assertThat(downstream.effects("k1")).isEqualTo(1);
  }

  @Test
  void shouldGetStoredAnswerWithoutSecondEffectWhenKeyRepeats() {
    var first = (EffectOutcome.Succeeded) connector.execute(request("k1", ARGS));
    var second = (EffectOutcome.Succeeded) connector.execute(request("k1", ARGS));

    assertThat(second.effectId()).isEqualTo(first.effectId());
    assertThat(downstream.effects("k1")).isEqualTo(1);
    assertThat(downstream.requests("k1")).isEqualTo(2);
  }

  @Test
  void shouldClassify503BeforeEffectAsRetryableWithRetryAfter() {
    downstream.inject("k1", Fault.UNAVAILABLE_BEFORE_EFFECT);

    assertThat(connector.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Retryable.class,
            r -> {
              assertThat(r.code()).isEqualTo("HTTP_503");
              assertThat(r.retryAfter()).contains(Duration.ZERO);
            });
    assertThat(downstream.effects("k1")).isZero();
  }

  @Test
  void shouldClassify429AsRetryable() {
    downstream.inject("k1", Fault.RATE_LIMITED);

    assertThat(connector.execute(request("k1", ARGS)).code()).isEqualTo("HTTP_429");
  }

  @Test
  void shouldClassifyAnswerHeldPastTimeoutAfterEffectAsAmbiguous() {
    downstream.inject("k1", Fault.HANG_AFTER_EFFECT);

    assertThat(connector.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Ambiguous.class, a -> assertThat(a.code()).isEqualTo("TIMEOUT"));
    assertThat(downstream.effects("k1")).isEqualTo(1);
  }

  @Test
  void shouldClassifyConnectionDroppedAfterEffectAsAmbiguous() {
    downstream.inject("k1", Fault.DROP_AFTER_EFFECT);

    assertThat(connector.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Ambiguous.class, a -> assertThat(a.code()).isEqualTo("CONNECTION_LOST"));
    assertThat(downstream.effects("k1")).isEqualTo(1);
  }

  @Test
  void shouldClassify500AfterEffectAsAmbiguous() {
    downstream.inject("k1", Fault.ERROR_AFTER_EFFECT);

    assertThat(connector.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Ambiguous.class, a -> assertThat(a.code()).isEqualTo("HTTP_500"));
  }

  @Test
  void shouldWaitForSlowSuccess() throws IOException {
    HttpConnector patient =
        connector(
            "{\"url\":\""
                + downstream.url()
                + "\",\"timeout\":\"2s\",\"effectIdPointer\":\"/id\"}");
    downstream.inject("k1", Fault.SLOW_SUCCESS);

    assertThat(patient.execute(request("k1", ARGS))).isInstanceOf(EffectOutcome.Succeeded.class);
  }

  @Test
  void shouldClassify409InProgressAsRetryable() {
    downstream.inject("k1", Fault.CONFLICT_IN_PROGRESS);

    assertThat(connector.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Retryable.class, r -> assertThat(r.code()).isEqualTo("HTTP_409"));
    assertThat(downstream.effects("k1")).isZero();
  }

  @Test
  void shouldClassify422KeyReuseWithOtherParametersAsFailed() {
    connector.execute(request("k1", ARGS));

    assertThat(connector.execute(request("k1", "{\"amount\":5}")))
        .isInstanceOfSatisfying(
            EffectOutcome.Failed.class, f -> assertThat(f.code()).isEqualTo("HTTP_422"));
    assertThat(downstream.effects("k1")).isEqualTo(1);
  }

  @Test
  void shouldClassifyConnectionRefusedAsRetryable() throws IOException {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    HttpConnector refused = connector("{\"url\":\"http://127.0.0.1:" + closedPort + "/charges\"}");

    assertThat(refused.execute(request("k1", ARGS)))
        .isInstanceOfSatisfying(
            EffectOutcome.Retryable.class,
            r -> assertThat(r.code()).isEqualTo("CONNECTION_REFUSED"));
  }

  @Test
  void shouldApplyConfiguredStatusOverrides() throws IOException {
    HttpConnector strict =
        connector("{\"url\":\"" + downstream.url() + "\",\"statuses\":{\"409\":\"failed\"}}");
    downstream.inject("k1", Fault.CONFLICT_IN_PROGRESS);

    assertThat(strict.execute(request("k1", ARGS))).isInstanceOf(EffectOutcome.Failed.class);
  }

  @Test
  void shouldLookUpWhetherKeyActed() {
    var done = (EffectOutcome.Succeeded) connector.execute(request("k1", ARGS));

    assertThat(connector.lookup("k1")).isEqualTo(Lookup.found(done.effectId(), done.resultJson()));
    assertThat(connector.lookup("never").status()).isEqualTo(Lookup.Status.NOT_FOUND);
    assertThat(connector.capabilities().supportsLookup()).isTrue();
  }

  @Test
  void shouldDeclareKeyHonouringOnlyWhenConfigured() throws IOException {
    assertThat(connector.capabilities().honoursKeys()).isTrue();
    assertThat(connector("{\"url\":\"" + downstream.url() + "\"}").capabilities().safeToRepeat())
        .isFalse();
  }

  @Test
  void shouldExpandUrlTemplateWithEncodedValues() {
    String url =
        HttpConnector.expand(
            "http://h/t/{tenant}/c/{arg:/customer/id}?k={key}",
            new EffectRequest(
                "k 1/x", "k", "acme", "charge", "{\"customer\":{\"id\":\"cus 7\"}}", 1, null));

    assertThat(url).isEqualTo("http://h/t/acme/c/cus%207?k=k%201%2Fx");
  }

  @Test
  void shouldListEverySettingsProblem() {
    assertThatThrownBy(
            () ->
                connector(
                    "{\"method\":\"FETCH\",\"timeout\":\"soon\",\"statuses\":{\"409\":\"maybe\"},\"colour\":1}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tools.charge.settings.url: missing")
        .hasMessageContaining("tools.charge.settings.method: 'FETCH' is not allowed")
        .hasMessageContaining("tools.charge.settings.timeout: 'soon' is not a positive duration")
        .hasMessageContaining("tools.charge.settings.statuses.409: 'maybe' is not allowed")
        .hasMessageContaining("tools.charge.settings.colour: unknown field");
  }

  @Test
  void shouldTraceTheDownstreamUrlWithoutItsQueryOrUserInfo() {
    assertThat(
            HttpConnector.withoutSecrets(
                java.net.URI.create("https://user:pw@api.example.com:8443/v1/charges?api_key=s3")))
        .isEqualTo("https://api.example.com:8443/v1/charges");
    assertThat(HttpConnector.withoutSecrets(java.net.URI.create("http://127.0.0.1/charges")))
        .isEqualTo("http://127.0.0.1/charges");
  }
}
