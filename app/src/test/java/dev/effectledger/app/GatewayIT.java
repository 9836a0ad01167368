package dev.effectledger.app;

import static dev.effectledger.app.GatewayPipeline.call;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.FairShare;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.IdentityProviderProcess;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway over loopback HTTP in front of the real ledger (with its HTTP endpoint), a real
 * executor and a payment API that counts effects; two gateway instances. Every status code the API
 * documents, each response checked against docs/openapi.yaml.
 */
@Tag("integration")
@Timeout(300)
class GatewayIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final String TOKEN = GatewayPipeline.TOKEN;
  private static final String NARROW_TOKEN = GatewayPipeline.NARROW_TOKEN;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final OpenApiContract CONTRACT = new OpenApiContract();
  private static final String CALLS = "/v1/tools/{tool}/calls";
  private static final String CALL = "/v1/calls/{key}";

  private static GatewayPipeline pipeline;
  private static CountingDownstream payments;
  private static CountingDownstream risky;
  private static Gateway gatewayA;
  private static Gateway gatewayB;
  private static IdentityProviderProcess idp;
  private static Gateway tokens; // takes access tokens from idp besides the static ones
  private static final String AUDIENCE = "https://gateway.effectledger.test";
  private static final String FLOOD_TOKEN = "token-flood"; // tenant flood: 1 call a second
  private static final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    pipeline = GatewayPipeline.start(kafka.bootstrapServers(), "gateway-it");
    payments = pipeline.payments;
    risky = pipeline.risky;
    gatewayA = Gateway.start(pipeline.gatewayConfig("gw-a", pipeline.ledgerUrl()));
    gatewayB = Gateway.start(pipeline.gatewayConfig("gw-b", pipeline.ledgerUrl()));
    idp = IdentityProviderProcess.start();
    GatewayConfig withTokens = pipeline.gatewayConfig("gw-tokens", pipeline.ledgerUrl());
    tokens =
        Gateway.start(
            withTokens
                .withFairShare(
                    FairShare.of(
                        FairShare.Limits.NONE, Map.of("flood", new FairShare.Limits(1, 1, 0, 0))))
                .withCredentials(
                    Credentials.of(
                            Map.of(
                                Credentials.sha256Hex(TOKEN),
                                new Credentials.Caller("acme-agents", "acme", Set.of()),
                                Credentials.sha256Hex(FLOOD_TOKEN),
                                new Credentials.Caller("flood", "flood", Set.of())))
                        .withTokens(
                            AccessTokens.of(
                                new AuthSettings(
                                    idp.issuer(),
                                    AUDIENCE,
                                    null,
                                    AuthSettings.TENANT_CLAIM,
                                    AuthSettings.ROLES_CLAIM,
                                    AuthSettings.READ_SCOPE,
                                    AuthSettings.WRITE_SCOPE,
                                    // 1 s, not the default 60 s: the expired-token case would wait
                                    // a
                                    // minute otherwise
                                    Duration.ofSeconds(1))))));
    GatewayReadiness.awaitReady("gateway gw-a", gatewayA, Duration.ofSeconds(90));
    GatewayReadiness.awaitReady("gateway gw-b", gatewayB, Duration.ofSeconds(90));
    GatewayReadiness.awaitReady("gateway gw-tokens", tokens, Duration.ofSeconds(90));
  }

  @AfterAll
  static void stop() throws Exception {
    gatewayA.close();
    gatewayB.close();
    if (tokens != null) {
      tokens.close();
    }
    pipeline.close();
    if (idp != null) {
      idp.close();
    }
  }

  @Test
  void shouldTakeAccessTokensFromTheIdentityProviderWithTheTenantOfTheirClaim() throws Exception {
    String acme = idp.clientToken("acme-agent", "acme-secret", AUDIENCE, "tools:read tools:write");
    String globex =
        idp.clientToken("globex-agent", "globex-secret", AUDIENCE, "tools:read tools:write");
    String body = call("run-jwt", "pay", "{\"amount\":7,\"to\":\"cus_jwt\"}");

    HttpResponse<String> first =
        post(tokens, "charge_card", body, "Authorization", "Bearer " + acme);
    HttpResponse<String> asStatic = post(tokens, "charge_card", body); // the static token, acme too
    HttpResponse<String> theirs =
        post(tokens, "charge_card", body, "Authorization", "Bearer " + globex);

    assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
    assertThat(json(first).get("replayed").asBoolean()).isFalse();
    assertThat(json(asStatic).get("key"))
        .as("one tenant, one key")
        .isEqualTo(json(first).get("key"));
    assertThat(json(asStatic).get("replayed").asBoolean()).isTrue();
    assertThat(theirs.statusCode()).as(theirs.body()).isEqualTo(200);
    assertThat(json(theirs).get("key")).as("globex's own key").isNotEqualTo(json(first).get("key"));
    assertThat(json(theirs).get("replayed").asBoolean()).isFalse();
    assertThat(payments.effects(json(first).get("key").asText())).isEqualTo(1);
    assertThat(payments.effects(json(theirs).get("key").asText())).isEqualTo(1);
  }

  @Test
  void shouldRefuseAnAccessTokenThatIsExpiredForAnotherAudienceOrWithoutTheScope()
      throws Exception {
    String body = call("run-jwt-refused", "pay", "{\"amount\":8,\"to\":\"cus_jwt\"}");
    String brief = idp.clientToken("acme-brief", "brief-secret", AUDIENCE, "tools:write");
    String reader = idp.clientToken("acme-reader", "reader-secret", AUDIENCE, "tools:read");
    String elsewhere =
        idp.clientToken("acme-agent", "acme-secret", "https://other.test", "tools:write");

    assertRefused(
        post(tokens, "charge_card", body, "Authorization", "Bearer " + elsewhere),
        "WRONG_AUDIENCE");
    assertRefused(post(tokens, "charge_card", body, "Authorization", "Bearer x.y.z"), "MALFORMED");
    HttpResponse<String> none = post(tokens, "charge_card", body, "Authorization", "");
    assertThat(none.statusCode()).isEqualTo(401);
    HttpResponse<String> readOnly =
        post(tokens, "charge_card", body, "Authorization", "Bearer " + reader);
    assertThat(readOnly.statusCode()).isEqualTo(403);
    assertThat(readOnly.headers().firstValue("WWW-Authenticate").orElseThrow())
        .contains("error=\"insufficient_scope\"")
        .contains("scope=\"tools:write\"");
    HttpResponse<String> listed =
        http.send(
            HttpRequest.newBuilder(tokens.uri().resolve("/v1/tools"))
                .header("Authorization", "Bearer " + reader)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(listed.statusCode()).as("reading needs only tools:read").isEqualTo(200);
    await("the brief token expires")
        .atMost(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () ->
                post(tokens, "charge_card", body, "Authorization", "Bearer " + brief).statusCode()
                    == 401);
    assertRefused(post(tokens, "charge_card", body, "Authorization", "Bearer " + brief), "EXPIRED");
    HttpResponse<String> attach = getCall(tokens, "v1:nothing", "Authorization", "Bearer " + brief);
    assertThat(attach.statusCode()).as("attaching too").isEqualTo(401);
  }

  @Test
  void shouldAnswer429WithRetryAfterOverATenantsShareAndPublishNothing() throws Exception {
    String first = call("run-flood", "pay-1", "{\"amount\":1,\"to\":\"cus_flood\"}");
    String second = call("run-flood", "pay-2", "{\"amount\":2,\"to\":\"cus_flood\"}");

    HttpResponse<String> admitted =
        post(tokens, "charge_card", first, "Authorization", "Bearer " + FLOOD_TOKEN);
    java.util.concurrent.Callable<HttpResponse<String>> secondCall =
        () ->
            post(
                tokens,
                "charge_card",
                second,
                "Authorization",
                "Bearer " + FLOOD_TOKEN,
                "Idempotency-Key",
                "flood-over-2");
    HttpResponse<String> over = secondCall.call();
    HttpResponse<String> acme =
        post(
            tokens,
            "charge_card",
            call("run-flood", "pay-3", "{\"amount\":3,\"to\":\"cus_flood\"}"));

    assertThat(admitted.statusCode()).as(admitted.body()).isEqualTo(200);
    assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
    assertThat(over.headers().firstValue("Retry-After")).contains("1");
    assertThat(json(over).get("detail").asText())
        .contains("tenant flood is over its limit of 1 calls a second")
        .contains("nothing was published");
    assertThat(acme.statusCode()).as("another tenant's calls go on").isEqualTo(200);
    Thread.sleep(1_100); // its Retry-After
    HttpResponse<String> later = secondCall.call();
    assertThat(later.statusCode()).as(later.body()).isEqualTo(200);
    assertThat(json(later).get("replayed").asBoolean())
        .as("the refused call was never published: this one is the first")
        .isFalse();
    assertThat(payments.effects("flood-over-2")).isEqualTo(1);
  }

  private static void assertRefused(HttpResponse<String> refused, String reason) throws Exception {
    assertThat(refused.statusCode()).as(reason).isEqualTo(401);
    assertThat(refused.headers().firstValue("WWW-Authenticate").orElseThrow())
        .startsWith("Bearer realm=\"effectledger\"")
        .contains("error=\"invalid_token\"")
        .contains("error_description=\"" + reason + ":");
    assertThat(json(refused).get("detail").asText()).startsWith(reason + ":");
  }

  // --- helpers ---------------------------------------------------------------------------------

  private static HttpResponse<String> post(
      Gateway gateway, String tool, String body, String... headers) throws Exception {
    return post(http, gateway, tool, body, headers);
  }

  private static HttpResponse<String> post(
      HttpClient client, Gateway gateway, String tool, String body, String... headers)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(gateway.uri().resolve("/v1/tools/" + tool + "/calls"))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + TOKEN)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      request.setHeader(headers[i], headers[i + 1]);
    }
    HttpResponse<String> response =
        client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    CONTRACT.check("POST", CALLS, response);
    return response;
  }

  private static HttpResponse<String> getCall(Gateway gateway, String key, String... headers)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(
                gateway.uri().resolve("/v1/calls/" + java.net.URLEncoder.encode(key, "UTF-8")))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + TOKEN)
            .GET();
    for (int i = 0; i < headers.length; i += 2) {
      request.setHeader(headers[i], headers[i + 1]);
    }
    HttpResponse<String> response =
        http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    CONTRACT.check("GET", CALL, response);
    return response;
  }

  private static JsonNode json(HttpResponse<String> response) throws IOException {
    return JSON.readTree(response.body());
  }

  @Test
  void shouldCountTheEntriesAShrunkWindowWouldExpireOnTheProcessors(
      @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    String body = call("run-diff", "charge", "{\"amount\":3,\"to\":\"cus_diff\"}");
    assertThat(post(gatewayA, "charge_card", body).statusCode()).isEqualTo(200);
    Path old = Files.writeString(dir.resolve("old.yaml"), pipeline.toolsYaml);
    Path shrunk =
        Files.writeString(
            dir.resolve("new.yaml"),
            pipeline.toolsYaml.replace(
                "  charge_card:\n    class: irreversible\n",
                "  charge_card:\n    class: irreversible\n    window: 1s\n"));
    assertThat(Files.readString(shrunk)).contains("window: 1s");

    // completed more than a second ago: a 1-second window would expire it, and the others with it
    await("`tools diff` counts the charge_card entries a 1 s window expires")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              CommandRun diff =
                  CommandRun.of(
                      "tools",
                      "diff",
                      old.toString(),
                      shrunk.toString(),
                      "--processor",
                      pipeline.ledgerUrl().toString(),
                      "--token",
                      GatewayPipeline.LEDGER_TOKEN);
              assertThat(diff.status()).isEqualTo(1);
              String line =
                  diff.out()
                      .lines()
                      .filter(l -> l.contains("charge_card: window 30d -> 1s"))
                      .findFirst()
                      .orElseThrow();
              java.util.regex.Matcher counted =
                  java.util.regex.Pattern.compile("(\\d+) of (\\d+) settled entries expire at once")
                      .matcher(line);
              assertThat(counted.find()).as(line).isTrue();
              assertThat(Long.parseLong(counted.group(1))).as(line).isPositive();
              assertThat(Long.parseLong(counted.group(1)))
                  .isLessThanOrEqualTo(Long.parseLong(counted.group(2)));
              assertThat(line).contains("(1 processor(s))");
            });
    // a window as long as the old one expires nothing
    HttpResponse<String> none =
        http.send(
            HttpRequest.newBuilder(
                    pipeline.ledgerUrl().resolve("/v1/tools/charge_card/expiry?window=30d"))
                .header("Authorization", "Bearer " + GatewayPipeline.LEDGER_TOKEN)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(json(none).path("expiringAtOnce").asLong()).isZero();
    assertThat(json(none).path("settled").asLong()).isPositive();
  }

  /** Waits for a request of {@code key} to reach the payment API (where it is held). */
  private static void awaitRequestReachesTheApi(String key) {
    await("a request of " + key + " reaches the payment API")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(payments.requests(key))
                    .as("requests of %s", key)
                    .isGreaterThanOrEqualTo(1));
  }

  /** Records on tool-intents so far, over every partition. */
  private static long intentsPublished() throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      Set<TopicPartition> partitions =
          admin
              .describeTopics(List.of(Topics.INTENTS))
              .allTopicNames()
              .get()
              .get(Topics.INTENTS)
              .partitions()
              .stream()
              .map(p -> new TopicPartition(Topics.INTENTS, p.partition()))
              .collect(Collectors.toSet());
      return admin
          .listOffsets(
              partitions.stream().collect(Collectors.toMap(p -> p, p -> OffsetSpec.latest())))
          .all()
          .get()
          .values()
          .stream()
          .mapToLong(o -> o.offset())
          .sum();
    }
  }

  // --- 200, replay, the retry layers ---------------------------------------------------------

  @Test
  void shouldListTheToolsACredentialMayCallWithTheirClassAndKeyRules() throws Exception {
    HttpResponse<String> all = listTools(TOKEN);
    CONTRACT.check("GET", "/v1/tools", all);
    assertThat(all.statusCode()).isEqualTo(200);
    JsonNode tools = JSON.readTree(all.body()).get("tools");
    assertThat(tools.findValuesAsText("name"))
        .containsExactly("charge_card", "refund", "reserve", "send_email", "transfer");
    JsonNode charge = tools.get(0);
    assertThat(charge.get("class").asText()).isEqualTo("irreversible");
    assertThat(charge.get("ledgered").asBoolean()).isTrue();
    assertThat(charge.get("onAmbiguous").asText()).isEqualTo("hold");
    assertThat(charge.get("key").toString())
        .isEqualTo("{\"ignore\":[\"/reason\"],\"require\":[\"/amount\",\"/to\"]}");
    assertThat(all.body()).as("connector settings are not listed").doesNotContain("http://");

    HttpResponse<String> narrow = listTools(NARROW_TOKEN);
    assertThat(JSON.readTree(narrow.body()).get("tools").findValuesAsText("name"))
        .containsExactly("send_email");

    HttpResponse<String> anonymous = listTools(null);
    CONTRACT.check("GET", "/v1/tools", anonymous);
    assertThat(anonymous.statusCode()).isEqualTo(401);
  }

  private static HttpResponse<String> listTools(String token) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(gatewayA.uri().resolve("/v1/tools")).timeout(Duration.ofSeconds(30));
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return http.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void shouldAnswer200WithTheResultAndReplayItWithoutASecondEffect() throws Exception {
    String body = call("run-200", "pay", "{\"amount\":100,\"to\":\"cus_1\"}");
    HttpResponse<String> first = post(gatewayA, "charge_card", body);
    assertThat(first.statusCode()).isEqualTo(200);
    JsonNode call = json(first);
    assertThat(call.get("status").asText()).isEqualTo("SUCCEEDED");
    assertThat(call.get("replayed").asBoolean()).isFalse();
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    String key = call.get("key").asText();
    assertThat(key).startsWith("v1:");

    HttpResponse<String> again = post(gatewayB, "charge_card", body);
    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(json(again).get("effectId")).isEqualTo(call.get("effectId"));
    assertThat(json(again).get("result")).isEqualTo(call.get("result"));
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldCollapseTheFourRetryLayersOverHttpIntoOneEffect() throws Exception {
    String args = "{\"amount\":250,\"to\":\"cus_4\",\"reason\":\"invoice 4\"}";
    String body = call("run-layers", "pay-invoice", args);
    // Layer 2, the tool wrapper: the same call twice at once, on two connections.
    HttpClient other = HttpClient.newHttpClient();
    CompletableFuture<HttpResponse<String>> a =
        CompletableFuture.supplyAsync(() -> unchecked(() -> post(gatewayA, "charge_card", body)));
    CompletableFuture<HttpResponse<String>> b =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> post(other, gatewayA, "charge_card", body)));
    JsonNode original = json(a.get());
    assertThat(a.get().statusCode()).isEqualTo(200);
    assertThat(b.get().statusCode()).isEqualTo(200);
    assertThat(json(b.get()).get("effectId")).isEqualTo(original.get("effectId"));
    assertThat(
            List.of(
                a.get().headers().firstValue("Idempotent-Replayed").orElse("false"),
                b.get().headers().firstValue("Idempotent-Replayed").orElse("false")))
        .as("one of the two sent at once caused the effect; the other joined it or came after it")
        .containsExactlyInAnyOrder("false", "true");
    // Layer 1, the HTTP client: the same request again.
    assertThat(post(gatewayA, "charge_card", body).statusCode()).isEqualTo(200);
    // Layer 3, the model re-emits the call: arguments reordered, reformatted, reason reworded.
    HttpResponse<String> reemitted =
        post(
            gatewayB,
            "charge_card",
            call(
                "run-layers",
                "pay-invoice",
                "{ \"reason\": \"paying invoice four as asked\", \"to\": \"cus_4\", \"amount\": 250.0 }"));
    assertThat(reemitted.statusCode()).isEqualTo(200);
    assertThat(reemitted.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(json(reemitted).get("effectId")).isEqualTo(original.get("effectId"));
    // Layer 4, the orchestrator replays the step after a crash: a new client, a new connection.
    HttpResponse<String> replayed = post(HttpClient.newHttpClient(), gatewayB, "charge_card", body);
    assertThat(json(replayed).get("effectId")).isEqualTo(original.get("effectId"));
    assertThat(payments.effects(original.get("key").asText())).isEqualTo(1);
  }

  // --- keys, conflicts, in flight -----------------------------------------------------------

  @Test
  void shouldTakeTheCallersIdempotencyKeyAndAnswer422WhenItIsReusedWithOtherArguments()
      throws Exception {
    String body = call("run-422", "pay", "{\"amount\":5,\"to\":\"cus_5\"}");
    HttpResponse<String> first =
        post(gatewayA, "charge_card", body, "Idempotency-Key", "\"order-422\"");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(json(first).get("key").asText()).isEqualTo("order-422");

    HttpResponse<String> reused =
        post(
            gatewayA,
            "charge_card",
            call("run-422", "pay", "{\"amount\":6,\"to\":\"cus_5\"}"),
            "Idempotency-Key",
            "\"order-422\"");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(json(reused).get("code").asText()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(payments.effects("order-422")).isEqualTo(1);
  }

  @Test
  void shouldAnswer409ToADuplicateWhileTheFirstIsInFlightOnARefuseTool() throws Exception {
    String key = "email-409";
    payments.holdBeforeEffect(key);
    String body = call("run-409", "notify", "{\"to\":\"a@example.com\"}");
    CompletableFuture<HttpResponse<String>> first =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> post(gatewayA, "send_email", body, "Idempotency-Key", key)));
    awaitRequestReachesTheApi(key);

    HttpResponse<String> duplicate = post(gatewayA, "send_email", body, "Idempotency-Key", key);
    assertThat(duplicate.statusCode()).isEqualTo(409);
    assertThat(json(duplicate).get("code").asText()).isEqualTo("DUPLICATE_IN_FLIGHT");

    payments.releaseHeld(key);
    assertThat(first.get().statusCode())
        .as("the first call is not answered by its duplicate's refusal")
        .isEqualTo(200);
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldAttachADuplicateToTheCallInFlightOnACoalesceToolAcrossTwoInstances() throws Exception {
    String key = "charge-coalesce";
    payments.holdBeforeEffect(key);
    String body = call("run-coalesce", "pay", "{\"amount\":7,\"to\":\"cus_7\"}");
    CompletableFuture<HttpResponse<String>> viaA =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> post(gatewayA, "charge_card", body, "Idempotency-Key", key)));
    awaitRequestReachesTheApi(key);
    CompletableFuture<HttpResponse<String>> viaB =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> post(gatewayB, "charge_card", body, "Idempotency-Key", key)));
    CompletableFuture<HttpResponse<String>> againViaA =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> post(gatewayA, "charge_card", body, "Idempotency-Key", key)));
    // both duplicates reach the ledger while the first is held: it attaches each (IN_FLIGHT)
    try (var audit =
        new TopicCollector<>(
            kafka.bootstrapServers(),
            Topics.AUDIT,
            new RegistryAvroSerde<>(
                SchemaRegistries.forUrl(pipeline.registry()), AuditEvent.class))) {
      await("the ledger attaches both duplicates of " + key + " to the held call")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                List<AuditType> decisions =
                    audit.records.stream()
                        .map(r -> r.value())
                        .filter(e -> e.getIdempotencyKey().equals(key))
                        .map(AuditEvent::getType)
                        .toList();
                assertThat(decisions.stream().filter(t -> t == AuditType.IN_FLIGHT).count())
                    .as("IN_FLIGHT decisions on %s; all its decisions: %s", key, decisions)
                    .isGreaterThanOrEqualTo(2);
              });
    }
    payments.releaseHeld(key);

    JsonNode a = json(viaA.get());
    assertThat(viaA.get().statusCode()).isEqualTo(200);
    assertThat(viaB.get().statusCode()).isEqualTo(200);
    assertThat(againViaA.get().statusCode()).isEqualTo(200);
    assertThat(json(viaB.get()).get("effectId")).isEqualTo(a.get("effectId"));
    assertThat(json(againViaA.get()).get("effectId")).isEqualTo(a.get("effectId"));
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldAnswer202WithLocationAtTheWaitBoundAndLetAnotherInstanceAttach() throws Exception {
    String key = "charge-202";
    payments.holdBeforeEffect(key);
    HttpResponse<String> early =
        post(
            gatewayA,
            "charge_card",
            call("run-202", "pay", "{\"amount\":8,\"to\":\"cus_8\"}"),
            "Idempotency-Key",
            key,
            "Prefer",
            "wait=1");
    assertThat(early.statusCode()).isEqualTo(202);
    assertThat(early.headers().firstValue("Location"))
        .hasValueSatisfying(l -> assertThat(l).matches("/v1/calls/charge-202\\?intent=[0-9]+"));
    assertThat(json(early).get("status").asText()).isEqualTo("IN_FLIGHT");

    HttpResponse<String> stillRunning = getCall(gatewayB, key, "Prefer", "wait=1");
    assertThat(stillRunning.statusCode()).isEqualTo(202);

    int waitingBefore = gatewayB.waitingCalls();
    CompletableFuture<HttpResponse<String>> attached =
        CompletableFuture.supplyAsync(
            () -> unchecked(() -> getCall(gatewayB, key, "Prefer", "wait=20")));
    await("the GET on gw-b attached to " + key + " (waiting for its answer)")
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () ->
                assertThat(gatewayB.waitingCalls())
                    .as("calls waiting on gw-b (%s before the GET)", waitingBefore)
                    .isEqualTo(waitingBefore + 1));
    payments.releaseHeld(key);
    assertThat(attached.get().statusCode()).isEqualTo(200);
    assertThat(attached.get().headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(json(attached.get()).get("status").asText()).isEqualTo("SUCCEEDED");
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldLetAClientThatDisconnectedMidWaitAttachFromAnotherInstance() throws Exception {
    String key = "charge-disconnect";
    payments.holdBeforeEffect(key);
    HttpClient impatient = HttpClient.newHttpClient();
    HttpRequest request =
        HttpRequest.newBuilder(gatewayA.uri().resolve("/v1/tools/charge_card/calls"))
            .timeout(Duration.ofSeconds(1))
            .header("Authorization", "Bearer " + TOKEN)
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    call("run-disc", "pay", "{\"amount\":9,\"to\":\"cus_9\"}")))
            .build();
    try {
      impatient.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (java.net.http.HttpTimeoutException expected) {
      // the client gave up and dropped the connection mid-wait
    }
    payments.releaseHeld(key);
    HttpResponse<String> resumed = getCall(gatewayB, key, "Prefer", "wait=20");
    assertThat(resumed.statusCode()).isEqualTo(200);
    assertThat(payments.effects(key)).isEqualTo(1);
    await("the abandoned call on gw-a stops waiting")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(metrics(gatewayA))
                    .as("the abandoned call stopped waiting")
                    .contains("gateway_calls_waiting 0.0"));
  }

  /** The gateway's waiting calls, from its /metrics. */
  private static double waiting(Gateway gateway) throws Exception {
    return waiting(gateway, http);
  }

  private static double waiting(Gateway gateway, HttpClient client) throws Exception {
    return client
        .send(
            HttpRequest.newBuilder(gateway.uri().resolve("/metrics")).build(),
            HttpResponse.BodyHandlers.ofString())
        .body()
        .lines()
        .filter(l -> l.startsWith("gateway_calls_waiting "))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1)))
        .findFirst()
        .orElseThrow();
  }

  private static String rawPost(String key, String body) {
    return "POST /v1/tools/charge_card/calls HTTP/1.1\r\n"
        + "Host: 127.0.0.1\r\n"
        + "Authorization: Bearer "
        + TOKEN
        + "\r\nContent-Type: application/json\r\n"
        + "Idempotency-Key: "
        + key
        + "\r\nPrefer: wait=50\r\n"
        + "Content-Length: "
        + body.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
        + "\r\n\r\n"
        + body;
  }

  @Test
  void shouldStopWaitingAtOnceForAnHttp11CallerThatHungUp() throws Exception {
    // Jetty does not read an HTTP/1.1 connection while its request is handled: before the hang-up
    // watch, this call waited for its answer until the wait bound (50 s) although no one was there.
    String key = "charge-hang-up";
    payments.holdBeforeEffect(key);
    double before = waiting(gatewayA);
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gatewayA.port())) {
      socket
          .getOutputStream()
          .write(
              rawPost(key, call("run-hang-up", "pay", "{\"amount\":11,\"to\":\"cus_11\"}"))
                  .getBytes(java.nio.charset.StandardCharsets.UTF_8));
      await("the raw HTTP/1.1 call waits on gw-a")
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(waiting(gatewayA))
                      .as("gateway_calls_waiting on gw-a")
                      .isEqualTo(before + 1));
    } // the caller hangs up mid-wait
    await("the call whose caller hung up stops waiting on gw-a")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(waiting(gatewayA))
                    .as("the call whose caller hung up stopped waiting")
                    .isEqualTo(before));
    assertThat(metrics(gatewayA))
        .contains("gateway_requests_total{status=\"abandoned\",tool=\"charge_card\"}");
    payments.releaseHeld(key);
    HttpResponse<String> resumed = getCall(gatewayB, key, "Prefer", "wait=20");
    assertThat(resumed.statusCode()).as("the effect went on").isEqualTo(200);
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldStopWaitingAtOnceForAnHttp11CallerThatHungUpOnItsAttach() throws Exception {
    String key = "charge-hang-up-attach";
    payments.holdBeforeEffect(key);
    HttpResponse<String> first =
        post(
            gatewayA,
            "charge_card",
            call("run-hang-up-attach", "pay", "{\"amount\":15,\"to\":\"cus_15\"}"),
            "Idempotency-Key",
            key,
            "Prefer",
            "wait=0");
    assertThat(first.statusCode()).isEqualTo(202);
    double before = waiting(gatewayB);
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gatewayB.port())) {
      socket
          .getOutputStream()
          .write(
              ("GET /v1/calls/"
                      + key
                      + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                      + TOKEN
                      + "\r\nPrefer: wait=50\r\n\r\n")
                  .getBytes(java.nio.charset.StandardCharsets.UTF_8));
      await("the raw HTTP/1.1 attach waits on gw-b")
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(waiting(gatewayB))
                      .as("gateway_calls_waiting on gw-b")
                      .isEqualTo(before + 1));
    } // the caller hangs up mid-wait
    await("the attach whose caller hung up stops waiting on gw-b")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(waiting(gatewayB))
                    .as("the attach whose caller hung up stopped waiting")
                    .isEqualTo(before));
    payments.releaseHeld(key);
    HttpResponse<String> resumed = getCall(gatewayA, key, "Prefer", "wait=20");
    assertThat(resumed.statusCode()).isEqualTo(200);
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldAnswerAWaitingCallAndCloseTheConnectionWhenTheCallerPipelinedAnother()
      throws Exception {
    String key = "charge-pipelined";
    payments.holdBeforeEffect(key);
    double before = waiting(gatewayA);
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gatewayA.port())) {
      socket.setSoTimeout(30_000);
      var out = socket.getOutputStream();
      out.write(
          rawPost(key, call("run-pipelined", "pay", "{\"amount\":12,\"to\":\"cus_12\"}"))
              .getBytes(java.nio.charset.StandardCharsets.UTF_8));
      await("the pipelined raw call waits on gw-a")
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(waiting(gatewayA))
                      .as("gateway_calls_waiting on gw-a")
                      .isEqualTo(before + 1));
      // the next request on the same connection before the first is answered
      out.write(
          "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
              .getBytes(java.nio.charset.StandardCharsets.UTF_8));
      // No hook shows the gateway has seen the pipelined request: the first call must keep
      // waiting throughout half a second after it was sent.
      await("the first call still waits after the pipelined request, for 500 ms")
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () ->
                  assertThat(waiting(gatewayA))
                      .as("the first call still waits (gateway_calls_waiting on gw-a)")
                      .isEqualTo(before + 1));
      payments.releaseHeld(key);
      String answer =
          new String(
              socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(answer)
          .as("the first call answered, then the connection closed (read to its end)")
          .startsWith("HTTP/1.1 200 ")
          .containsIgnoringCase("Connection: close")
          .contains("\"status\":\"SUCCEEDED\"");
      assertThat(answer).as("nothing after the first answer").containsOnlyOnce("HTTP/1.1 ");
    }
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  // --- HTTP/2 ---------------------------------------------------------------------------------

  @Test
  void shouldLetManyCallsWaitAsStreamsOnOneHttp2Connection() throws Exception {
    // h2c by prior knowledge, as HTTP/2 clients speak it to a plain port; one connection at most
    int calls = 40;
    HttpClient replayer = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    org.eclipse.jetty.client.HttpClient h2 =
        new org.eclipse.jetty.client.HttpClient(
            new org.eclipse.jetty.http2.client.transport.HttpClientTransportOverHTTP2(
                new org.eclipse.jetty.http2.client.HTTP2Client()));
    h2.setMaxConnectionsPerDestination(1);
    h2.start();
    try {
      List<CompletableFuture<org.eclipse.jetty.client.ContentResponse>> answers =
          new java.util.ArrayList<>();
      for (int i = 0; i < calls; i++) {
        String key = "h2-stream-" + i;
        payments.holdBeforeEffect(key);
        var listener =
            new org.eclipse.jetty.client.CompletableResponseListener(
                h2.newRequest(gatewayA.uri().resolve("/v1/tools/charge_card/calls"))
                    .method("POST")
                    .headers(
                        h ->
                            h.put("Authorization", "Bearer " + TOKEN)
                                .put("Idempotency-Key", key)
                                .put("Prefer", "wait=30"))
                    .timeout(60, java.util.concurrent.TimeUnit.SECONDS)
                    .body(
                        new org.eclipse.jetty.client.StringRequestContent(
                            "application/json",
                            call("run-h2", "pay-" + i, "{\"amount\":" + i + ",\"to\":\"c\"}"))));
        answers.add(listener.send());
      }
      await("all " + calls + " HTTP/2 calls wait on gw-a at once")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(metrics(gatewayA))
                      .as("every call waits at once, each a stream of the one connection")
                      .contains("gateway_calls_waiting " + calls + ".0"));
      for (int i = 0; i < calls; i++) {
        payments.releaseHeld("h2-stream-" + i);
      }
      for (int i = 0; i < calls; i++) {
        var answer = answers.get(i).get(60, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(answer.getVersion()).isEqualTo(org.eclipse.jetty.http.HttpVersion.HTTP_2);
        assertThat(answer.getStatus()).as(answer.getContentAsString()).isEqualTo(200);
        assertThat(JSON.readTree(answer.getContentAsString()).get("status").asText())
            .isEqualTo("SUCCEEDED");
        assertThat(payments.effects("h2-stream-" + i)).isEqualTo(1);
      }
      // the same call again over HTTP/1.1 is the same call: replayed, no second effect
      HttpResponse<String> replay =
          post(
              replayer,
              gatewayB,
              "charge_card",
              call("run-h2", "pay-0", "{\"amount\":0,\"to\":\"c\"}"),
              "Idempotency-Key",
              "h2-stream-0");
      assertThat(replay.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
      assertThat(replay.statusCode()).isEqualTo(200);
      assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(payments.effects("h2-stream-0")).isEqualTo(1);
    } finally {
      h2.stop();
    }
  }

  @Test
  void shouldFindACallByItsLocationWhateverCharactersTheCallersKeyHas() throws Exception {
    String key = "order 7+x/%41";
    payments.holdBeforeEffect(key);
    HttpResponse<String> early =
        post(
            gatewayA,
            "charge_card",
            call("run-location", "pay", "{\"amount\":14,\"to\":\"cus_14\"}"),
            "Idempotency-Key",
            "\"" + key + "\"",
            "Prefer",
            "wait=1");
    assertThat(early.statusCode()).isEqualTo(202);
    payments.releaseHeld(key);
    HttpRequest follow =
        HttpRequest.newBuilder(
                gatewayB.uri().resolve(early.headers().firstValue("Location").orElseThrow()))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + TOKEN)
            .header("Prefer", "wait=20")
            .build();
    HttpResponse<String> resumed = http.send(follow, HttpResponse.BodyHandlers.ofString());
    CONTRACT.check("GET", CALL, resumed);
    assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
    assertThat(json(resumed).get("key").asText()).isEqualTo(key);
    assertThat(payments.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldFindACallAttachedToTheMomentItsPostAnswered202() throws Exception {
    // The GET goes to the other instance right after the POST's 202 (wait=0): the intent may not
    // have reached the ledger yet, which must not make the call unknown (it did, in ClientsIT).
    for (int i = 0; i < 10; i++) {
      HttpResponse<String> early =
          post(
              gatewayA,
              "charge_card",
              call(
                  "run-early-attach", "pay-" + i, "{\"amount\":" + (20 + i) + ",\"to\":\"cus_9\"}"),
              "Prefer",
              "wait=0");
      assertThat(early.statusCode()).as(early.body()).isEqualTo(202);
      String key = json(early).get("key").asText();

      HttpResponse<String> attached = getCall(gatewayB, key, "Prefer", "wait=20");

      assertThat(attached.statusCode()).as("attempt %d: %s", i, attached.body()).isEqualTo(200);
      assertThat(payments.effects(key)).isEqualTo(1);
    }
  }

  @Test
  void shouldAnswer404ForAKeyWithNoCallOnceItStayedUnknown() throws Exception {
    long started = System.nanoTime();
    HttpResponse<String> unknown = getCall(gatewayA, "no-such-call-waited", "Prefer", "wait=20");
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void shouldAnswer400ToAGetWhoseIntentIsNotAnOffset() throws Exception {
    for (String intent : List.of("-3", "x", "", "99999999999999999999")) {
      HttpResponse<String> refused =
          http.send(
              HttpRequest.newBuilder(gatewayA.uri().resolve("/v1/calls/some-key?intent=" + intent))
                  .header("Authorization", "Bearer " + TOKEN)
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      CONTRACT.check("GET", CALL, refused);
      assertThat(refused.statusCode()).as(intent).isEqualTo(400);
      assertThat(json(refused).get("field").asText()).isEqualTo("intent");
    }
  }

  @Test
  void shouldAnswer404ForAKeyWithNoCall() throws Exception {
    HttpResponse<String> unknown = getCall(gatewayA, "no-such-call");
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(json(unknown).get("type").asText())
        .isEqualTo("urn:effectledger:problem:unknown-call");
  }

  // --- FAILED, UNKNOWN --------------------------------------------------------------------

  @Test
  void shouldAnswer424WhenTheToolFailedAndReplayIt() throws Exception {
    String body = call("run-424", "refund", "{\"amount\":3}");
    HttpResponse<String> failed = post(gatewayA, "refund", body);
    assertThat(failed.statusCode()).isEqualTo(424);
    JsonNode problem = json(failed);
    assertThat(problem.get("call").get("status").asText()).isEqualTo("FAILED");
    assertThat(problem.get("retriable").asBoolean()).isFalse();
    HttpResponse<String> again = post(gatewayB, "refund", body);
    assertThat(again.statusCode()).isEqualTo(424);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
  }

  /**
   * A call published a moment after its key was released is answered by the key's next life, not by
   * the release (its intent starts that life). Both calls go through one gateway that holds its
   * intents back 6 s (linger): the first call's request fails slowly (2 s) and is released; the
   * second is listening by then, but its intent is read after the release.
   */
  @Test
  void shouldNotAnswerACallWithAReleaseTheLedgerMadeBeforeReadingItsIntent() throws Exception {
    Gateway late = lingeringGateway("gw-late");
    try {
      String key = "reserve-released";
      String body = call("run-release", "reserve", "{\"amount\":13}");
      CompletableFuture<HttpResponse<String>> first = postUntilItReachesTheApi(late, body, key);

      CompletableFuture<HttpResponse<String>> second = postAsync(late, "reserve", body, key);

      HttpResponse<String> released = first.get(30, TimeUnit.SECONDS);
      assertThat(released.statusCode()).as(released.body()).isEqualTo(424);
      assertThat(json(released).get("call").get("error").get("code").asText())
          .isEqualTo("RETRIES_EXHAUSTED");
      assertThat(second).as("the release came before the second intent was sent").isNotDone();
      HttpResponse<String> answered = second.get(30, TimeUnit.SECONDS);
      assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
      assertThat(answered.headers().firstValue("Idempotent-Replayed")).isEmpty();
      assertThat(payments.effects(key)).isEqualTo(1);
    } finally {
      payments.slow(Duration.ofMillis(300));
      late.close();
    }
  }

  /**
   * A GET on a 202's Location ({@code ?intent=}) attached while the key's earlier life is released:
   * the release is not its answer, the call's own intent (read after it) is. The call is published
   * through a gateway that lingers 6 s, so its intent reaches the ledger after the release; the GET
   * names the offset that intent gets (the next on its partition, nothing else being sent there).
   */
  @Test
  void shouldNotAnswerAGetOnA202sLocationWithAReleaseOfTheKeysEarlierLife() throws Exception {
    Gateway late = lingeringGateway("gw-late-get");
    try {
      String key = "reserve-released-get";
      String body = call("run-release-get", "reserve", "{\"amount\":14}");
      CompletableFuture<HttpResponse<String>> first = postUntilItReachesTheApi(late, body, key);
      long nextIntent = intentsEnd(key);

      CompletableFuture<HttpResponse<String>> second = postAsync(late, "reserve", body, key);
      CompletableFuture<HttpResponse<String>> attached =
          http.sendAsync(
              HttpRequest.newBuilder(
                      late.uri().resolve("/v1/calls/" + key + "?intent=" + nextIntent))
                  .timeout(Duration.ofSeconds(60))
                  .header("Authorization", "Bearer " + TOKEN)
                  .header("Prefer", "wait=30")
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());

      HttpResponse<String> released = first.get(30, TimeUnit.SECONDS);
      assertThat(released.statusCode()).as(released.body()).isEqualTo(424);
      // The release reaches the GET's listener too if the GET attached before it (the same reply
      // hub answered `first`); nothing here holds the release until it has, so this checks the
      // case only when the GET was quicker. No hook shows the GET's decision on the release, so
      // it must stay unanswered for the next second.
      await("the GET on the 202's Location is not answered by the earlier life's release, for 1 s")
          .during(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(3))
          .untilAsserted(
              () ->
                  assertThat(attached)
                      .as("the GET took the release of the key's earlier life")
                      .isNotDone());
      HttpResponse<String> answered = attached.get(40, TimeUnit.SECONDS);
      CONTRACT.check("GET", CALL, answered);
      assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
      assertThat(second.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(payments.effects(key)).isEqualTo(1);
    } finally {
      payments.slow(Duration.ofMillis(300));
      late.close();
    }
  }

  /**
   * A gateway whose producer lingers 6 s (its intents reach the ledger late), with the payment API
   * answering slowly (2 s) until the caller sets it back.
   */
  private static Gateway lingeringGateway(String name) {
    Properties lingering = pipeline.kafka();
    lingering.put("linger.ms", 6_000);
    lingering.put("delivery.timeout.ms", 30_000); // at least linger and request timeout
    Gateway late =
        Gateway.start(
            pipeline.gatewayConfig(name, pipeline.ledgerUrl(), pipeline.policies, lingering));
    try {
      GatewayReadiness.awaitReady("gateway " + name, late, Duration.ofSeconds(60));
    } catch (RuntimeException e) {
      late.close();
      throw e;
    }
    payments.slow(Duration.ofSeconds(2));
    return late;
  }

  /**
   * Posts a {@code reserve} call whose first request the payment API answers 503 after its slow
   * wait (the key is then released), once that request has reached the API.
   */
  private static CompletableFuture<HttpResponse<String>> postUntilItReachesTheApi(
      Gateway gateway, String body, String key) {
    payments.inject(key, Fault.SLOW_UNAVAILABLE);
    CompletableFuture<HttpResponse<String>> call = postAsync(gateway, "reserve", body, key);
    await("the first request of " + key + " reaches the payment API")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> assertThat(payments.requests(key)).as("requests of %s", key).isEqualTo(1));
    return call;
  }

  /**
   * The end offset of the tool-intents partition of {@code key}: the offset its next intent gets.
   */
  private static long intentsEnd(String key) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      int partitions =
          admin
              .describeTopics(List.of(Topics.INTENTS))
              .allTopicNames()
              .get()
              .get(Topics.INTENTS)
              .partitions()
              .size();
      int partition =
          org.apache.kafka.common.utils.Utils.toPositive(
                  org.apache.kafka.common.utils.Utils.murmur2(
                      key.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
              % partitions;
      TopicPartition tp = new TopicPartition(Topics.INTENTS, partition);
      return admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset();
    }
  }

  private static CompletableFuture<HttpResponse<String>> postAsync(
      Gateway gateway, String tool, String body, String key) {
    return http.sendAsync(
        HttpRequest.newBuilder(gateway.uri().resolve("/v1/tools/" + tool + "/calls"))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + TOKEN)
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void shouldAnswer202WithStatusUnknownWhenTheEffectMayHaveHappenedAndIsHeld() throws Exception {
    String key = "transfer-held";
    risky.inject(key, Fault.ERROR_AFTER_EFFECT);
    HttpResponse<String> held =
        post(
            gatewayA,
            "transfer",
            call("run-held", "move", "{\"amount\":11}"),
            "Idempotency-Key",
            key);
    assertThat(held.statusCode()).isEqualTo(202);
    JsonNode call = json(held);
    assertThat(call.get("status").asText()).isEqualTo("UNKNOWN");
    assertThat(call.get("error").get("code").asText()).isNotBlank();
    assertThat(held.headers().firstValue("Location"))
        .as("the Location names the call's intent")
        .hasValueSatisfying(l -> assertThat(l).matches("/v1/calls/transfer-held\\?intent=[0-9]+"));
    assertThat(risky.effects(key)).isEqualTo(1);
  }

  // --- bad input: a clear 4xx, nothing published ---------------------------------------------

  private void assertRefusedAndNothingPublished(
      HttpResponse<String> response, int status, String field) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).contains("application/problem+json");
    if (field != null) {
      assertThat(json(response).get("field").asText()).isEqualTo(field);
    }
  }

  @Test
  void shouldRunASettledCallAgainOncePerOperatorApprovalWhereThePolicyAllowsBypass()
      throws Exception {
    String body = call("run-bypass", "mail", "{\"to\":\"ops@example.com\",\"text\":\"hi\"}");
    HttpResponse<String> first = post(gatewayA, "send_email", body);
    assertThat(first.statusCode()).isEqualTo(200);
    String key = json(first).get("key").asText();
    String approved =
        body.substring(0, body.length() - 1) + ",\"bypassApproval\":\"ops-ticket-42\"}";

    HttpResponse<String> again = post(gatewayB, "send_email", approved);
    HttpResponse<String> retried = post(gatewayA, "send_email", approved);

    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(json(again).get("effectId")).isNotEqualTo(json(first).get("effectId"));
    assertThat(retried.statusCode()).as("the same approval, retried").isEqualTo(200);
    assertThat(json(retried).get("effectId")).isEqualTo(json(again).get("effectId"));
    assertThat(payments.effects(key)).as("the first execution").isEqualTo(1);
    assertThat(payments.effectsByKey())
        .as("one more execution, under a fresh effect key")
        .hasEntrySatisfying(
            key + "~bypass-" + bypassSuffixOf(payments, key), n -> assertThat(n).isEqualTo(1));
  }

  @Test
  void shouldAnswer403ToABypassTheToolsPolicyForbidsAnd400ToAnEmptyApproval() throws Exception {
    String body = call("run-bypass", "pay", "{\"amount\":5,\"to\":\"cus_5\"}");
    assertThat(post(gatewayA, "charge_card", body).statusCode()).isEqualTo(200);
    String approved = body.substring(0, body.length() - 1) + ",\"bypassApproval\":\"ops-1\"}";

    HttpResponse<String> refused = post(gatewayA, "charge_card", approved);
    HttpResponse<String> empty =
        post(
            gatewayA,
            "charge_card",
            body.substring(0, body.length() - 1) + ",\"bypassApproval\":\"\"}");

    assertThat(refused.statusCode()).isEqualTo(403);
    assertThat(json(refused).get("code").asText()).isEqualTo("BYPASS_NOT_ALLOWED");
    assertThat(empty.statusCode()).isEqualTo(400);
    assertThat(json(empty).get("field").asText()).isEqualTo("/bypassApproval");
  }

  /** The suffix the ledger gave the one bypass effect key of {@code key} the downstream saw. */
  private static String bypassSuffixOf(CountingDownstream downstream, String key) {
    return downstream.effectsByKey().keySet().stream()
        .filter(k -> k.startsWith(key + "~bypass-"))
        .map(k -> k.substring((key + "~bypass-").length()))
        .findFirst()
        .orElse("(none)");
  }

  @Test
  void shouldRefuseMalformedJsonWith400() throws Exception {
    long before = intentsPublished();
    assertRefusedAndNothingPublished(post(gatewayA, "charge_card", "{\"arguments\": {"), 400, "");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", call("r", "s", "{}") + " trailing"), 400, "");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldRefuseArgumentsThatAreNotAnObjectWith400() throws Exception {
    long before = intentsPublished();
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", call("r", "s", "[1,2]")), 400, "/arguments");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldRefuseUnknownFieldsWith400NamingThem() throws Exception {
    long before = intentsPublished();
    assertRefusedAndNothingPublished(
        post(
            gatewayA,
            "charge_card",
            "{\"arguments\":{\"amount\":1,\"to\":\"c\"},\"step\":{\"run\":\"r\",\"step\":\"s\"},\"tenant\":\"evil\"}"),
        400,
        "/tenant");
    assertRefusedAndNothingPublished(
        post(
            gatewayA,
            "charge_card",
            "{\"arguments\":{\"amount\":1,\"to\":\"c\"},\"step\":{\"run\":\"r\",\"step\":\"s\",\"tenant\":\"evil\"}}"),
        400,
        "/step/tenant");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", "{\"arguments\":{\"amount\":1,\"to\":\"c\"}}"), 400, "/step");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldRefuseAMissingKeyFieldWith400() throws Exception {
    long before = intentsPublished();
    HttpResponse<String> response = post(gatewayA, "charge_card", call("r", "s", "{\"amount\":1}"));
    assertRefusedAndNothingPublished(response, 400, "/arguments");
    assertThat(json(response).get("code").asText()).isEqualTo("MISSING_REQUIRED_FIELD");
    assertThat(json(response).get("detail").asText()).contains("/to");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldRefuseAnInvalidIdempotencyKeyHeaderWith400() throws Exception {
    long before = intentsPublished();
    String body = call("r", "s", "{\"amount\":1,\"to\":\"c\"}");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", body, "Idempotency-Key", "\"unterminated"),
        400,
        "Idempotency-Key");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", body, "Idempotency-Key", "has spaces in it"),
        400,
        "Idempotency-Key");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", body, "Idempotency-Key", "\"" + "k".repeat(256) + "\""),
        400,
        "Idempotency-Key");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldServeAToolTheAppliedPolicyAddsWithoutARestart() throws Exception {
    try (Gateway bare =
        Gateway.start(
            pipeline.gatewayConfig(
                "gw-bare",
                pipeline.ledgerUrl(),
                new dev.effectledger.policy.ToolPolicyLoader().parse("tools: {}\n", "empty")))) {
      String body = call("run-live", "pay", "{\"amount\":5,\"to\":\"cus_live\"}");
      assertThat(post(bare, "charge_card", body).statusCode()).isEqualTo(404);

      // The operator applies the ledger's file (it names charge_card): no restart.
      PolicyTopic.publish(
          pipeline.kafka(),
          dev.effectledger.policy.AppliedPolicy.seed(pipeline.policies, pipeline.toolsYaml)
              .next(pipeline.policies, pipeline.toolsYaml, java.time.Instant.now(), "it"),
          4);
      await("gw-bare reads applied policy version 1")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(bare.policyVersion()).as("gw-bare's policy version").isEqualTo(1));

      assertThat(post(bare, "charge_card", body).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void shouldAnswer404ForAnUnknownToolAndForPathTraversal() throws Exception {
    long before = intentsPublished();
    String body = call("r", "s", "{}");
    assertRefusedAndNothingPublished(post(gatewayA, "no_such_tool", body), 404, "{tool}");
    HttpResponse<String> traversal = post(gatewayA, "..%2F..%2Fetc%2Fpasswd", body);
    assertThat(traversal.statusCode()).isBetween(400, 404);
    assertThat(traversal.headers().firstValue("Content-Type")).contains("application/problem+json");
    HttpResponse<String> dots = post(gatewayA, "%2E%2E", body);
    assertThat(dots.statusCode()).isBetween(400, 404);
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldAnswer401WithoutAKnownCredentialAnd403ForAToolItMayNotCall() throws Exception {
    long before = intentsPublished();
    String body = call("r", "s", "{\"amount\":1,\"to\":\"c\"}");
    HttpResponse<String> none =
        http.send(
            HttpRequest.newBuilder(gatewayA.uri().resolve("/v1/tools/charge_card/calls"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    CONTRACT.check("POST", CALLS, none);
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.headers().firstValue("WWW-Authenticate")).isPresent();
    // answered before its body was read: the connection is not reused (a client that sent its
    // next request on it met a closed connection: "header parser received no bytes")
    assertThat(none.headers().firstValue("Connection")).hasValue("close");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", body, "Authorization", "Bearer wrong-token"),
        401,
        "Authorization");
    assertRefusedAndNothingPublished(
        post(gatewayA, "charge_card", body, "Authorization", "Bearer " + NARROW_TOKEN), 403, null);
    assertThat(intentsPublished()).isEqualTo(before);
  }

  @Test
  void shouldAnswer413ForABodyAboveTheLimitAnd415ForAnotherMediaType() throws Exception {
    long before = intentsPublished();
    String big = call("r", "s", "{\"amount\":1,\"to\":\"" + "x".repeat(5000) + "\"}");
    assertRefusedAndNothingPublished(post(gatewayA, "charge_card", big), 413, null);
    byte[] bigBytes = big.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    // Streamed in chunks, no Content-Length: the limit is found while reading. Many times over,
    // because a read that failed the request raced the server's own 500 against the 413.
    for (int attempt = 0; attempt < 40; attempt++) {
      HttpResponse<String> chunked =
          http.send(
              HttpRequest.newBuilder(gatewayA.uri().resolve("/v1/tools/charge_card/calls"))
                  .header("Authorization", "Bearer " + TOKEN)
                  .header("Content-Type", "application/json")
                  .POST(
                      HttpRequest.BodyPublishers.ofInputStream(
                          () -> new java.io.ByteArrayInputStream(bigBytes)))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      CONTRACT.check("POST", CALLS, chunked);
      assertRefusedAndNothingPublished(chunked, 413, null);
    }
    assertRefusedAndNothingPublished(
        post(
            gatewayA,
            "charge_card",
            call("r", "s", "{\"amount\":1,\"to\":\"c\"}"),
            "Content-Type",
            "text/plain"),
        415,
        "Content-Type");
    assertThat(intentsPublished()).isEqualTo(before);
  }

  // --- unavailable: fail closed ----------------------------------------------------------

  @Test
  void shouldAnswer503WithRetryAfterAndPublishNothingWhenTheLedgerIsUnreachable() throws Exception {
    try (Gateway orphan =
        Gateway.start(pipeline.gatewayConfig("gw-orphan", URI.create("http://127.0.0.1:9")))) {
      // its probe got as far as the ledger (the reply consumer positioned, the broker up)
      await("gw-orphan's probe finds the ledger unreachable")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(GatewayReadiness.readyz(orphan))
                      .as("gw-orphan's /readyz")
                      .contains("the ledger at"));
      assertThat(orphan.isReady()).isFalse();
      long before = intentsPublished();
      HttpResponse<String> response =
          post(orphan, "charge_card", call("run-503", "pay", "{\"amount\":1,\"to\":\"c\"}"));
      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(response.headers().firstValue("Retry-After")).isPresent();
      assertThat(json(response).get("retriable").asBoolean()).isTrue();
      HttpResponse<String> ready =
          http.send(
              HttpRequest.newBuilder(orphan.uri().resolve("/readyz")).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(ready.statusCode()).isEqualTo(503);
      assertThat(ready.body()).contains("ledger");
      assertThat(intentsPublished()).isEqualTo(before);
    }
  }

  @Test
  void shouldSayWhenTheLedgerRefusesTheGatewaysToken() throws Exception {
    String body = call("run-token", "pay", "{\"amount\":4,\"to\":\"cus_token\"}");
    HttpResponse<String> charged = post(gatewayA, "charge_card", body);
    assertThat(charged.statusCode()).isEqualTo(200);
    try (Gateway tokenless =
        Gateway.start(
            pipeline.gatewayConfig("gw-tokenless", pipeline.ledgerUrl()).withLedgerToken(null))) {
      GatewayReadiness.awaitReady("gateway gw-tokenless", tokenless, Duration.ofSeconds(60));

      HttpResponse<String> refused = getCall(tokenless, json(charged).get("key").asText());

      assertThat(refused.statusCode()).isEqualTo(502);
      assertThat(json(refused).get("type").asText()).endsWith("ledger-refused-gateway");
      assertThat(json(refused).get("detail").asText()).contains("gateway.ledger.token");
    }
  }

  // --- operations ----------------------------------------------------------------------------

  @Test
  void shouldServeHealthReadinessMetricsAndTheOpenApiDocument() throws Exception {
    assertThat(get(gatewayA, "/healthz").statusCode()).isEqualTo(200);
    assertThat(get(gatewayA, "/readyz").statusCode()).isEqualTo(200);
    post(gatewayA, "charge_card", call("run-metrics", "pay", "{\"amount\":12,\"to\":\"c\"}"));
    assertThat(metrics(gatewayA))
        .contains("gateway_requests_total{status=\"200\",tool=\"charge_card\"}")
        .contains("gateway_call_wait_seconds")
        .contains("gateway_calls_waiting");
    HttpResponse<String> doc = get(gatewayA, "/openapi.yaml");
    assertThat(doc.statusCode()).isEqualTo(200);
    assertThat(doc.body()).startsWith("openapi: 3.1.0");
  }

  @Test
  void shouldServeACallOverHttpsWithTheConfiguredKeyStore(@TempDir Path dir) throws Exception {
    Path keyStore = dir.resolve("gateway.p12");
    Process keytool =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-alias",
                "gateway",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-storetype",
                "PKCS12",
                "-keystore",
                keyStore.toString(),
                "-storepass",
                "changeit",
                "-dname",
                "CN=127.0.0.1",
                "-ext",
                "SAN=ip:127.0.0.1",
                "-validity",
                "2")
            .redirectErrorStream(true)
            .start();
    assertThat(keytool.waitFor()).as(new String(keytool.getInputStream().readAllBytes())).isZero();
    KeyStore trusted = KeyStore.getInstance("PKCS12");
    try (var in = Files.newInputStream(keyStore)) {
      trusted.load(in, "changeit".toCharArray());
    }
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(trusted);
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(null, trust.getTrustManagers(), null);
    HttpClient https = HttpClient.newBuilder().sslContext(ssl).build();

    try (Gateway secure =
        Gateway.start(
            pipeline
                .gatewayConfig("gw-tls", pipeline.ledgerUrl())
                .withTls(new GatewayConfig.Tls(keyStore, "changeit", null)))) {
      assertThat(secure.uri().getScheme()).isEqualTo("https");
      await("gateway gw-tls is ready")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(secure.isReady()).as("gw-tls ready").isTrue());
      HttpResponse<String> call =
          post(
              https, secure, "charge_card", call("run-tls", "pay", "{\"amount\":13,\"to\":\"c\"}"));
      assertThat(call.statusCode()).isEqualTo(200);
      assertThat(call.version()).as("h2, negotiated by ALPN").isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(payments.effects(json(call).get("key").asText())).isEqualTo(1);
      HttpResponse<String> overHttp11 =
          post(
              HttpClient.newBuilder().sslContext(ssl).version(HttpClient.Version.HTTP_1_1).build(),
              secure,
              "charge_card",
              call("run-tls", "pay", "{\"amount\":13,\"to\":\"c\"}"));
      assertThat(overHttp11.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
      assertThat(overHttp11.statusCode()).isEqualTo(200);
      assertThat(overHttp11.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(payments.effects(json(call).get("key").asText())).isEqualTo(1);
      // an HTTP/1.1 caller over TLS that hangs up mid-wait is noticed too (HangUpWatch reads the
      // decrypted connection)
      String held = "charge-tls-hang-up";
      payments.holdBeforeEffect(held);
      try (java.net.Socket socket =
          ssl.getSocketFactory().createSocket("127.0.0.1", secure.port())) {
        socket
            .getOutputStream()
            .write(
                rawPost(held, call("run-tls", "hang-up", "{\"amount\":14,\"to\":\"c\"}"))
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
        await("the raw HTTP/1.1 call over TLS waits on gw-tls")
            .atMost(Duration.ofSeconds(20))
            .untilAsserted(
                () ->
                    assertThat(waiting(secure, https))
                        .as("gateway_calls_waiting on gw-tls")
                        .isEqualTo(1.0));
      }
      await("the call whose caller hung up over TLS stops waiting on gw-tls")
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () ->
                  assertThat(waiting(secure, https))
                      .as("the call whose caller hung up over TLS stopped waiting")
                      .isEqualTo(0.0));
      payments.releaseHeld(held);
      Assertions.assertThatThrownBy(
              () ->
                  http.send(
                      HttpRequest.newBuilder(
                              URI.create("http://127.0.0.1:" + secure.port() + "/healthz"))
                          .timeout(Duration.ofSeconds(5))
                          .build(),
                      HttpResponse.BodyHandlers.ofString()))
          .as("plain HTTP is not served")
          .isInstanceOf(IOException.class);
    }
  }

  private static HttpResponse<String> get(Gateway gateway, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(gateway.uri().resolve(path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String metrics(Gateway gateway) throws Exception {
    return get(gateway, "/metrics").body();
  }

  private interface Io<T> {
    T get() throws Exception;
  }

  private static <T> T unchecked(Io<T> io) {
    try {
      return io.get();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
