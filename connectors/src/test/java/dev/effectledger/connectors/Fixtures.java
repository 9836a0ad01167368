package dev.effectledger.connectors;

import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.TopicCollector;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** Producers and settings for the executor's real-broker tests. */
public final class Fixtures {

  private Fixtures() {}

  /** Kafka settings for executors under test: a short session so a halted member leaves fast. */
  public static Properties kafka(String bootstrap) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
    return props;
  }

  public static Dispatch dispatch(String key, String tool, String lane, String arguments) {
    return dispatch(key, tool, lane, arguments, 1);
  }

  public static Dispatch dispatch(
      String key, String tool, String lane, String arguments, int attempt) {
    return Dispatch.newBuilder()
        .setIdempotencyKey(key)
        .setEffectKey(key)
        .setTenant("acme")
        .setRunId("run-" + key)
        .setStepId("step-1")
        .setTool(tool)
        .setLane(lane)
        .setArguments(arguments)
        .setAttempt(attempt)
        .setDispatchedAt(Instant.now())
        .build();
  }

  public static void send(String bootstrap, String registryUrl, List<Dispatch> dispatches) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<String, Dispatch> producer =
        new KafkaProducer<>(
            props,
            new StringSerializer(),
            new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Dispatch.class))) {
      for (Dispatch d : dispatches) {
        producer.send(
            new ProducerRecord<>("tool-dispatch." + d.getLane(), d.getIdempotencyKey(), d));
      }
    }
  }

  public static TopicCollector<Outcome> outcomes(String bootstrap, String registryUrl) {
    return new TopicCollector<>(
        bootstrap,
        "tool-outcomes",
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Outcome.class));
  }
}
