package dev.effectledger.gateway;

import dev.effectledger.client.IntentPublisher;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.TopicVisibility;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.time.Clock;
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
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the gateway sets up in Kafka: the intent publisher (the client's {@link IntentPublisher}, on
 * a producer that fails closed and fast: an intent the broker did not take within 10 s is reported,
 * and its call answered 503) and the instance's reply topic ({@code tool-results.<instance>}),
 * created when missing.
 */
final class GatewayKafka {

  private GatewayKafka() {}

  /** Publishes to {@code tool-intents}, asking for replies on the instance's reply topic. */
  static IntentPublisher intents(Properties kafka, SchemaRegistry registry, GatewayConfig config) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
    props.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    props.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
    props.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 1);
    return new IntentPublisher(
        new KafkaProducer<>(
            props, new StringSerializer(), new RegistryAvroSerde<>(registry, ToolIntent.class)),
        Topics.INTENTS,
        config.replyTopic(),
        Clock.systemUTC());
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
}
