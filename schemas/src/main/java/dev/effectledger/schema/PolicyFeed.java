package dev.effectledger.schema;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows the applied tool policy on {@value Topics#POLICY} from a thread of its own and hands each
 * document to a reader: partition 0 (every partition holds the same documents), read_committed,
 * from its start (the topic is compacted: the latest version, then each new one). What clients,
 * gateways and executors read; the ledger's tasks read their own partitions in the topology. A
 * partition that cannot be reached for a while (its broker restarting) is waited for, not given up
 * on: the feed reads on from where it was.
 */
public final class PolicyFeed implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(PolicyFeed.class);

  private final KafkaConsumer<String, byte[]> consumer;
  private final Consumer<byte[]> reader;
  private final Thread thread;
  private final CountDownLatch caughtUp = new CountDownLatch(1);
  private volatile boolean closed;

  private PolicyFeed(Properties kafka, Consumer<byte[]> reader, String name) {
    this.consumer = consumer(kafka);
    this.reader = reader;
    this.thread = new Thread(this::run, name);
    thread.setDaemon(true);
  }

  /**
   * A consumer for tool-policy with {@code kafka}'s connection settings: read_committed, no group,
   * and never creating the topic by asking for it (it needs one partition per intents partition).
   */
  public static KafkaConsumer<String, byte[]> consumer(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    return new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
  }

  /**
   * Starts following tool-policy with {@code kafka}'s connection settings, handing each document to
   * {@code reader} on the feed's thread.
   */
  public static PolicyFeed start(Properties kafka, Consumer<byte[]> reader, String threadName) {
    PolicyFeed feed = new PolicyFeed(kafka, reader, threadName);
    feed.thread.start();
    return feed;
  }

  /**
   * Waits until what tool-policy held when the feed started has been read (at once when the topic
   * does not exist, and as soon as a read fails when its partition cannot be reached: the feed
   * reads on once it can).
   *
   * @return false when {@code wait} passed first
   */
  public boolean awaitCurrent(Duration wait) throws InterruptedException {
    return caughtUp.await(wait.toMillis(), TimeUnit.MILLISECONDS);
  }

  private void run() {
    TopicPartition partition = new TopicPartition(Topics.POLICY, 0);
    boolean assigned = false;
    long end = -1;
    boolean failing = false;
    try {
      while (!closed) {
        try {
          if (!assigned) {
            if (consumer.partitionsFor(Topics.POLICY, Duration.ofSeconds(10)).isEmpty()) {
              // No policy applied to this cluster yet: look again later.
              caughtUp.countDown();
              pause(Duration.ofSeconds(30));
              continue;
            }
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            assigned = true;
          }
          if (caughtUp.getCount() > 0 && end < 0) {
            end = consumer.endOffsets(List.of(partition), Duration.ofSeconds(10)).get(partition);
          }
          if (caughtUp.getCount() > 0
              && consumer.position(partition, Duration.ofSeconds(10)) >= end) {
            caughtUp.countDown();
          }
          if (failing) {
            // A poll does not fail while the partition is away; its leader answering does.
            consumer.endOffsets(List.of(partition), Duration.ofSeconds(10));
            failing = false;
            log.info("Reading {} again", Topics.POLICY);
          }
          for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofSeconds(1))) {
            if (record.value() != null) {
              hand(record.value());
            }
          }
        } catch (RetriableException e) {
          // A broker or the partition's leader is away (a restart, an outage): the policy read so
          // far stays in use, and the feed goes on from where it was once the partition is back.
          if (closed) {
            return;
          }
          if (e instanceof CorruptRecordException) {
            throw e; // retrying reads the same bytes again: stop, and say so (below)
          }
          if (!failing) {
            failing = true;
            log.warn(
                "Cannot read {} for now ({}); the policy last read stays in use, and this process"
                    + " reads on once the topic's partition is available again.",
                Topics.POLICY,
                e.toString());
          }
          caughtUp.countDown();
          pause(Duration.ofSeconds(5));
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      if (!closed) {
        log.warn(
            "Stopped reading {} ({}); the policy last read stays in use. Check that the topic"
                + " exists and this process may read it, then restart it.",
            Topics.POLICY,
            e.toString());
      }
    } finally {
      caughtUp.countDown();
      consumer.close(Duration.ofSeconds(1));
    }
  }

  private void hand(byte[] document) {
    try {
      reader.accept(document);
    } catch (RuntimeException e) {
      log.warn("Skipped a {} record it cannot use: {}", Topics.POLICY, e.toString());
    }
  }

  private void pause(Duration pause) {
    long until = System.nanoTime() + pause.toNanos();
    while (!closed && System.nanoTime() < until) {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
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
