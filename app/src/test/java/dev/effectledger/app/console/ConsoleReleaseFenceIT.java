package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An operator's release in the console fences the held life first (issue 52): "mark as not applied"
 * and "look up again" refuse, saying why, while the attempt journal shows an executor's start of
 * the life unanswered, and release once it is answered, the fence in the journal.
 */
@Tag("integration")
class ConsoleReleaseFenceIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  @Timeout(120)
  void shouldReleaseAHeldKeyOnlyOnceNoStartOfItsLifeIsUnanswered() throws Exception {
    kafka.createTopics(
        Map.of(Topics.OUTCOMES, 1, Topics.dispatch("wires"), 2, Topics.attempts("wires"), 2));
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingDownstream bank =
            CountingDownstream.start(Duration.ofSeconds(1)).honoursKeys(false);
        var outcomes =
            new TopicCollector<>(
                kafka.bootstrapServers(),
                Topics.OUTCOMES,
                new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry.url()), Outcome.class))) {
      ToolPolicies policies =
          new ToolPolicyLoader()
              .parse(
                  """
                  tools:
                    wire:
                      class: irreversible
                      lane: wires
                      connector: http
                      settings: {url: "%1$s", lookupUrl: "%1$s?key={key}", effectIdPointer: /id}
                  """
                      .formatted(bank.url()),
                  "console-fence-tools.yaml");
      ConsoleActions actions =
          new ConsoleActions(
              props,
              registry.url(),
              () -> policies,
              "console",
              null,
              Duration.ofDays(1),
              Clock.systemUTC());
      try {
        JsonNode held =
            JSON.readTree(
                "{\"tenant\":\"acme\",\"key\":\"w-1\",\"tool\":\"wire\",\"attempts\":1,"
                    + "\"effectKey\":\"w-1\",\"incarnation\":5,\"state\":\"UNKNOWN\"}");
        journal("w-1", AttemptJournal.marker("w-1", 1, 5L), "started 0 executor-a");

        ConsoleActions.Done refused = actions.markReleased(held, "alice");
        ConsoleActions.Done lookup = actions.lookUpAgain(held, "alice");

        assertThat(refused.ok()).isFalse();
        assertThat(refused.message()).contains("started this key's effect");
        assertThat(lookup.ok()).isFalse();
        assertThat(lookup.message()).contains("started this key's effect");
        assertThat(bank.requests("w-1")).as("not looked up before the fence allows").isZero();
        ConsoleActions.Done applied = actions.markApplied(held, "ch_9", "", "alice");
        assertThat(applied.ok())
            .as(
                "applied is safe with a start unanswered: it may be the effect named (%s)",
                applied.message())
            .isTrue();

        journal("w-1", AttemptJournal.marker("w-1", 1, 5L), "answered 0 effect");
        ConsoleActions.Done released = actions.markReleased(held, "alice");

        assertThat(released.ok()).as(released.message()).isTrue();
        await("the release's outcome of w-1 (its second)")
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () ->
                    assertThat(outcomes.byKey.getOrDefault("w-1", java.util.List.of()))
                        .as("outcomes of w-1")
                        .hasSize(2));
        assertThat(outcomes.byKey.get("w-1").get(0).getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
        Outcome outcome = outcomes.byKey.get("w-1").get(1);
        assertThat(outcome.getStatus()).isEqualTo(OutcomeStatus.RETRYABLE);
        assertThat(outcome.getActor()).isEqualTo("alice");
        assertThat(outcome.getIncarnation()).isEqualTo(5L);
      } finally {
        actions.close();
      }
    }
  }

  private static void journal(String key, String marker, String value) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer
          .send(
              new ProducerRecord<>(
                  Topics.attempts("wires"),
                  Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % 2,
                  marker.getBytes(StandardCharsets.UTF_8),
                  value.getBytes(StandardCharsets.UTF_8)))
          .get(30, TimeUnit.SECONDS);
    }
  }
}
