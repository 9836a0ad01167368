package dev.effectledger.connectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ArgumentsHash;
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

/**
 * A multi-write tool ({@code http-sequence}: charge, then ship) whose second write is refused, on a
 * real broker with the ledger and a real executor: the agent is answered UNKNOWN with
 * PARTIAL_SUCCESS, the report and the corrective action; its retry is replayed the same and sends
 * nothing; the reconciler leaves the key to an operator.
 */
@Tag("integration")
class PartialSuccessIT {

  private static final String REGISTRY = "mock://partial-success-it";

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path stateDir;

  @Test
  @Timeout(120)
  void aPartialSuccessIsHeldForAnOperatorAndReplayed() throws Exception {
    try (CountingDownstream charges = CountingDownstream.start(Duration.ofSeconds(2));
        CountingDownstream shipments = CountingDownstream.start(Duration.ofSeconds(2))) {
      // The shipment acts, then answers 500: the second write may have happened.
      shipments.inject("order-7#2", CountingDownstream.Fault.ERROR_AFTER_EFFECT);
      run(charges, shipments);
    }
  }

  private void run(CountingDownstream charges, CountingDownstream shipments) throws Exception {
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse(
                """
                tools:
                  charge_and_ship:
                    class: irreversible
                    lane: orders
                    connector: http-sequence
                    settings:
                      steps:
                        - {url: "%s", honoursKeys: true, effectIdPointer: /id}
                        - {url: "%s", honoursKeys: true}
                      correctiveAction: refund the charge, or ship by hand, then settle the key
                """
                    .formatted(charges.url(), shipments.url()),
                "test");
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 1);
    }
    topics.put(Topics.dispatch("orders"), 1);
    kafka.createTopics(topics);
    Properties streamsProps = new Properties();
    streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "partial-success-it");
    streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    Properties kafkaProps = Fixtures.kafka(kafka.bootstrapServers());
    try (KafkaStreams ledger =
            LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), streamsProps);
        EffectExecutor executor =
            EffectExecutor.start(
                ExecutorConfig.of(kafkaProps, List.of("orders"), REGISTRY),
                Connectors.forLanes(policies, List.of("orders"), Clock.systemUTC()),
                policies);
        TopicCollector<ToolResult> results =
            new TopicCollector<>(
                kafka.bootstrapServers(),
                Topics.RESULTS,
                new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolResult.class));
        KafkaProducer<String, ToolIntent> producer =
            new KafkaProducer<>(
                kafkaProps,
                new StringSerializer(),
                new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolIntent.class))) {
      ledger.start();
      ToolIntent intent =
          ToolIntent.newBuilder()
              .setIdempotencyKey("order-7")
              .setTenant("acme")
              .setRunId("r")
              .setStepId("s")
              .setTool("charge_and_ship")
              .setArguments("{\"order\":7}")
              .setArgumentsHash(ArgumentsHash.of("{\"order\":7}", List.of()))
              .setRequestedAt(Instant.now())
              .build();
      producer.send(new ProducerRecord<>(Topics.INTENTS, "order-7", intent)).get();
      await("the answer to order-7")
          .atMost(Duration.ofSeconds(90))
          .untilAsserted(
              () -> assertThat(results.byKey.keySet()).as("keys with a reply").contains("order-7"));

      ToolResult answer = results.byKey.get("order-7").get(0);
      assertThat(answer.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
      assertThat(answer.getError().getCode()).isEqualTo("PARTIAL_SUCCESS");
      assertThat(answer.getError().getCorrectiveAction())
          .isEqualTo("refund the charge, or ship by hand, then settle the key");
      JsonNode report = new ObjectMapper().readTree(answer.getResultJson());
      assertThat(report.path("done").get(0).path("effectId").asText()).isNotEmpty();
      assertThat(report.path("failed").path("step").asInt()).isEqualTo(2);
      assertThat(report.path("failed").path("outcome").asText()).isEqualTo("ambiguous");
      assertThat(report.path("failed").path("code").asText()).isEqualTo("HTTP_500");
      assertThat(charges.requests("order-7#1")).isEqualTo(1);
      assertThat(shipments.requests("order-7#2")).isEqualTo(1);

      producer.send(new ProducerRecord<>(Topics.INTENTS, "order-7", intent)).get();
      await("the replayed answer to order-7 (its second reply)")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(results.byKey.get("order-7")).as("replies to order-7").hasSize(2));
      ToolResult replay = results.byKey.get("order-7").get(1);
      assertThat(replay.getReplayed()).isTrue();
      assertThat(replay.getError().getCode()).isEqualTo("PARTIAL_SUCCESS");
      assertThat(replay.getResultJson()).isEqualTo(answer.getResultJson());

      try (Reconciler reconciler =
          new Reconciler(
              kafkaProps,
              REGISTRY,
              Connectors.forLanes(policies, List.of("orders"), Clock.systemUTC()),
              Reconciler.lanesOf(policies),
              Duration.ZERO,
              Clock.systemUTC())) {
        ToolReport report1 = reconciler.reconcileOnce().total();
        assertThat(report1.heldUnresolved()).as("left to an operator").isEqualTo(1);
        assertThat(report1.heldNoEffect() + report1.heldFoundEffect()).isZero();
      }
      // Nothing shows that whatever the pass might have set off has run its course: for a
      // second after it, nothing is sent again and no further reply comes.
      await("nothing sent again and no new reply to order-7 after the reconciler's pass, for 1 s")
          .during(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(3))
          .untilAsserted(
              () -> {
                assertThat(charges.requests("order-7#1")).as("nothing sent again").isEqualTo(1);
                assertThat(shipments.requests("order-7#2"))
                    .as("requests of order-7#2")
                    .isEqualTo(1);
                assertThat(results.byKey.get("order-7")).as("replies to order-7").hasSize(2);
              });
    }
  }
}
