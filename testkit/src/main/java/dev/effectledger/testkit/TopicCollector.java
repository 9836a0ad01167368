package dev.effectledger.testkit;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads one topic read_committed from its start, on a thread of its own, keeping every record (by
 * key too) until closed: what a test asserts "exactly one per key" against.
 *
 * @param <V> value type
 */
public final class TopicCollector<V> implements AutoCloseable {

  public final Map<String, List<V>> byKey = new ConcurrentHashMap<>();
  public final List<ConsumerRecord<String, V>> records = new CopyOnWriteArrayList<>();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final Thread thread;

  public TopicCollector(String bootstrap, String topic, Deserializer<V> values) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, "collector-" + topic + "-" + System.nanoTime());
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    KafkaConsumer<String, V> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), values);
    consumer.subscribe(List.of(topic));
    thread =
        new Thread(
            () -> {
              try (consumer) {
                while (running.get()) {
                  for (ConsumerRecord<String, V> record : consumer.poll(Duration.ofMillis(200))) {
                    records.add(record);
                    byKey
                        .computeIfAbsent(record.key(), k -> new CopyOnWriteArrayList<>())
                        .add(record.value());
                  }
                }
              }
            },
            "collector-" + topic);
    thread.setDaemon(true);
    thread.start();
  }

  public int total() {
    return records.size();
  }

  @Override
  public void close() {
    running.set(false);
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
