package dev.effectledger.gateway;

import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.TopicVisibility;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Publishes the gateway's intents to {@code tool-intents}, each with the request id the ledger
 * copies onto the replies that answer that intent itself, and owns the instance's reply topic
 * ({@code tool-results.<instance>}), which it creates when missing. The producer fails closed and
 * fast: an intent the broker did not take within 10 s is reported, and its call answered 503.
 */
final class IntentPublisher implements AutoCloseable {

  /** What became of one intent: the broker took it at an offset, or it was not published. */
  interface Published {
    void published(long offset);

    void notPublished(Exception error);
  }

  private final KafkaProducer<String, ToolIntent> producer;

  IntentPublisher(Properties kafka, SchemaRegistry registry) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
    props.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    props.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
    props.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 1);
    this.producer =
        new KafkaProducer<>(
            props, new StringSerializer(), new RegistryAvroSerde<>(registry, ToolIntent.class));
  }

  /** Sends {@code intent} keyed by its idempotency key; {@code then} hears what became of it. */
  void publish(ToolIntent intent, String requestId, Published then) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(Topics.REQUEST_ID_HEADER, requestId.getBytes(StandardCharsets.UTF_8));
    try {
      producer.send(
          new ProducerRecord<>(Topics.INTENTS, null, intent.getIdempotencyKey(), intent, headers),
          (metadata, error) -> {
            if (error != null) {
              then.notPublished(error);
            } else {
              then.published(metadata.offset());
            }
          });
    } catch (RuntimeException e) {
      then.notPublished(e);
    }
  }

  /**
   * Creates the instance's reply topic (a day's retention) when missing and waits until it is
   * served.
   *
   * @throws IllegalStateException naming the topic and what to do when it cannot be created
   */
  static void createReplyTopic(Admin admin, GatewayConfig config) throws Exception {
    try {
      admin
          .createTopics(
              List.of(
                  new NewTopic(
                          config.replyTopic(), config.replyPartitions(), config.replyReplication())
                      .configs(
                          Map.of("retention.ms", String.valueOf(Duration.ofDays(1).toMillis())))))
          .all()
          .get(30, TimeUnit.SECONDS);
      TopicVisibility.await(admin, List.of(config.replyTopic()), Duration.ofSeconds(30));
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException(
            "Cannot create the reply topic "
                + config.replyTopic()
                + " (create it, or grant the gateway CreateTopics): "
                + e.getCause().getMessage(),
            e.getCause());
      }
    }
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }
}
