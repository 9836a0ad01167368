package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.Topics;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the reconciler (and any console's "look up again") last found about each held key, for
 * {@link ConsoleActions}: a thread follows {@value Topics#FINDINGS} from its start, and findings
 * this console makes are shown at once and published there for the others.
 */
final class ConsoleFindings implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Properties kafka;
  private final Map<String, String> findings = new ConcurrentHashMap<>();
  private KafkaProducer<String, String> findingProducer; // guarded by this
  private final Thread follower;
  private volatile KafkaConsumer<String, String> following;
  private volatile boolean closed;

  /** Counted down by {@link #close()}: ends the follower's wait for the findings topic. */
  private final CountDownLatch closing = new CountDownLatch(1);

  ConsoleFindings(Properties kafka) {
    this.kafka = kafka;
    this.follower = new Thread(this::followFindings, "console-findings");
    follower.setDaemon(true);
    follower.start();
  }

  /** Keeps {@link #findings} as {@value Topics#FINDINGS} says, until closed. */
  private void followFindings() {
    Properties props = new Properties();
    props.putAll(kafka);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "effectledger-console-findings");
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
      following = consumer;
      List<TopicPartition> partitions = List.of();
      while (!closed && partitions.isEmpty()) {
        try {
          partitions =
              consumer.partitionsFor(Topics.FINDINGS, Duration.ofSeconds(5)).stream()
                  .map(p -> new TopicPartition(p.topic(), p.partition()))
                  .toList();
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
          partitions = List.of();
        }
        if (partitions.isEmpty()) {
          closing.await(5, TimeUnit.SECONDS); // the topic does not exist yet
        }
      }
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      while (!closed) {
        for (var record : consumer.poll(Duration.ofSeconds(1))) {
          if (record.value() == null) {
            findings.remove(record.key());
          } else {
            findings.put(record.key(), describeFinding(record.value()));
          }
        }
      }
    } catch (org.apache.kafka.common.errors.WakeupException | InterruptedException e) {
      // closing
    } catch (RuntimeException e) {
      if (!closed) {
        // logged under ConsoleActions, as before the findings moved here
        org.slf4j.LoggerFactory.getLogger(ConsoleActions.class)
            .warn("The console stopped following {}: {}", Topics.FINDINGS, e.toString());
      }
    }
  }

  /** A finding's JSON as the console shows it; the JSON itself when it is not JSON. */
  static String describeFinding(String json) {
    try {
      JsonNode f = JSON.readTree(json);
      return f.path("status").asText()
          + " (since "
          + f.path("since").asText()
          + ", "
          + f.path("by").asText()
          + "): "
          + f.path("detail").asText();
    } catch (IOException e) {
      return json;
    }
  }

  /** What the last look at the key stored as {@code storeKey} (tenant/key) found, or "". */
  String of(String storeKey) {
    return findings.getOrDefault(storeKey, "");
  }

  /** Shows {@code text} for {@code storeKey} on this console only. */
  void show(String storeKey, String text) {
    findings.put(storeKey, text);
  }

  /** Shows the finding on this console and publishes it to {@value Topics#FINDINGS}. */
  void record(String storeKey, String findingJson) {
    findings.put(storeKey, describeFinding(findingJson));
    publishFinding(storeKey, findingJson);
  }

  /** Best effort: the finding shows on this console already; others see it through the topic. */
  private synchronized void publishFinding(String storeKey, String finding) {
    try {
      if (findingProducer == null) {
        Properties props = new Properties();
        props.putAll(kafka);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5000);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "effectledger-console-findings");
        findingProducer =
            new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
      }
      findingProducer.send(new ProducerRecord<>(Topics.FINDINGS, storeKey, finding));
    } catch (RuntimeException e) {
      // shown locally; the topic may be missing
    }
  }

  /** Stops following the topic, then closes the producer of findings. */
  @Override
  public void close() {
    closed = true;
    closing.countDown();
    // Woken, not interrupted: an interrupted thread cannot close its consumer cleanly (the
    // consumer's close logged an ERROR with a stack trace at every processor's shutdown).
    KafkaConsumer<String, String> consumer = following;
    if (consumer != null) {
      consumer.wakeup();
    }
    try {
      follower.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      if (findingProducer != null) {
        findingProducer.close(Duration.ofSeconds(5));
      }
    }
  }
}
