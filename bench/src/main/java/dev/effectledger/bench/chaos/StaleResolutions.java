package dev.effectledger.bench.chaos;

import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * An adversary of the chaos run: a reconciler's resolution that arrives again, late. A reconciler
 * decides from its read of tool-audit, which can lag the ledger (a hanging transaction holds back
 * its read_committed view, or a restarted reconciler re-reads and resolves before it caught up), so
 * the ledger can be told "no effect, release it" about a key it already released and the agent
 * already sent again. A single-broker run on 2026-11-23 met exactly that: the second resolution
 * released the key's second life while its charge was in flight, the agent sent again, and the
 * action was charged twice.
 *
 * <p>This replays each "no effect" resolution once, byte for byte, the moment the key's next life
 * is dispatched: the worst time for it to arrive. The ledger must read it as late.
 */
final class StaleResolutions implements AutoCloseable {

  private record Resolution(byte[] value, Instant at) {}

  private final KafkaConsumer<String, byte[]> consumer;
  private final KafkaProducer<String, byte[]> producer;
  private final RegistryAvroSerde<Outcome> outcomes;
  private final RegistryAvroSerde<Dispatch> dispatches;
  private final Map<String, Resolution> waiting = new HashMap<>();
  private final AtomicInteger replayed = new AtomicInteger();
  private final Thread thread;
  private volatile boolean running = true;

  private StaleResolutions(Properties kafka, String registryUrl, String lane) {
    SchemaRegistry registry = SchemaRegistries.forUrl(registryUrl);
    outcomes = new RegistryAvroSerde<>(registry, Outcome.class);
    dispatches = new RegistryAvroSerde<>(registry, Dispatch.class);
    Properties consumerProps = new Properties();
    consumerProps.putAll(kafka);
    consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    consumer =
        new KafkaConsumer<>(consumerProps, new StringDeserializer(), new ByteArrayDeserializer());
    Properties producerProps = new Properties();
    producerProps.putAll(kafka);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producer =
        new KafkaProducer<>(producerProps, new StringSerializer(), new ByteArraySerializer());
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : List.of(Topics.OUTCOMES, Topics.dispatch(lane))) {
      for (PartitionInfo p : consumer.partitionsFor(topic)) {
        partitions.add(new TopicPartition(topic, p.partition()));
      }
    }
    consumer.assign(partitions);
    consumer.seekToEnd(partitions);
    thread = new Thread(this::run, "stale-resolutions");
    thread.setDaemon(true);
  }

  /** Starts replaying the resolutions of the tool on {@code lane} published from now on. */
  static StaleResolutions start(Properties kafka, String registryUrl, String lane) {
    StaleResolutions stale = new StaleResolutions(kafka, registryUrl, lane);
    stale.thread.start();
    return stale;
  }

  /** Resolutions replayed so far, each while its key's next life was in flight. */
  int replayed() {
    return replayed.get();
  }

  private void run() {
    try {
      while (running) {
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(100))) {
          if (record.key() == null || record.value() == null) {
            continue;
          }
          if (record.topic().equals(Topics.OUTCOMES)) {
            noteResolution(record);
          } else {
            replayIfNextLife(record);
          }
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      System.err.println("stale-resolution adversary stopped: " + e);
    }
  }

  private void noteResolution(ConsumerRecord<String, byte[]> record) {
    Outcome outcome = outcomes.deserialize(record.topic(), record.value());
    if (outcome.getStatus() == OutcomeStatus.RETRYABLE
        && outcome.getError() != null
        && "RECONCILED_NO_EFFECT".equals(outcome.getError().getCode())) {
      waiting.put(record.key(), new Resolution(record.value(), outcome.getCompletedAt()));
    }
  }

  private void replayIfNextLife(ConsumerRecord<String, byte[]> record) {
    Resolution resolution = waiting.get(record.key());
    if (resolution == null) {
      return;
    }
    Dispatch dispatch = dispatches.deserialize(record.topic(), record.value());
    if (dispatch.getFirstSeenAt() != null && dispatch.getFirstSeenAt().isAfter(resolution.at())) {
      waiting.remove(record.key());
      producer.send(new ProducerRecord<>(Topics.OUTCOMES, record.key(), resolution.value()));
      replayed.incrementAndGet();
    }
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    consumer.wakeup();
    thread.join(10_000);
    consumer.close();
    producer.close(Duration.ofSeconds(5));
  }
}
