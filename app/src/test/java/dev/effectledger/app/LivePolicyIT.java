package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.CallOptions;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.Topics;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code effectledger tools apply} against a real broker and two processor instances that share
 * four partitions, neither restarted: a tool the applied policy adds is admitted on every partition
 * and both instances report the version; a shrunk window is refused without --allow-shrink and
 * nothing is published; a key rule changed centrally changes what a running Java client derives,
 * and the retry it sends under the new rules finds the call made under the old ones (one dispatch).
 */
@Tag("integration")
class LivePolicyIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  static final String REGISTRY = "mock://live-policy-it";

  static final String V1 =
      """
      tools:
        charge_card:
          class: irreversible
          window: 30d
          pendingTimeout: 10m
          lane: payments
          connector: http
          settings: {url: "http://127.0.0.1:1/charges"}
          key: {ignore: [/note], require: [/amount]}
      """;

  /** create_ticket added; charge_card unchanged. */
  static final String V2 =
      V1
          + """
            create_ticket:
              class: write-idempotent
              window: 1h
              lane: tickets
              connector: http
              settings: {url: "TICKETS_URL", honoursKeys: true}
          """;

  /** create_ticket's window shrinks. */
  static final String V3 = V2.replace("window: 1h", "window: 10m");

  /** charge_card's key no longer ignores the note. */
  static final String V4 =
      V2.replace("key: {ignore: [/note], require: [/amount]}", "key: {require: [/amount]}");

  @TempDir Path dir;
  private AutoCloseable closeLater;

  @org.junit.jupiter.api.AfterEach
  void closeExecutor() throws Exception {
    if (closeLater != null) {
      closeLater.close();
    }
  }

  private final ObjectMapper json = new ObjectMapper();
  private final HttpClient http = HttpClient.newHttpClient();

  private KafkaStreams instance(String name, LedgerHttpServer server, LivePolicies live) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "live-policy-it");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve(name).toString());
    props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + server.port());
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    LedgerConfig config =
        LedgerConfig.of(live.seed().policies(), REGISTRY)
            .withLivePolicy(true)
            .withIntentPartitions(4);
    KafkaStreams streams =
        LedgerTopology.streams(
            config, dev.effectledger.schema.serde.SchemaRegistries.forUrl(REGISTRY), live, props);
    server.serve(streams, live);
    streams.start();
    return streams;
  }

  /** The version of every task the instance at {@code port} runs. */
  private Map<String, Long> versions(int port) throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/policy")).build(),
            HttpResponse.BodyHandlers.ofString());
    JsonNode tasks = json.readTree(response.body()).path("tasks");
    Map<String, Long> versions = new HashMap<>();
    tasks.fields().forEachRemaining(e -> versions.put(e.getKey(), e.getValue().asLong()));
    return versions;
  }

  /** The 4 ledger tasks over both instances are all on policy {@code version}. */
  private void assertAllTasksOn(long version, int portA, int portB) throws Exception {
    Map<String, Long> all = new HashMap<>(versions(portA));
    all.putAll(versions(portB));
    assertThat(all)
        .as("policy version per ledger task on both instances (all 4 wanted on %s)", version)
        .hasSize(4)
        .allSatisfy((task, v) -> assertThat(v).as("task %s", task).isEqualTo(version));
  }

  /** Waits for the 4 ledger tasks over both instances to be on policy {@code version}. */
  private void awaitAllTasksOn(long version, int portA, int portB, Duration atMost) {
    await("every ledger task on both instances on policy version " + version)
        .atMost(atMost)
        .untilAsserted(() -> assertAllTasksOn(version, portA, portB));
  }

  private static List<ConsumerRecord<String, byte[]>> dispatches(String lane) {
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    props.put("isolation.level", "read_committed");
    List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (int p = 0; p < 4; p++) {
        partitions.add(new TopicPartition(Topics.dispatch(lane), p));
      }
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))
          && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
      assertThat(partitions)
          .as("%s read to its ends %s within 60 s (%s records read)", lane, end, out.size())
          .allSatisfy(
              tp ->
                  assertThat(consumer.position(tp))
                      .as("position on %s", tp)
                      .isGreaterThanOrEqualTo(end.get(tp)));
    }
    return out;
  }

  private String ticketsUrl;

  private CommandRun apply(String yaml, String... flags) throws Exception {
    Path file =
        Files.writeString(
            Files.createTempFile(dir, "tools", ".yaml"), yaml.replace("TICKETS_URL", ticketsUrl));
    Path config =
        Files.writeString(
            dir.resolve("apply.properties"),
            "bootstrap.servers="
                + kafka.bootstrapServers()
                + "\nschema.registry.url="
                + REGISTRY
                + "\ntopics.create=false\n");
    List<String> args =
        new ArrayList<>(List.of("tools", "apply", file.toString(), "--config", config.toString()));
    args.addAll(List.of(flags));
    return CommandRun.of(args.toArray(String[]::new));
  }

  @Test
  @Timeout(240)
  void policyChangesApplyLiveOnTwoInstances() throws Exception {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 4);
    }
    topics.put(Topics.dispatch("payments"), 4);
    topics.put(Topics.dispatch("tickets"), 4);
    kafka.createTopics(topics);
    var seed = new ToolPolicyLoader().parse(V1, "seed");
    LivePolicies liveA = new LivePolicies(AppliedPolicy.seed(seed, V1));
    LivePolicies liveB = new LivePolicies(AppliedPolicy.seed(seed, V1));
    Properties clientKafka = new Properties();
    clientKafka.put("bootstrap.servers", kafka.bootstrapServers());
    try (dev.effectledger.embedded.CountingDownstream downstream =
            dev.effectledger.embedded.CountingDownstream.start(Duration.ofSeconds(1));
        LedgerHttpServer httpA =
            new LedgerHttpServer(
                "127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        LedgerHttpServer httpB =
            new LedgerHttpServer(
                "127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        KafkaStreams a = instance("a", httpA, liveA);
        KafkaStreams b = instance("b", httpB, liveB);
        ToolCallClient client =
            ToolCallClient.builder()
                .kafka(clientKafka)
                .schemaRegistryUrl(REGISTRY)
                .timeout(Duration.ofSeconds(20))
                .keyRules(
                    "charge_card",
                    dev.effectledger.client.KeyRules.builder()
                        .ignore("/note")
                        .require("/amount")
                        .build())
                .build()) {
      ticketsUrl = downstream.url();
      // An executor for the tickets lane, started on the file (no create_ticket): it follows
      // tool-policy and runs the tool once a version adds it.
      dev.effectledger.connectors.executor.EffectExecutor executor =
          dev.effectledger.connectors.executor.EffectExecutor.start(
              dev.effectledger.connectors.executor.ExecutorConfig.of(
                  clientKafka, List.of("tickets"), REGISTRY),
              Map.of(),
              seed);
      closeLater = executor;
      assertThat(
              executor.followPolicy(
                  p ->
                      dev.effectledger.mcp.connector.McpConnectors.all()
                          .create(p, List.of("tickets"), java.time.Clock.systemUTC())))
          .isZero();
      await("every ledger task on both instances up, on policy version 0 (its file)")
          .atMost(Duration.ofSeconds(90))
          .ignoreExceptions()
          .untilAsserted(() -> assertAllTasksOn(0, httpA.port(), httpB.port()));
      assertThat(versions(httpA.port())).isNotEmpty();
      assertThat(versions(httpB.port())).isNotEmpty();

      // Before: the processors know only their file; create_ticket is an unknown tool.
      CallResult before = client.invoke(ticket("before"), CallOptions.defaults()).get();
      assertThat(before).isInstanceOf(CallResult.Rejected.class);
      assertThat(((CallResult.Rejected) before).error().code()).isEqualTo("UNKNOWN_TOOL");

      // A charge under the file's rules: the note is left out of the key.
      ToolCall charge =
          ToolCall.of(
              new StepContext("acme", "run-1", "charge-1", ""),
              "charge_card",
              "{\"amount\":100,\"note\":\"refund of order 7\"}");
      // None applied yet: the rules given to the builder, and no classes.
      assertThat(client.keyRulesOf("charge_card").volatileFields()).containsExactly("/note");
      assertThat(client.toolClassOf("create_ticket")).isEmpty();
      client.invoke(charge, CallOptions.timeout(Duration.ofSeconds(1))).get();

      CommandRun applied = apply(V2);
      assertThat(applied.status()).as(applied.out() + applied.err()).isZero();
      assertThat(applied.out()).contains("policy version 1");
      awaitAllTasksOn(1, httpA.port(), httpB.port(), Duration.ofSeconds(60));
      awaitExecutorOn(executor, 1);
      await("the client reads each tool's class from the applied policy")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                assertThat(client.toolClassOf("create_ticket")).contains("write-idempotent");
                assertThat(client.toolClassOf("no_such_tool")).isEmpty();
              });
      Set<String> keys = new HashSet<>();
      for (int i = 0; i < 12; i++) {
        CallResult r =
            client.invoke(ticket("t-" + i), CallOptions.timeout(Duration.ofSeconds(20))).get();
        assertThat(r)
            .as("admitted by the ledger and run by the executor, neither restarted")
            .isInstanceOf(CallResult.Succeeded.class);
        keys.add(client.keyOf(ticket("t-" + i)).key());
      }
      assertThat(downstream.totalEffects()).isEqualTo(12);
      List<ConsumerRecord<String, byte[]>> tickets = dispatches("tickets");
      assertThat(tickets).extracting(ConsumerRecord::key).containsExactlyInAnyOrderElementsOf(keys);
      assertThat(tickets).extracting(ConsumerRecord::partition).contains(0, 1, 2, 3);

      // A shrink is refused without the flag, and nothing is published.
      CommandRun shrink = apply(V3);
      assertThat(shrink.status()).as(shrink.out()).isEqualTo(1);
      assertThat(shrink.out()).contains("create_ticket").contains("[weakens]");
      // That nothing was published shows below: the next apply follows version 1 (as version 2).
      assertAllTasksOn(1, httpA.port(), httpB.port());

      // Key rules changed centrally: the running client derives with them.
      String keyBefore = client.keyOf(charge).key();
      awaitKeyRulesVersion(client, 1);
      CommandRun rules = apply(V4);
      assertThat(rules.status()).as(rules.out()).isZero();
      assertThat(rules.out()).contains("charge_card: key rules version 2");
      assertThat(rules.out())
          .as("the refused shrink published nothing: this apply follows version 1")
          .contains("as policy version 2 ");
      awaitKeyRulesVersion(client, 2);
      awaitAllTasksOn(2, httpA.port(), httpB.port(), Duration.ofSeconds(60));
      String keyAfter = client.keyOf(charge).key();
      assertThat(keyAfter).isNotEqualTo(keyBefore);
      assertThat(partitionOf(keyAfter))
          .as("the two keys live in different tasks: the ledger must look across partitions")
          .isNotEqualTo(partitionOf(keyBefore));

      // The step's retry under the new rules finds the first call: still one dispatch.
      CallResult retry = client.invoke(charge, CallOptions.timeout(Duration.ofSeconds(1))).get();
      assertThat(retry).isNotInstanceOf(CallResult.Rejected.class);
      assertThat(dispatches("payments")).extracting(ConsumerRecord::key).containsExactly(keyBefore);

      // A client still on the old rules (not following tool-policy), either way round.
      try (ToolCallClient old =
          ToolCallClient.builder()
              .kafka(clientKafka)
              .schemaRegistryUrl(REGISTRY)
              .liveKeyRules(false)
              .keyRules(
                  "charge_card",
                  dev.effectledger.client.KeyRules.builder()
                      .ignore("/note")
                      .require("/amount")
                      .build())
              .build()) {
        ToolCall second = charge("charge-2");
        client.invoke(second, CallOptions.timeout(Duration.ofSeconds(1))).get();
        CallResult oldRetry = old.invoke(second, CallOptions.timeout(Duration.ofSeconds(1))).get();
        assertThat(oldRetry).isNotInstanceOf(CallResult.Rejected.class);
        ToolCall third = charge("charge-3");
        old.invoke(third, CallOptions.timeout(Duration.ofSeconds(1))).get();
        client.invoke(third, CallOptions.timeout(Duration.ofSeconds(1))).get();
        assertThat(old.keyOf(third).key()).isNotEqualTo(client.keyOf(third).key());
        // One dispatch per step, each under the key of the newest rules.
        assertThat(dispatches("payments"))
            .extracting(ConsumerRecord::key)
            .containsExactlyInAnyOrder(
                keyBefore, client.keyOf(second).key(), client.keyOf(third).key());
      }

      // A version the executor cannot run safely as it is (the tickets downstream no longer
      // honours keys, and the lane has no attempt journal): refused there, applied elsewhere.
      awaitExecutorOn(executor, 2);
      CommandRun unsafe = apply(V4.replace("honoursKeys: true", "honoursKeys: false"));
      assertThat(unsafe.status()).as(unsafe.out()).isZero();
      awaitAllTasksOn(3, httpA.port(), httpB.port(), Duration.ofSeconds(60));
      // The executor's refusal shows only in its log: no hook says it has read version 3, so its
      // version must stay 2 throughout the 2 s after the processors took version 3.
      await("the executor keeps policy version 2, refusing the unsafe version 3, for 2 s")
          .during(Duration.ofSeconds(2))
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () ->
                  assertThat(executor.policyVersion())
                      .as("the executor's policy version: kept, not applied")
                      .isEqualTo(2));
    }
  }

  private static void awaitExecutorOn(
      dev.effectledger.connectors.executor.EffectExecutor executor, long version) {
    await("the tickets executor applies policy version " + version)
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(executor.policyVersion())
                    .as("the executor's policy version")
                    .isEqualTo(version));
  }

  private static void awaitKeyRulesVersion(ToolCallClient client, long version) {
    await("the client derives keys with key rules version " + version)
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(client.keyRulesVersion())
                    .as("the client's key rules version")
                    .isEqualTo(version));
  }

  private static ToolCall charge(String step) {
    return ToolCall.of(
        new StepContext("acme", "run-1", step, ""),
        "charge_card",
        "{\"amount\":100,\"note\":\"for " + step + "\"}");
  }

  private static int partitionOf(String key) {
    return org.apache.kafka.common.utils.Utils.toPositive(
            org.apache.kafka.common.utils.Utils.murmur2(
                key.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
        % 4;
  }

  private static ToolCall ticket(String step) {
    return ToolCall.of(
        new StepContext("acme", "run-1", step, ""),
        "create_ticket",
        "{\"title\":\"" + step + "\"}");
  }
}
