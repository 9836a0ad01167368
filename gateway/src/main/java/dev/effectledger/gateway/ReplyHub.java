package dev.effectledger.gateway;

import dev.effectledger.client.PendingReply;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.function.Supplier;
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
 * The read_committed consumers of the instance's reply topic, for every call waiting on this
 * gateway instance: each on its own thread, with the partitions whose number is its index modulo
 * their count, reads them from their end at start and hands each reply to the calls listening on
 * its key. A key's replies all come on one partition, so one thread answers them in order. Waiting
 * calls cost a map entry, not a thread. More than one: a poll brings one executor commit's replies
 * at once (hundreds at 2,000 calls/s), and one thread answers them one after another.
 */
final class ReplyHub implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReplyHub.class);

  /**
   * Gets every reply for a key, with the request id of the intent it answers, if any, and for a
   * release's reply the last intent it answers ({@link PendingReply#through}; null otherwise).
   */
  interface Listener {
    void onReply(ToolResult reply, String requestId, Long through);
  }

  private final String topic;
  private final Map<String, Set<Listener>> listeners = new ConcurrentHashMap<>();
  private final List<Reader> readers;

  ReplyHub(Properties kafka, String topic, Supplier<Deserializer<ToolResult>> values, int threads) {
    this.topic = topic;
    List<Reader> all = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      all.add(new Reader(kafka, values.get(), i, threads));
    }
    this.readers = List.copyOf(all);
    readers.forEach(r -> r.thread.start());
  }

  /** True once every partition is read from a position no later reply can precede. */
  boolean ready() {
    return readers.stream().allMatch(r -> r.positioned) && failure() == null;
  }

  RuntimeException failure() {
    return readers.stream().map(r -> r.failure).filter(f -> f != null).findFirst().orElse(null);
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

  /** One consumer on its own thread, for the partitions whose number is its index modulo all. */
  private final class Reader implements Runnable {
    final KafkaConsumer<String, ToolResult> consumer;
    final int index;
    final int of;
    final Thread thread;
    volatile boolean running = true;
    volatile boolean positioned;
    volatile RuntimeException failure;

    Reader(Properties kafka, Deserializer<ToolResult> values, int index, int of) {
      Properties props = new Properties();
      props.putAll(kafka);
      props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      props.remove(ConsumerConfig.GROUP_ID_CONFIG);
      this.consumer = new KafkaConsumer<>(props, new StringDeserializer(), values);
      this.index = index;
      this.of = of;
      this.thread = new Thread(this, of == 1 ? "gateway-replies" : "gateway-replies-" + index);
      this.thread.setDaemon(true);
    }

    @Override
    public void run() {
      try {
        List<TopicPartition> partitions = List.of();
        while (running && partitions.isEmpty()) {
          partitions =
              consumer.partitionsFor(topic, Duration.ofSeconds(5)).stream()
                  .map(p -> new TopicPartition(p.topic(), p.partition()))
                  .toList();
        }
        List<TopicPartition> mine =
            partitions.stream().filter(p -> p.partition() % of == index).toList();
        if (mine.isEmpty()) {
          positioned = true; // more readers than partitions: nothing to read
          return;
        }
        consumer.assign(mine);
        consumer.seekToEnd(mine);
        mine.forEach(consumer::position); // the end now, before any intent is published
        positioned = true;
        while (running) {
          try {
            for (ConsumerRecord<String, ToolResult> record :
                consumer.poll(Duration.ofMillis(100))) {
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

    void stop() {
      running = false;
      consumer.wakeup();
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
    Long through = PendingReply.through(record.headers());
    for (Listener listener : waiting) {
      try {
        listener.onReply(record.value(), requestId, through);
      } catch (RuntimeException e) {
        log.warn("A waiting call failed on its reply for key {}", record.key(), e);
      }
    }
  }

  @Override
  public void close() {
    readers.forEach(Reader::stop);
    for (Reader r : readers) {
      try {
        r.thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
