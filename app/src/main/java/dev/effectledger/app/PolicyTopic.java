package dev.effectledger.app;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.Topics;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Reads and writes the applied policy on {@value Topics#POLICY}: every partition holds the same
 * document under the key {@value #KEY}, written in one transaction so that no task can read a
 * version another task never gets.
 */
final class PolicyTopic {

  static final String KEY = "policy";

  /** One writer at a time: a second {@code tools apply} fences the first. */
  static final String TRANSACTIONAL_ID = "effectledger-tools-apply";

  private PolicyTopic() {}

  /** The latest applied policy (partition 0, read_committed), or empty when none was applied. */
  static Optional<AppliedPolicy> current(Properties kafka) {
    TopicPartition partition = new TopicPartition(Topics.POLICY, 0);
    try (KafkaConsumer<String, byte[]> consumer = PolicyFeed.consumer(kafka)) {
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      long end = consumer.endOffsets(List.of(partition), Duration.ofSeconds(30)).get(partition);
      byte[] latest = null;
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (consumer.position(partition, Duration.ofSeconds(30)) < end) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "Could not read "
                  + Topics.POLICY
                  + " to its end within 60 s; is the cluster healthy?");
        }
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          if (record.value() != null) {
            latest = record.value();
          }
        }
      }
      return latest == null ? Optional.empty() : Optional.of(AppliedPolicy.fromJson(latest));
    }
  }

  /** Writes {@code policy} to each of the topic's {@code partitions} in one transaction. */
  static void publish(Properties kafka, AppliedPolicy policy, int partitions) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, TRANSACTIONAL_ID);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    byte[] document = policy.toJson();
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      for (int p = 0; p < partitions; p++) {
        producer.send(new ProducerRecord<>(Topics.POLICY, p, KEY, document));
      }
      producer.commitTransaction();
    }
  }
}
