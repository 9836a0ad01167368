package dev.effectledger.connectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole path on real parts: 5,000 distinct actions, each intent sent twice (the second copy
 * from another producer at the same time), through the ledger on a real broker to an executor with
 * four connectors: an Idempotency-Key HTTP API with every fault injected, PostgreSQL through the
 * JDBC connector, a Kafka topic, and an HTTP API that ignores keys. One effect per key everywhere;
 * ambiguous calls to the key-ignoring API are held as UNKNOWN, not retried, and the reconciler
 * resolves them; every dispatch has an outcome.
 */
@Tag("integration")
class ExactlyOnceEffectIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final int CHARGES = 2_000;
  private static final int REFUNDS = 1_500;
  private static final int PUBLISHES = 1_000;
  private static final int NOTIFIES = 500;
  private static final Fault[] FAULTS = Fault.values();

  @TempDir Path stateDir;

  private static String policyYaml(String chargesUrl, String notifyUrl, String jdbcUrl) {
    return """
        tools:
          charge:
            class: irreversible
            pendingTimeout: 30m
            lane: payments
            connector: http
            retry: {maxAttempts: 8, base: 100ms, cap: 1s}
            settings: {url: "%1$s", timeout: 500ms, honoursKeys: true, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
          refund:
            class: write-non-idempotent
            pendingTimeout: 30m
            lane: refunds
            connector: jdbc
            settings:
              url: "%3$s"
              user: postgres
              statement: INSERT INTO refunds (customer, amount) VALUES (?, ?) RETURNING id
              parameters: [/to, /amount]
          publish:
            class: irreversible
            pendingTimeout: 30m
            lane: events
            connector: kafka
            settings: {topic: effects}
          notify:
            class: write-non-idempotent
            pendingTimeout: 30m
            onAmbiguous: hold
            lane: notify
            connector: http
            retry: {maxAttempts: 6, base: 10ms, cap: 200ms}
            settings: {url: "%2$s", timeout: 500ms, lookupUrl: "%2$s?key={key}", effectIdPointer: /id}
        """
        .formatted(chargesUrl, notifyUrl, jdbcUrl);
  }

  @Test
  @Timeout(600)
  void shouldTakeEffectOncePerKeyAcrossConnectorsAndFaults() throws Exception {
    String registry = "mock://exactly-once-it";
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 4);
    }
    for (String lane : List.of("payments", "refunds", "events", "notify")) {
      topics.put(Topics.dispatch(lane), 2);
    }
    topics.put("effects", 2);
    kafka.createTopics(topics);

    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().start();
        CountingDownstream charges = CountingDownstream.start(Duration.ofSeconds(2));
        CountingDownstream notifications =
            CountingDownstream.start(Duration.ofSeconds(2)).honoursKeys(false)) {
      try (Connection c = postgres.getPostgresDatabase().getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE refunds (id serial PRIMARY KEY, customer text NOT NULL, amount bigint NOT NULL)");
      }
      ToolPolicies policies =
          new ToolPolicyLoader()
              .parse(
                  policyYaml(
                      charges.url(),
                      notifications.url(),
                      postgres.getJdbcUrl("postgres", "postgres")),
                  "it-tools.yaml");
      Map<String, List<String>> keysByTool = new HashMap<>();
      List<ToolIntent> intents = new ArrayList<>();
      addActions(intents, keysByTool, "charge", CHARGES);
      addActions(intents, keysByTool, "refund", REFUNDS);
      addActions(intents, keysByTool, "publish", PUBLISHES);
      addActions(intents, keysByTool, "notify", NOTIFIES);
      List<String> faultedCharges = new ArrayList<>();
      for (int i = 0; i < CHARGES; i += 10) {
        String key = keysByTool.get("charge").get(i);
        Fault fault = FAULTS[(i / 10) % FAULTS.length];
        charges.inject(key, fault);
        if (fault != Fault.SLOW_SUCCESS) {
          faultedCharges.add(key);
        }
      }
      List<String> ambiguousNotifies = new ArrayList<>();
      for (int i = 0; i < NOTIFIES; i += 10) {
        String key = keysByTool.get("notify").get(i);
        notifications.inject(key, i % 20 == 0 ? Fault.ERROR_AFTER_EFFECT : Fault.DROP_AFTER_EFFECT);
        ambiguousNotifies.add(key);
      }

      Properties streamsProps = new Properties();
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "exactly-once-it");
      streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
      streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
      var registryClient = SchemaRegistries.forUrl(registry);
      List<String> lanes = List.of("payments", "refunds", "events", "notify");
      // the executor closes the connectors it makes for policies applied live, not these
      Map<String, Connector> connectors = Connectors.forLanes(policies, lanes, Clock.systemUTC());
      try (AutoCloseable closeConnectors = () -> connectors.values().forEach(Connector::close);
          KafkaStreams ledger =
              LedgerTopology.streams(LedgerConfig.of(policies, registry), streamsProps);
          EffectExecutor executor =
              EffectExecutor.start(
                  ExecutorConfig.of(Fixtures.kafka(kafka.bootstrapServers()), lanes, registry),
                  connectors,
                  policies);
          var results =
              new TopicCollector<>(
                  kafka.bootstrapServers(),
                  Topics.RESULTS,
                  new RegistryAvroSerde<>(registryClient, ToolResult.class));
          var outcomes = Fixtures.outcomes(kafka.bootstrapServers(), registry);
          var effects =
              new TopicCollector<>(kafka.bootstrapServers(), "effects", new StringDeserializer());
          var dispatches = new DispatchCollectors(kafka.bootstrapServers(), registry)) {
        ledger.start();

        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> send(intents, registry));
        CompletableFuture<Void> duplicates =
            CompletableFuture.runAsync(() -> send(intents, registry));
        CompletableFuture.allOf(first, duplicates).get();

        int actions = CHARGES + REFUNDS + PUBLISHES + NOTIFIES;
        await("replies to all " + actions + " actions, each settled (both sends answered)")
            .atMost(Duration.ofMinutes(5))
            .pollInterval(Duration.ofSeconds(1))
            .untilAsserted(
                () -> {
                  assertThat(results.byKey.size()).as("keys replied to").isEqualTo(actions);
                  assertThat(
                          results.byKey.entrySet().stream()
                              .filter(e -> !settled(e.getValue()))
                              .map(
                                  e ->
                                      e.getKey()
                                          + "="
                                          + e.getValue().stream()
                                              .map(ToolResult::getStatus)
                                              .toList())
                              .toList())
                      .as("keys not settled yet (key=statuses of its replies)")
                      .isEmpty();
                });

        // Every action took effect once, and only once, whatever the faults.
        assertThat(keysByTool.get("charge"))
            .allSatisfy(k -> assertThat(charges.effects(k)).as("charge %s", k).isEqualTo(1));
        assertThat(faultedCharges)
            .allSatisfy(
                k ->
                    assertThat(charges.requests(k))
                        .as("%s retried after its fault", k)
                        .isGreaterThan(1));
        assertThat(count(postgres, "SELECT count(*) FROM refunds")).isEqualTo(REFUNDS);
        assertThat(count(postgres, "SELECT count(DISTINCT customer) FROM refunds"))
            .isEqualTo(REFUNDS);
        await("an effect record for each publish")
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () ->
                    assertThat(effects.byKey.keySet())
                        .as("keys with an effect record")
                        .containsAll(keysByTool.get("publish")));
        assertThat(keysByTool.get("publish"))
            .allSatisfy(k -> assertThat(effects.byKey.get(k)).as("publish %s", k).hasSize(1));
        assertThat(keysByTool.get("notify"))
            .allSatisfy(k -> assertThat(notifications.effects(k)).as("notify %s", k).isEqualTo(1));

        // Ambiguity at a downstream that ignores keys is held, never retried blind.
        assertThat(ambiguousNotifies)
            .allSatisfy(
                k -> {
                  assertThat(notifications.requests(k)).as("not retried: %s", k).isEqualTo(1);
                  assertThat(lastStatus(results.byKey.get(k))).isEqualTo(ResultStatus.UNKNOWN);
                });

        // The reconciler finds the held effects downstream and completes them, confirms the
        // completed ones, and spots an effect nobody asked the ledger for.
        try (Connection c = postgres.getPostgresDatabase().getConnection();
            Statement s = c.createStatement()) {
          s.execute(
              "INSERT INTO effect_ledger_dedup (effect_key, tool) VALUES ('rogue-refund', 'refund')");
        }
        Map<String, Connector> lookups =
            Connectors.forLanes(
                policies, List.of("notify", "payments", "refunds"), Clock.systemUTC());
        try (AutoCloseable closeLookups = () -> lookups.values().forEach(Connector::close);
            Reconciler reconciler =
                new Reconciler(
                    Fixtures.kafka(kafka.bootstrapServers()),
                    registry,
                    lookups,
                    Reconciler.lanesOf(policies),
                    Duration.ZERO,
                    Clock.systemUTC())) {
          var report = reconciler.reconcileOnce();
          assertThat(report.tool("notify").heldFoundEffect()).isEqualTo(ambiguousNotifies.size());
          assertThat(report.tool("charge").confirmed()).isEqualTo(CHARGES);
          assertThat(report.tool("charge").missingEffect()).isZero();
          assertThat(report.tool("refund").confirmed()).isEqualTo(REFUNDS);
          assertThat(report.tool("refund").effectWithoutEntry()).isEqualTo(1);
        }
        await("the held notifies completed by the reconciler (last reply SUCCEEDED)")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () ->
                    assertThat(ambiguousNotifies)
                        .allSatisfy(
                            k ->
                                assertThat(lastStatus(results.byKey.get(k)))
                                    .as("last reply to %s", k)
                                    .isEqualTo(ResultStatus.SUCCEEDED)));

        // Every committed dispatch has an outcome for its attempt.
        await("an outcome for each committed dispatch's attempt")
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () ->
                    assertThat(dispatches.all())
                        .allSatisfy(
                            d ->
                                assertThat(
                                        outcomes.byKey.getOrDefault(
                                            d.getIdempotencyKey(), List.of()))
                                    .as(
                                        "outcome for %s attempt %s",
                                        d.getIdempotencyKey(), d.getAttempt())
                                    .anyMatch(o -> o.getAttempt() == d.getAttempt())));
        assertThat(dispatches.all()).hasSize(actions);
        assertThat(results.total()).isGreaterThanOrEqualTo(2 * actions + ambiguousNotifies.size());
      }
    }
  }

  private static boolean settled(List<ToolResult> replies) {
    return replies.stream()
            .anyMatch(
                r ->
                    r.getStatus() == ResultStatus.SUCCEEDED
                        || r.getStatus() == ResultStatus.UNKNOWN)
        && replies.size() >= 2;
  }

  private static ResultStatus lastStatus(List<ToolResult> replies) {
    return replies.get(replies.size() - 1).getStatus();
  }

  private static void addActions(
      List<ToolIntent> intents, Map<String, List<String>> keysByTool, String tool, int n) {
    for (int i = 0; i < n; i++) {
      String key = tool + "-" + i;
      String args = "{\"amount\":" + (100 + i) + ",\"to\":\"cus_" + tool + "_" + i + "\"}";
      intents.add(
          ToolIntent.newBuilder()
              .setIdempotencyKey(key)
              .setTenant("acme")
              .setRunId("run-" + i)
              .setStepId(tool)
              .setTool(tool)
              .setArguments(args)
              .setArgumentsHash(ArgumentsHash.of(args, List.of()))
              .setRequestedAt(Instant.now())
              .build());
      keysByTool.computeIfAbsent(tool, t -> new ArrayList<>()).add(key);
    }
  }

  private static void send(List<ToolIntent> intents, String registry) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    try (KafkaProducer<String, ToolIntent> producer =
        new KafkaProducer<>(
            props,
            new StringSerializer(),
            new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), ToolIntent.class))) {
      intents.forEach(
          intent ->
              producer.send(
                  new ProducerRecord<>(Topics.INTENTS, intent.getIdempotencyKey(), intent)));
    }
  }

  private static int count(EmbeddedPostgres postgres, String sql) throws Exception {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Reads every dispatch lane read_committed. */
  private static final class DispatchCollectors implements AutoCloseable {
    private final List<TopicCollector<Dispatch>> lanes = new ArrayList<>();

    DispatchCollectors(String bootstrap, String registry) {
      for (String lane : List.of("payments", "refunds", "events", "notify")) {
        lanes.add(
            new TopicCollector<>(
                bootstrap,
                Topics.dispatch(lane),
                new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), Dispatch.class)));
      }
    }

    List<Dispatch> all() {
      return lanes.stream().flatMap(c -> c.records.stream()).map(r -> r.value()).toList();
    }

    @Override
    public void close() {
      lanes.forEach(TopicCollector::close);
    }
  }
}
