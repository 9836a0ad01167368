package dev.effectledger.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.Topics;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key rules of the applied tool policy ({@code effectledger tools apply}), read from {@value
 * Topics#POLICY} and kept current by a thread of its own: so every client and gateway derives keys
 * with the rules the ledger checks them against, and a rules change reaches them without a restart.
 * Reads partition 0 (each partition holds the same document), read_committed, from its start (the
 * topic is compacted) and then follows it. Only the document's {@code keys} are read: each tool's
 * current rules; the ledger itself honours the earlier ones through their horizon.
 */
public final class LiveKeyRules implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LiveKeyRules.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final KafkaConsumer<String, byte[]> consumer;
  private final Thread thread;
  private final CountDownLatch caughtUp = new CountDownLatch(1);
  private volatile Map<String, KeyRules> rules = Map.of();
  private volatile long version;
  private volatile boolean closed;

  private LiveKeyRules(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    // Never create tool-policy by asking for it: it must have one partition per intents partition.
    props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    this.consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    this.thread = new Thread(this::run, "effectledger-live-key-rules");
    thread.setDaemon(true);
  }

  /** Starts following tool-policy with {@code kafka}'s connection settings. */
  public static LiveKeyRules start(Properties kafka) {
    LiveKeyRules live = new LiveKeyRules(kafka);
    live.thread.start();
    return live;
  }

  /**
   * Waits until what tool-policy held when this started has been read (or it has no partition 0
   * yet).
   *
   * @return false when {@code wait} passed first
   */
  public boolean awaitCurrent(Duration wait) throws InterruptedException {
    return caughtUp.await(wait.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The applied policy's current rules for {@code tool}; empty when it names none. */
  public Optional<KeyRules> forTool(String tool) {
    return Optional.ofNullable(rules.get(tool));
  }

  /** The applied policy's version; 0 until one is read. */
  public long version() {
    return version;
  }

  private void run() {
    TopicPartition partition = new TopicPartition(Topics.POLICY, 0);
    try {
      while (!closed && consumer.partitionsFor(Topics.POLICY, Duration.ofSeconds(10)).isEmpty()) {
        // No policy applied to this cluster yet: the builder's rules hold. Look again later.
        caughtUp.countDown();
        sleep(Duration.ofSeconds(30));
      }
      if (closed) {
        return;
      }
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      long end = consumer.endOffsets(List.of(partition), Duration.ofSeconds(30)).get(partition);
      if (end == 0) {
        caughtUp.countDown();
      }
      while (!closed) {
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofSeconds(1))) {
          if (record.value() != null) {
            read(record.value());
          }
        }
        if (caughtUp.getCount() > 0 && consumer.position(partition) >= end) {
          caughtUp.countDown();
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      if (!closed) {
        log.warn(
            "Stopped reading {} ({}); keys are derived with the rules last read (version {})."
                + " Check that the topic exists and this client may read it.",
            Topics.POLICY,
            e.toString(),
            version);
      }
      caughtUp.countDown();
    } finally {
      consumer.close(Duration.ofSeconds(1));
    }
  }

  private void sleep(Duration pause) {
    long until = System.nanoTime() + pause.toNanos();
    while (!closed && System.nanoTime() < until) {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void read(byte[] document) {
    try {
      JsonNode root = JSON.readTree(document);
      long next = root.path("version").asLong();
      if (next <= version) {
        return;
      }
      Map<String, KeyRules> byTool = new HashMap<>();
      root.path("keys")
          .fields()
          .forEachRemaining(
              e -> {
                JsonNode current = e.getValue().path(0);
                byTool.put(
                    e.getKey(),
                    new KeyRules(
                        strings(current.path("ignore")), strings(current.path("require"))));
              });
      rules = Map.copyOf(byTool);
      version = next;
    } catch (IOException | IllegalArgumentException e) {
      log.warn(
          "Skipped a {} record that is not a policy document: {}", Topics.POLICY, e.toString());
    }
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  @Override
  public void close() {
    closed = true;
    consumer.wakeup();
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
