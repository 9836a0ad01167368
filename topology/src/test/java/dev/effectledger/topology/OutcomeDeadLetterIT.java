package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * An outcome the ledger cannot deserialize goes to tool-outcomes.dlq through Kafka Streams' own
 * dead-letter support, and the ledger keeps processing. (TopologyTestDriver does not route these
 * dead letters, so this runs on a real broker.)
 */
@Tag("integration")
class OutcomeDeadLetterIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path stateDir;

  @Test
  @Timeout(120)
  void shouldDeadLetterUndecodableOutcomeAndKeepRunning() throws Exception {
    String registry = "mock://outcome-dlq-it";
    kafka.createTopics(Fixtures.topics(1));
    Properties producerProps = new Properties();
    producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (KafkaStreams streams =
            LedgerTopology.streams(
                LedgerConfig.of(Fixtures.policies(), registry),
                Fixtures.streamsProperties(kafka.bootstrapServers(), "outcome-dlq-it", stateDir));
        KafkaProducer<byte[], byte[]> raw =
            new KafkaProducer<>(
                producerProps, new ByteArraySerializer(), new ByteArraySerializer());
        KafkaProducer<String, ToolIntent> intents =
            Fixtures.intentProducer(kafka.bootstrapServers(), registry);
        var dispatches = Fixtures.dispatches(kafka.bootstrapServers(), registry);
        KafkaConsumer<String, byte[]> dlq =
            Fixtures.committedReader(
                kafka.bootstrapServers(), "dlq-reader", new ByteArrayDeserializer())) {
      Fixtures.Health health = Fixtures.Health.watch(streams);
      streams.start();

      raw.send(new ProducerRecord<>(Topics.OUTCOMES, "k1".getBytes(), new byte[] {9, 9})).get();
      intents
          .send(new ProducerRecord<>(Topics.INTENTS, "after", Fixtures.intent("after", 1)))
          .get();

      dlq.subscribe(List.of(Topics.OUTCOMES_DLQ));
      List<ConsumerRecord<String, byte[]>> letters = new ArrayList<>();
      await("a dead letter on " + Topics.OUTCOMES_DLQ)
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> {
                dlq.poll(Duration.ofMillis(200)).forEach(letters::add);
                assertThat(letters).as("records read from %s", Topics.OUTCOMES_DLQ).isNotEmpty();
              });
      assertThat(letters.get(0).value()).isEqualTo(new byte[] {9, 9});
      assertThat(letters.get(0).headers().lastHeader("__streams.errors.exception")).isNotNull();
      await("the dispatch of after (the ledger went on past the undecodable outcome)")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(dispatches.byKey.keySet()).as("keys dispatched").contains("after"));
      assertThat(health.threadFailures).isEmpty();
      assertThat(health.states)
          .doesNotContain(KafkaStreams.State.PENDING_ERROR, KafkaStreams.State.ERROR);
      assertThat(streams.state().isRunningOrRebalancing()).isTrue();
    }
  }
}
