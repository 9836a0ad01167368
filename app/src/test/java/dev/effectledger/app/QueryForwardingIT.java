package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.IntStream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two processor instances share the keys; either answers for every key, forwarding to the owner.
 * Both listen on every address and advertise distinct ones (127.0.0.1 and 127.0.0.2), as two hosts
 * would: a lookup forwarded to the wrong address would answer a false 404.
 */
@Tag("integration")
class QueryForwardingIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path dir;

  private KafkaStreams instance(LedgerHttpServer http, String name, String advertisedHost) {
    ToolPolicies policies =
        ToolPolicies.of(
            ToolPolicy.builder("charge_card", ToolClass.IRREVERSIBLE)
                .window(Duration.ofDays(30))
                .pendingTimeout(Duration.ofMinutes(30))
                .onInFlight(InFlightPolicy.COALESCE)
                .onAmbiguous(AmbiguityPolicy.HOLD)
                .lane("payments")
                .connector("http")
                .maxAttempts(3)
                .bypassAllowed(false)
                .build());
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "query-forwarding-it");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve(name).toString());
    props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1); // for the standby lag below
    String advertised = AppConfig.advertisedServer("0.0.0.0", advertisedHost, http.port());
    props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, advertised);
    http.advertisedAs(advertised);
    LedgerConfig config = LedgerConfig.of(policies, "mock://query-it");
    LivePolicies live = new LivePolicies(AppliedPolicy.seed(policies, ""));
    KafkaStreams streams =
        LedgerTopology.streams(config, SchemaRegistries.forUrl("mock://query-it"), live, props);
    http.serve(streams, live);
    streams.start();
    return streams;
  }

  @Test
  @Timeout(180)
  void shouldAnswerEveryKeyFromEitherInstance() throws Exception {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 4);
    }
    topics.put(Topics.dispatch("payments"), 4);
    kafka.createTopics(topics);
    HttpClient http = HttpClient.newHttpClient();
    // the query API wants a token on both instances: a forwarded request carries the caller's
    Properties tokens = new Properties();
    tokens.setProperty(
        "http.auth.viewer.sha256", dev.effectledger.gateway.Credentials.sha256Hex("view-token"));
    HttpAuth auth = HttpAuth.fromProperties(tokens);
    try (LedgerHttpServer httpA =
            new LedgerHttpServer(
                "0.0.0.0", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), auth, false);
        LedgerHttpServer httpB =
            new LedgerHttpServer(
                "0.0.0.0", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), auth, false);
        KafkaStreams a = instance(httpA, "a", "127.0.0.1");
        KafkaStreams b = instance(httpB, "b", "127.0.0.2")) {
      await("both ledger instances RUNNING, each knowing both and with active tasks")
          .atMost(Duration.ofSeconds(90))
          .untilAsserted(
              () -> {
                assertThat(a.state())
                    .as("instance a's state")
                    .isEqualTo(KafkaStreams.State.RUNNING);
                assertThat(b.state())
                    .as("instance b's state")
                    .isEqualTo(KafkaStreams.State.RUNNING);
                assertThat(a.metadataForAllStreamsClients())
                    .as("the Streams clients instance a knows")
                    .hasSize(2);
                assertThat(a.metadataForLocalThreads())
                    .as("instance a's threads")
                    .isNotEmpty()
                    .anyMatch(t -> !t.activeTasks().isEmpty());
                assertThat(b.metadataForLocalThreads())
                    .as("instance b's threads")
                    .anyMatch(t -> !t.activeTasks().isEmpty());
              });
      List<String> keys = IntStream.range(0, 40).mapToObj(i -> "key-" + i).toList();
      Properties props = new Properties();
      props.put("bootstrap.servers", kafka.bootstrapServers());
      try (KafkaProducer<String, ToolIntent> producer =
          new KafkaProducer<>(
              props,
              new StringSerializer(),
              new RegistryAvroSerde<>(
                  SchemaRegistries.forUrl("mock://query-it"), ToolIntent.class))) {
        for (String key : keys) {
          producer.send(
              new ProducerRecord<>(
                  Topics.INTENTS,
                  key,
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("acme")
                      .setRunId("r")
                      .setStepId(key)
                      .setTool("charge_card")
                      .setArguments("{}")
                      .setArgumentsHash(ArgumentsHash.of("{}", List.of()))
                      .setRequestedAt(Instant.now())
                      .build()));
        }
      }
      for (String address : List.of("127.0.0.1:" + httpA.port(), "127.0.0.2:" + httpB.port())) {
        for (String key : keys) {
          URI uri = URI.create("http://" + address + "/v1/keys/acme/" + key);
          await("the entry of " + key + " is PENDING, asked at " + address)
              .atMost(Duration.ofSeconds(60))
              .ignoreExceptions()
              .untilAsserted(
                  () ->
                      assertThat(
                              http.send(
                                      HttpRequest.newBuilder(uri)
                                          .header("Authorization", "Bearer view-token")
                                          .GET()
                                          .build(),
                                      HttpResponse.BodyHandlers.ofString())
                                  .body())
                          .as("GET %s", uri)
                          .contains("\"state\":\"PENDING\""));
        }
      }
      await("each instance's standbys of the other's tasks read as caught up")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> {
                for (KafkaStreams instance : List.of(a, b)) {
                  assertThat(instance.metadataForLocalThreads())
                      .as("its threads")
                      .anyMatch(t -> !t.standbyTasks().isEmpty());
                  Integer[] standby =
                      instance.metadataForLocalThreads().stream()
                          .flatMap(t -> t.standbyTasks().stream())
                          .map(t -> t.taskId().partition())
                          .toArray(Integer[]::new);
                  assertThat(instance.allLocalStorePartitionLags().get(LedgerStore.NAME))
                      .as("the ledger store's partitions it holds")
                      .containsKeys(standby);
                  StoreLags.Reading lags = StoreLags.read(instance);
                  // the stores with a changelog (the ledger's; the policy store's with live
                  // policy); the deadline index has none
                  int stores = instance.allLocalStorePartitionLags().size();
                  assertThat(lags.standbyPartitions())
                      .as(
                          "standby store partitions: %d stores' of %d tasks",
                          stores, standby.length)
                      .isEqualTo(stores * standby.length)
                      .isPositive();
                  // under exactly_once_v2 a caught-up partition still counts its last commit marker
                  assertThat(lags.standby())
                      .as("standby lag")
                      .isLessThanOrEqualTo(lags.standbyPartitions());
                }
              });
      for (String address : List.of("127.0.0.1:" + httpA.port(), "127.0.0.2:" + httpB.port())) {
        URI uri = URI.create("http://" + address + "/v1/keys/acme/key-0");
        HttpResponse<String> none =
            http.send(
                HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> wrong =
            http.send(
                HttpRequest.newBuilder(uri).header("Authorization", "Bearer guess").GET().build(),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> probe =
            http.send(
                HttpRequest.newBuilder(URI.create("http://" + address + "/readyz")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.headers().firstValue("WWW-Authenticate"))
            .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(probe.statusCode()).as("probes stay open").isEqualTo(200);
      }

      // The console's views read every instance: the keys in flight now, and those held.
      List<String> held = keys.subList(0, 10);
      try (KafkaProducer<String, Outcome> outcomes =
          new KafkaProducer<>(
              props,
              new StringSerializer(),
              new RegistryAvroSerde<>(SchemaRegistries.forUrl("mock://query-it"), Outcome.class))) {
        for (String key : held) {
          outcomes.send(
              new ProducerRecord<>(
                  Topics.OUTCOMES,
                  key,
                  Outcome.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("acme")
                      .setTool("charge_card")
                      .setAttempt(1)
                      .setStatus(OutcomeStatus.AMBIGUOUS)
                      .setCompletedAt(Instant.now())
                      .build()));
        }
      }
      for (String address : List.of("127.0.0.1:" + httpA.port(), "127.0.0.2:" + httpB.port())) {
        await("the held keys and counts of both instances, asked at " + address)
            .atMost(Duration.ofSeconds(60))
            .ignoreExceptions()
            .untilAsserted(
                () -> {
                  JsonNode heldKeys = get(http, "http://" + address + "/v1/held");
                  assertThat(heldKeys.get("instances").asInt()).isEqualTo(2);
                  assertThat(heldKeys.get("held").findValuesAsText("key"))
                      .containsExactlyInAnyOrderElementsOf(held);
                  JsonNode overview = get(http, "http://" + address + "/v1/overview");
                  JsonNode tool = overview.get("tools").get("charge_card");
                  assertThat(tool.get("inFlight").asLong()).isEqualTo(keys.size() - held.size());
                  assertThat(tool.get("held").asLong()).isEqualTo(held.size());
                  // what `tools diff --processor` reads: each instance counted once
                  JsonNode expiry =
                      get(http, "http://" + address + "/v1/tools/charge_card/expiry?window=1d");
                  assertThat(expiry.get("instances").asInt()).isEqualTo(2);
                  assertThat(expiry.get("settled").asLong()).isZero();
                });
      }
      // Each instance answers for itself alone when asked by another (no fan-out loop).
      JsonNode alone =
          JSON.readTree(
              http.send(
                      HttpRequest.newBuilder(
                              URI.create("http://127.0.0.1:" + httpA.port() + "/v1/held"))
                          .header("Authorization", "Bearer view-token")
                          .header("X-Effectledger-Forwarded", "1")
                          .GET()
                          .build(),
                      HttpResponse.BodyHandlers.ofString())
                  .body());
      assertThat(alone.get("instances").asInt()).isEqualTo(1);
      java.util.Set<Integer> ownedByA = new java.util.HashSet<>();
      a.metadataForLocalThreads()
          .forEach(t -> t.activeTasks().forEach(task -> ownedByA.add(task.taskId().partition())));
      assertThat(alone.get("held").findValuesAsText("key"))
          .containsExactlyInAnyOrderElementsOf(
              held.stream()
                  .filter(
                      k ->
                          ownedByA.contains(
                              org.apache.kafka.common.utils.Utils.toPositive(
                                      org.apache.kafka.common.utils.Utils.murmur2(
                                          k.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                                  % 4))
                  .toList());
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode get(HttpClient http, String url) throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(URI.create(url))
                .header("Authorization", "Bearer view-token")
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return JSON.readTree(response.body());
  }
}
