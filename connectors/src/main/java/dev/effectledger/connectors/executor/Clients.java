package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.executor.internal.JournalReader;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka clients an executor uses, with the settings it needs of them; tests pass mocks.
 *
 * @param consumer the dispatch consumer: read_committed, manual commits, in the executor's group
 * @param producer the transactional producer of outcomes, effect records and journal markers
 * @param journalReader opens the attempt-journal reader of the given lanes
 */
record Clients(
    Consumer<byte[], byte[]> consumer,
    Producer<byte[], byte[]> producer,
    Function<List<String>, JournalReader> journalReader) {

  /**
   * The transaction timeout unless the settings name one: short, so a killed executor's open
   * transaction ends soon.
   */
  static final Duration TRANSACTION_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Unfinished dispatches per unit of concurrency: the executor pauses its consumer there, and one
   * poll returns at most that many records.
   */
  static final int BACKLOG_PER_WORKER = 4;

  /** Real clients for {@code config}, the producer under {@code transactionalId}. */
  static Clients kafka(ExecutorConfig config, String transactionalId) {
    return new Clients(
        new KafkaConsumer<>(
            consumerProps(config), new ByteArrayDeserializer(), new ByteArrayDeserializer()),
        new KafkaProducer<>(
            producerProps(config, transactionalId),
            new ByteArraySerializer(),
            new ByteArraySerializer()),
        lanes -> JournalReader.open(config.kafka(), lanes));
  }

  private static Properties consumerProps(ExecutorConfig config) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.putIfAbsent(
        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, config.concurrency() * 4); // one backlog per poll
    if (config.instanceId() != null) {
      props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, config.instanceId());
    }
    return props;
  }

  private static Properties producerProps(ExecutorConfig config, String transactionalId) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.putIfAbsent(
        ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) TRANSACTION_TIMEOUT.toMillis());
    return props;
  }
}
