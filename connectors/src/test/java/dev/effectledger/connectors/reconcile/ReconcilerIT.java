package dev.effectledger.connectors.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.Fixtures;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Held keys are resolved by the reconciler, once, and only in the life of the key they were held.
 */
@Tag("integration")
class ReconcilerIT {

  private static final String REGISTRY = "mock://reconciler-it";

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path stateDir;

  private final SchemaRegistry registryClient = SchemaRegistries.forUrl(REGISTRY);

  @BeforeAll
  static void createTopics() {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 1);
    }
    topics.put(Topics.dispatch("payments"), 1);
    kafka.createTopics(topics);
  }

  @Test
  @Timeout(120)
  void shouldReleaseHeldKeyWithNoEffectDownstreamOnSchedule() throws Exception {
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));
        Harness h = new Harness(policies(downstream), "k1")) {
      h.heldUnknown("k1");

      try (Reconciler reconciler = h.reconciler().every(Duration.ofMillis(500))) {
        await("k1 released by the scheduled reconciler (a second result)")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () -> assertThat(h.results.byKey.get("k1")).as("results of k1").hasSize(2));
      }

      ToolResult released = h.results.byKey.get("k1").get(1);
      assertThat(released.getStatus()).isEqualTo(ResultStatus.FAILED);
      assertThat(released.getError().getRetriable())
          .as("released: the intent may be sent again")
          .isTrue();
      assertThat(downstream.requests("k1")).isZero();
    }
  }

  @Test
  @Timeout(120)
  void shouldKeepOnlyTheKeysThatNeedALookInMemory() throws Exception {
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));
        Harness h = new Harness(policies(downstream), "m1")) {
      // tool-audit is shared with this class's other tests: read only from here on
      java.time.Instant start = java.time.Instant.now().minusSeconds(1);
      for (int i = 0; i < 20; i++) {
        h.intent("done-" + i);
        h.outcome("done-" + i, OutcomeStatus.SUCCEEDED);
      }
      h.heldUnknown("held-1");
      await("a result for each of done-0 .. done-19")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(h.results.byKey.keySet())
                      .as("keys with a result")
                      .containsAll(
                          java.util.stream.IntStream.range(0, 20)
                              .mapToObj(i -> "done-" + i)
                              .toList()));

      try (Reconciler reconciler = h.reconciler().startingAt(start)) {
        ToolReport first = reconciler.reconcileOnce().total();
        // every completed key looked up once (the downstream never saw them: missing), the held
        // one settled; then only the held key, until the ledger answers its settlement
        assertThat(first.confirmed() + first.missingEffect()).isEqualTo(20);
        assertThat(first.heldNoEffect()).isEqualTo(1);
        assertThat(reconciler.tracked()).isEqualTo(1);
        ToolReport second = reconciler.reconcileOnce().total();
        assertThat(second.confirmed() + second.missingEffect()).isZero(); // not looked up again
        await("the reconciler tracks no held key (released: nothing left to look at)")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () -> {
                  reconciler.reconcileOnce();
                  assertThat(reconciler.tracked()).as("held keys the reconciler tracks").isZero();
                });
      }
    }
  }

  /**
   * The double effect a single-broker chaos run found (2026-11-23): a resolution of a key's first
   * life, published again from a view of tool-audit that had not caught up (a reconciler restarted,
   * or one whose read was held back), must not release the key's second life while its effect is in
   * flight. The stale resolution is replayed here byte for byte, as a reconciler published it.
   */
  @Test
  @Timeout(120)
  void shouldNotLetAStaleResolutionOfTheFirstLifeReleaseTheSecond() throws Exception {
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));
        Harness h = new Harness(policies(downstream), "k2");
        var dispatches =
            new TopicCollector<>(
                kafka.bootstrapServers(),
                Topics.dispatch("payments"),
                new ByteArrayDeserializer());
        var outcomes =
            new TopicCollector<>(
                kafka.bootstrapServers(), Topics.OUTCOMES, new ByteArrayDeserializer());
        Reconciler reconciler = h.reconciler()) {
      h.heldUnknown("k2");
      reconciler.reconcileOnce();
      await("k2 released (a second result)")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(h.results.byKey.get("k2")).as("results of k2").hasSize(2));
      await("the resolution of k2 read from tool-outcomes")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(outcomes.byKey.get("k2")).as("outcomes of k2").hasSize(2));
      byte[] resolution = outcomes.byKey.get("k2").get(1);

      h.intent("k2"); // the agent sends again: the key's second life
      await("the second life of k2 dispatched")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(dispatches.byKey.get("k2")).as("dispatches of k2").hasSize(2));
      h.publishRaw(Topics.OUTCOMES, "k2", resolution); // the first life's resolution, again
      h.outcome("k2", OutcomeStatus.SUCCEEDED); // the second life's effect

      await("the second life's success of k2")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(h.results.byKey.get("k2"))
                      .extracting(ToolResult::getStatus)
                      .as("result statuses of k2")
                      .contains(ResultStatus.SUCCEEDED));
      assertThat(h.results.byKey.get("k2"))
          .extracting(ToolResult::getStatus)
          .as("held, released, then the second life's success: never released twice")
          .containsExactly(ResultStatus.UNKNOWN, ResultStatus.FAILED, ResultStatus.SUCCEEDED);
    }
  }

  /**
   * A reconciler whose read of tool-audit does not yet show the ledger's answer to its resolution
   * (here, the ledger is stopped) does not resolve the same held key again.
   */
  @Test
  @Timeout(120)
  void shouldResolveAHeldEventOnceWhileTheLedgerHasNotAnsweredIt() throws Exception {
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));
        Harness h = new Harness(policies(downstream), "k3");
        var outcomes =
            new TopicCollector<>(
                kafka.bootstrapServers(), Topics.OUTCOMES, new ByteArrayDeserializer());
        Reconciler reconciler = h.reconciler()) {
      h.heldUnknown("k3");
      h.ledger.close(Duration.ofSeconds(30));

      assertThat(reconciler.reconcileOnce().tool("charge").heldNoEffect()).isEqualTo(1);
      assertThat(reconciler.reconcileOnce().tool("charge").heldNoEffect()).isZero();

      await("the resolution of k3 read from tool-outcomes")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(outcomes.byKey.get("k3"))
                      .as("outcomes of k3")
                      .hasSizeGreaterThanOrEqualTo(2));
      // A second resolution, if one was published, is read once a record sent after it is: the
      // reconciler publishes synchronously (reconcileOnce returns once its sends are acked), and
      // tool-outcomes has one partition here, so this marker lands after every resolution.
      h.outcome("k3-read-marker", OutcomeStatus.SUCCEEDED);
      await("the collector reads the marker sent after both reconciler passes")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(outcomes.byKey.keySet())
                      .as("keys read on tool-outcomes")
                      .contains("k3-read-marker"));
      assertThat(outcomes.byKey.get("k3"))
          .as("the executor's outcome and one resolution")
          .hasSize(2);
    }
  }

  private static ToolPolicies policies(CountingDownstream downstream) throws Exception {
    return ToolPolicies.of(
        ToolPolicy.builder("charge", ToolClass.IRREVERSIBLE)
            .window(Duration.ofDays(30))
            .pendingTimeout(Duration.ofMinutes(30))
            .onInFlight(InFlightPolicy.COALESCE)
            .onAmbiguous(AmbiguityPolicy.HOLD)
            .lane("payments")
            .connector("http")
            .maxAttempts(3)
            .bypassAllowed(false)
            .build()
            .withSettings(
                "http",
                new ObjectMapper()
                    .readTree(
                        "{\"url\":\""
                            + downstream.url()
                            + "\",\"honoursKeys\":true,"
                            + "\"lookupUrl\":\""
                            + downstream.url()
                            + "?key={key}\"}")));
  }

  /**
   * A running ledger with one application id per test, and clients that play agent and executor.
   */
  private final class Harness implements AutoCloseable {
    final ToolPolicies policies;
    final KafkaStreams ledger;
    final TopicCollector<ToolResult> results;
    final KafkaProducer<String, byte[]> producer;

    Harness(ToolPolicies policies, String name) {
      this.policies = policies;
      Properties streamsProps = new Properties();
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "reconciler-it-" + name);
      streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve(name).toString());
      ledger = LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), streamsProps);
      results =
          new TopicCollector<>(
              kafka.bootstrapServers(),
              Topics.RESULTS,
              new RegistryAvroSerde<>(registryClient, ToolResult.class));
      producer =
          new KafkaProducer<>(
              Fixtures.kafka(kafka.bootstrapServers()),
              new StringSerializer(),
              new ByteArraySerializer());
      ledger.start();
    }

    Reconciler reconciler() {
      return new Reconciler(
          Fixtures.kafka(kafka.bootstrapServers()),
          REGISTRY,
          Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC()),
          Reconciler.lanesOf(policies),
          Duration.ZERO,
          Clock.systemUTC());
    }

    /** The key is dispatched, and its executor lost its answer: the ledger holds it. */
    void heldUnknown(String key) throws Exception {
      intent(key);
      outcome(key, OutcomeStatus.AMBIGUOUS);
      await("the ledger holds " + key + " (its first result)")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(results.byKey.keySet()).as("keys with a result").contains(key));
      assertThat(results.byKey.get(key).get(0).getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    }

    void intent(String key) throws Exception {
      ToolIntent intent =
          ToolIntent.newBuilder()
              .setIdempotencyKey(key)
              .setTenant("acme")
              .setRunId("r")
              .setStepId("s")
              .setTool("charge")
              .setArguments("{\"amount\":1}")
              .setArgumentsHash(ArgumentsHash.of("{\"amount\":1}", List.of()))
              .setRequestedAt(Instant.now())
              .build();
      publishRaw(
          Topics.INTENTS,
          key,
          new RegistryAvroSerde<>(registryClient, ToolIntent.class)
              .serialize(Topics.INTENTS, intent));
    }

    /** An executor's outcome for attempt 1, as an executor that names no life sends it. */
    void outcome(String key, OutcomeStatus status) throws Exception {
      Outcome outcome =
          Outcome.newBuilder()
              .setIdempotencyKey(key)
              .setTenant("acme")
              .setTool("charge")
              .setAttempt(1)
              .setStatus(status)
              .setResultJson(status == OutcomeStatus.SUCCEEDED ? "{\"id\":\"ch_1\"}" : null)
              .setEffectId(status == OutcomeStatus.SUCCEEDED ? "ch_1" : null)
              .setCompletedAt(Instant.now())
              .build();
      publishRaw(
          Topics.OUTCOMES,
          key,
          new RegistryAvroSerde<>(registryClient, Outcome.class)
              .serialize(Topics.OUTCOMES, outcome));
    }

    void publishRaw(String topic, String key, byte[] value) throws Exception {
      producer.send(new ProducerRecord<>(topic, key, value)).get();
    }

    @Override
    public void close() {
      producer.close();
      results.close();
      ledger.close(Duration.ofSeconds(30));
    }
  }
}
