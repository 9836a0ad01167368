package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAuth;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A Schema Registry that demands credentials, as managed ones do: the Java client and the gateway
 * publish intents when their Kafka settings carry {@code basic.auth.user.info}, and fail closed,
 * publishing nothing, when they do not.
 */
@Tag("integration")
@Timeout(120)
class RegistryAuthIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final String USER_INFO = "app-key:s3cr3t";
  private static SchemaRegistryServer registry;
  private static HttpServer ledgerReady;

  @BeforeAll
  static void start() throws Exception {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 4);
    }
    kafka.createTopics(topics);
    registry =
        SchemaRegistryServer.start()
            .requireAuthorization(
                "Basic "
                    + Base64.getEncoder()
                        .encodeToString(USER_INFO.getBytes(StandardCharsets.UTF_8)));
    ledgerReady = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    ledgerReady.createContext(
        "/readyz",
        ex -> {
          ex.sendResponseHeaders(200, -1);
          ex.close();
        });
    ledgerReady.start();
  }

  @AfterAll
  static void stop() {
    registry.close();
    ledgerReady.stop(0);
  }

  private static Properties settings(boolean withCredentials) {
    Properties p = new Properties();
    p.put("bootstrap.servers", kafka.bootstrapServers());
    if (withCredentials) {
      p.put(RegistryAuth.BASIC_USER_INFO, USER_INFO);
    }
    return p;
  }

  private static ToolCallClient client(boolean withCredentials) {
    return ToolCallClient.builder()
        .kafka(settings(withCredentials))
        .schemaRegistryUrl(registry.url())
        .timeout(Duration.ofSeconds(2))
        .build();
  }

  @Test
  void shouldPublishThroughTheJavaClientWithTheRegistrysCredentials() throws Exception {
    ToolCall call = ToolCall.of(StepContext.of("acme", "run-auth", "s"), "charge_card", "{}");
    try (ToolCallClient client = client(true)) {
      // No ledger runs: a call that was published waits out its timeout.
      assertThat(client.invoke(call).get(30, TimeUnit.SECONDS))
          .isInstanceOf(CallResult.StillRunning.class);
    }
    try (ToolCallClient client = client(false)) {
      assertThatThrownBy(() -> client.invoke(call).get(30, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasStackTraceContaining("refused a request without credentials")
          .hasStackTraceContaining(RegistryAuth.BASIC_USER_INFO);
    }
  }

  @Test
  void shouldPublishThroughTheGatewayWithTheRegistrysCredentialsAndFailClosedWithout()
      throws Exception {
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse(
                """
        tools:
          charge_card:
            class: irreversible
            lane: payments
            connector: http
            settings: {url: "http://127.0.0.1:9/charges"}
        """,
                "registry-auth.yaml");
    HttpClient http = HttpClient.newHttpClient();
    for (boolean withCredentials : new boolean[] {true, false}) {
      try (Gateway gateway =
          Gateway.start(
              GatewayConfig.of(
                  "auth-" + withCredentials,
                  settings(withCredentials),
                  registry.url(),
                  URI.create("http://127.0.0.1:" + ledgerReady.getAddress().getPort()),
                  policies,
                  Credentials.of(
                      Map.of(
                          Credentials.sha256Hex("t"),
                          new Credentials.Caller("c", "acme", Set.of())))))) {
        GatewayReadiness.awaitReady(
            "gateway auth-" + withCredentials, gateway, Duration.ofSeconds(60));
        HttpResponse<String> answer =
            http.send(
                HttpRequest.newBuilder(gateway.uri().resolve("/v1/tools/charge_card/calls"))
                    .header("Authorization", "Bearer t")
                    .header("Content-Type", "application/json")
                    .header("Prefer", "wait=0")
                    .POST(
                        HttpRequest.BodyPublishers.ofString(
                            "{\"arguments\":{\"a\":1},\"step\":{\"run\":\"r\",\"step\":\"s\"}}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(answer.statusCode())
            .as("with credentials %s: %s", withCredentials, answer.body())
            .isEqualTo(withCredentials ? 202 : 503);
      }
    }
  }
}
