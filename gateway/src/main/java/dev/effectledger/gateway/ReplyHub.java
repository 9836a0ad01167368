package dev.effectledger.gateway;

import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One read_committed consumer, on one thread, for every call waiting on this gateway instance: it
 * reads every partition of the instance's reply topic from its end at start, and hands each reply
 * to the calls listening on its key. Waiting calls cost a map entry, not a thread.
 */
final class ReplyHub implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReplyHub.class);

  /** Gets every reply for a key, with the request id of the intent it answers, if any. */
  interface Listener {
    void onReply(ToolResult reply, String requestId);
  }

  private final KafkaConsumer<String, ToolResult> consumer;
  private final String topic;
  private final Map<String, Set<Listener>> listeners = new ConcurrentHashMap<>();
  private final Thread thread;
  private volatile boolean running = true;
  private volatile boolean positioned;
  private volatile RuntimeException failure;

  ReplyHub(Properties kafka, String topic, Deserializer<ToolResult> values) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    this.consumer = new KafkaConsumer<>(props, new StringDeserializer(), values);
    this.topic = topic;
    this.thread = new Thread(this::run, "gateway-replies");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  /** True once every partition is read from a position no later reply can precede. */
  boolean ready() {
    return positioned && failure == null;
  }

  RuntimeException failure() {
    return failure;
  }

  int waiting() {
    return listeners.values().stream().mapToInt(Set::size).sum();
  }

  /** Listens to {@code key}'s replies until the returned action runs. */
  Runnable listen(String key, Listener listener) {
    listeners.computeIfAbsent(key, k -> new CopyOnWriteArraySet<>()).add(listener);
    return () ->
        listeners.computeIfPresent(
            key,
            (k, set) -> {
              set.remove(listener);
              return set.isEmpty() ? null : set;
            });
  }

  private void run() {
    try {
      List<TopicPartition> partitions = List.of();
      while (running && partitions.isEmpty()) {
        partitions =
            consumer.partitionsFor(topic, Duration.ofSeconds(5)).stream()
                .map(p -> new TopicPartition(p.topic(), p.partition()))
                .toList();
      }
      consumer.assign(partitions);
      consumer.seekToEnd(partitions);
      partitions.forEach(consumer::position); // the end now, before any intent is published
      positioned = true;
      while (running) {
        try {
          for (ConsumerRecord<String, ToolResult> record : consumer.poll(Duration.ofMillis(100))) {
            deliver(record);
          }
        } catch (RecordDeserializationException e) {
          log.warn(
              "Skipping a record on {} at offset {} that is not a reply: {}",
              e.topicPartition(),
              e.offset(),
              e.getMessage());
          consumer.seek(e.topicPartition(), e.offset() + 1);
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      if (running) {
        failure = e;
        log.error(
            "The gateway's reply consumer stopped on {}; the gateway is not ready. Restart it.",
            topic,
            e);
      }
    } finally {
      consumer.close(CloseOptions.timeout(Duration.ZERO));
    }
  }

  private void deliver(ConsumerRecord<String, ToolResult> record) {
    if (record.key() == null || record.value() == null) {
      return;
    }
    Set<Listener> waiting = listeners.get(record.key());
    if (waiting == null) {
      return;
    }
    Header header = record.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    String requestId = header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    for (Listener listener : waiting) {
      try {
        listener.onReply(record.value(), requestId);
      } catch (RuntimeException e) {
        log.warn("A waiting call failed on its reply for key {}", record.key(), e);
      }
    }
  }

  @Override
  public void close() {
    running = false;
    consumer.wakeup();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
