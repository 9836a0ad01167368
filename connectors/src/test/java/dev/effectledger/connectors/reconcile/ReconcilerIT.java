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
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** A held key whose effect the downstream never saw is released by the scheduled reconciler. */
@Tag("integration")
class ReconcilerIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path stateDir;

  @Test
  @Timeout(120)
  void shouldReleaseHeldKeyWithNoEffectDownstreamOnSchedule() throws Exception {
    String registry = "mock://reconciler-it";
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 1);
    }
    topics.put(Topics.dispatch("payments"), 1);
    kafka.createTopics(topics);
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1))) {
      ToolPolicies policies =
          ToolPolicies.of(
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
      Properties streamsProps = new Properties();
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "reconciler-it");
      streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
      var registryClient = SchemaRegistries.forUrl(registry);
      Properties producerProps = Fixtures.kafka(kafka.bootstrapServers());
      try (KafkaStreams ledger =
              new KafkaStreams(
                  LedgerTopology.build(LedgerConfig.of(policies, registry)),
                  LedgerTopology.streamsProperties(streamsProps));
          var results =
              new TopicCollector<>(
                  kafka.bootstrapServers(),
                  Topics.RESULTS,
                  new RegistryAvroSerde<>(registryClient, ToolResult.class));
          KafkaProducer<String, ToolIntent> intents =
              new KafkaProducer<>(
                  producerProps,
                  new StringSerializer(),
                  new RegistryAvroSerde<>(registryClient, ToolIntent.class));
          KafkaProducer<String, Outcome> outcomes =
              new KafkaProducer<>(
                  producerProps,
                  new StringSerializer(),
                  new RegistryAvroSerde<>(registryClient, Outcome.class))) {
        ledger.start();
        intents
            .send(
                new ProducerRecord<>(
                    Topics.INTENTS,
                    "k1",
                    ToolIntent.newBuilder()
                        .setIdempotencyKey("k1")
                        .setTenant("acme")
                        .setRunId("r")
                        .setStepId("s")
                        .setTool("charge")
                        .setArguments("{\"amount\":1}")
                        .setArgumentsHash(ArgumentsHash.of("{\"amount\":1}", List.of()))
                        .setRequestedAt(Instant.now())
                        .build()))
            .get();
        // The executor lost its answer: the ledger holds the key.
        outcomes
            .send(
                new ProducerRecord<>(
                    Topics.OUTCOMES,
                    "k1",
                    Outcome.newBuilder()
                        .setIdempotencyKey("k1")
                        .setTenant("acme")
                        .setTool("charge")
                        .setAttempt(1)
                        .setStatus(OutcomeStatus.AMBIGUOUS)
                        .setCompletedAt(Instant.now())
                        .build()))
            .get();
        await().atMost(Duration.ofSeconds(60)).until(() -> results.byKey.containsKey("k1"));
        assertThat(results.byKey.get("k1").get(0).getStatus()).isEqualTo(ResultStatus.UNKNOWN);

        try (Reconciler reconciler =
            new Reconciler(
                    Fixtures.kafka(kafka.bootstrapServers()),
                    registry,
                    Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC()),
                    Duration.ZERO,
                    Clock.systemUTC())
                .every(Duration.ofMillis(500))) {
          await().atMost(Duration.ofSeconds(60)).until(() -> results.byKey.get("k1").size() == 2);
        }

        ToolResult released = results.byKey.get("k1").get(1);
        assertThat(released.getStatus()).isEqualTo(ResultStatus.FAILED);
        assertThat(released.getError().getRetriable())
            .as("released: the intent may be sent again")
            .isTrue();
        assertThat(downstream.requests("k1")).isZero();
      }
    }
  }
}
