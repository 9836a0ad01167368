package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * tool-intents accepts records far above a producer's default max.request.size (1 MiB): a 2 MB
 * intent is dead-lettered cut to what can be produced, with its size and digest, answered REJECTED,
 * and the partition goes on serving the next intent. (A dead letter copying the whole value was
 * refused by the ledger's producer, failed the task, and wedged the partition.)
 */
@Tag("integration")
class OversizedIntentIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path stateDir;

  @Test
  @Timeout(120)
  void shouldDeadLetterAnIntentTooLargeToCopyAndKeepServingThePartition() throws Exception {
    String registry = "mock://oversized-it";
    kafka.createTopics(Fixtures.topics(1));
    ConfigResource intentsTopic = new ConfigResource(ConfigResource.Type.TOPIC, Topics.INTENTS);
    kafka
        .cluster()
        .admin()
        .incrementalAlterConfigs(
            Map.of(
                intentsTopic,
                List.of(
                    new AlterConfigOp(
                        new ConfigEntry(
                            TopicConfig.MAX_MESSAGE_BYTES_CONFIG, Integer.toString(4 << 20)),
                        AlterConfigOp.OpType.SET))))
        .all()
        .get(30, TimeUnit.SECONDS);
    Properties bigProducer = new Properties();
    bigProducer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    bigProducer.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 << 20);
    String huge = "{\"blob\":\"" + "x".repeat(2_000_000) + "\"}";
    try (KafkaStreams streams =
            LedgerTopology.streams(
                LedgerConfig.of(Fixtures.policies(), registry),
                Fixtures.streamsProperties(kafka.bootstrapServers(), "oversized-it", stateDir));
        KafkaProducer<String, ToolIntent> intents =
            new KafkaProducer<>(
                bigProducer,
                new StringSerializer(),
                new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), ToolIntent.class));
        var dispatches = Fixtures.dispatches(kafka.bootstrapServers(), registry);
        var results = Fixtures.results(kafka.bootstrapServers(), registry);
        KafkaConsumer<String, byte[]> dlq =
            Fixtures.committedReader(
                kafka.bootstrapServers(), "dlq-reader", new ByteArrayDeserializer())) {
      Fixtures.Health health = Fixtures.Health.watch(streams);
      streams.start();
      ToolIntent big = Fixtures.intent("big", 1);
      big.setArguments(huge);
      intents.send(new ProducerRecord<>(Topics.INTENTS, "big", big)).get();
      intents
          .send(new ProducerRecord<>(Topics.INTENTS, "after", Fixtures.intent("after", 1)))
          .get();

      await("the dispatch of after (the ledger went on past the oversized intent)")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> assertThat(dispatches.byKey.keySet()).as("keys dispatched").contains("after"));
      dlq.subscribe(List.of(Topics.INTENTS_DLQ));
      List<ConsumerRecord<String, byte[]>> letters = new ArrayList<>();
      await("a dead letter on " + Topics.INTENTS_DLQ)
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                dlq.poll(Duration.ofMillis(200)).forEach(letters::add);
                assertThat(letters).as("records read from %s", Topics.INTENTS_DLQ).isNotEmpty();
              });
      ConsumerRecord<String, byte[]> letter = letters.get(0);
      assertThat(letter.value()).hasSize(DeadLetters.MAX_VALUE_BYTES);
      assertThat(header(letter, DeadLetters.CODE)).isEqualTo("ARGUMENTS_TOO_LARGE");
      assertThat(header(letter, DeadLetters.VALUE_TRUNCATED)).isEqualTo("true");
      assertThat(Integer.parseInt(header(letter, DeadLetters.VALUE_BYTES)))
          .isGreaterThan(2_000_000);
      assertThat(header(letter, DeadLetters.VALUE_SHA256)).hasSize(64);
      assertThat(header(letter, DeadLetters.SOURCE_OFFSET)).isEqualTo("0");
      await("the rejection of big")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(results.byKey.keySet()).as("keys with a result").contains("big"));
      assertThat(results.byKey.get("big").get(0).getStatus()).isEqualTo(ResultStatus.REJECTED);
      assertThat(health.threadFailures).isEmpty();
      assertThat(health.states)
          .doesNotContain(KafkaStreams.State.PENDING_ERROR, KafkaStreams.State.ERROR);
      assertThat(streams.state().isRunningOrRebalancing()).isTrue();
    }
  }

  private static String header(ConsumerRecord<String, byte[]> record, String name) {
    return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }
}
