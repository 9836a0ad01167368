package dev.effectledger.connectors.reconcile;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.JournalTopics;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fences the lives of held keys before they are released, on lanes whose downstream ignores keys
 * (the lanes with an attempt journal): whoever releases a key (the reconciler on "no effect", an
 * operator in the console) calls {@link #fence} first, and releases only the lives it answers true
 * for; for those, a lookup taken <em>after</em> the fence sees every effect the life can ever have.
 *
 * <p>Why: a key held while its dispatch still waits on its lane (an executor outage longer than the
 * tool's pending timeout) was released on a lookup that found nothing, and the waiting dispatch ran
 * afterwards; the next intent then ran the action a second time (docs/chaos.md). The fence is a
 * record in the lane's attempt journal partition of the key ({@link AttemptJournal}); the
 * partition's order decides between it and an executor's start marker. This side writes the fence
 * (acks=all, idempotent), then reads the partition, read_committed, from its beginning up to the
 * fence: a start of the life there whose latest record is still "started" means the effect may be
 * under way, and the release is refused for now; the key stays held and is looked at again later,
 * once that start is answered. An executor whose start the fence precedes never runs it. A
 * partition that cannot be read that far in time refuses too.
 *
 * <p>Lanes whose downstream honours keys, or whose connector is transactional, have no journal and
 * need no fence: a queued dispatch of a released life that runs later acts under the same effect
 * key as the key's next life, so the downstream (or the dedup row) makes both one effect, and the
 * ledger re-instates its success (docs/executors.md).
 */
public final class ReleaseFences implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReleaseFences.class);

  /** How long writing the fences, and reading each partition back, may take. */
  private static final Duration LIMIT = Duration.ofSeconds(20);

  /** A held life to fence: its lane, keys and incarnation. */
  public record Life(String lane, String idempotencyKey, String effectKey, long incarnation) {}

  /** What fencing a life found. */
  public enum Fence {
    /** Fenced, and no start of the life before the fence is unanswered: it may be released. */
    RELEASABLE,
    /**
     * Fenced, but a start of the life before the fence is unanswered: its effect may be under way,
     * so it must not be released yet (marking it applied is still safe: no later start runs).
     */
    STARTED,
    /** Not fenced for sure (Kafka could not be written or read in time): change nothing. */
    UNFENCED
  }

  private final KafkaProducer<byte[], byte[]> producer;
  private final KafkaConsumer<byte[], byte[]> reader;

  /** A read_uncommitted consumer, for the dispatch partitions' high watermarks. */
  private final KafkaConsumer<byte[], byte[]> ends;

  private final String by;
  private boolean closed; // guarded by this
  private final Properties kafka;
  private final java.util.Set<String> journalsMade = new java.util.HashSet<>();

  /**
   * @param by who fences (the reconciler, an operator's name), written into the fence for people
   */
  public ReleaseFences(Properties kafka, String by) {
    this.by = by;
    Properties producerProps = new Properties();
    producerProps.putAll(kafka);
    producerProps.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) LIMIT.toMillis());
    producerProps.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) LIMIT.toMillis() / 2);
    producerProps.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) LIMIT.toMillis());
    producerProps.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    this.producer =
        new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer());
    Properties readerProps = new Properties();
    readerProps.putAll(kafka);
    readerProps.remove(ConsumerConfig.GROUP_ID_CONFIG);
    readerProps.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    readerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    readerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    readerProps.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    this.kafka = kafka;
    Properties endProps = new Properties();
    endProps.putAll(readerProps);
    endProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
    KafkaProducer<byte[], byte[]> made = this.producer;
    KafkaConsumer<byte[], byte[]> committedReader = null;
    try {
      committedReader =
          new KafkaConsumer<>(
              readerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer());
      this.ends =
          new KafkaConsumer<>(endProps, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    } catch (RuntimeException e) {
      made.close(Duration.ZERO);
      if (committedReader != null) {
        committedReader.close(Duration.ZERO);
      }
      throw e;
    }
    this.reader = committedReader;
  }

  /**
   * Fences each life and answers, per life, whether it may be released (true: no start of it before
   * the fence is unanswered, and none after it will run). A lane without its journal topic yet (no
   * executor of it has started since it needed one) gets it first, shaped like its dispatch topic,
   * as an executor would make it: the fence must be there for the executor that starts later. Never
   * throws for one life: a failure answers false (refused for now).
   */
  public synchronized Map<Life, Fence> fence(List<Life> lives) {
    Map<Life, Fence> answers = new LinkedHashMap<>();
    if (closed) {
      lives.forEach(life -> answers.put(life, Fence.UNFENCED));
      return answers;
    }
    Map<Life, Future<RecordMetadata>> sent = new LinkedHashMap<>();
    Map<Life, TopicPartition> journalOf = new HashMap<>();
    for (Life life : lives) {
      String topic = Topics.attempts(life.lane());
      if (journalsMade.add(life.lane())) {
        try {
          JournalTopics.create(kafka, List.of(life.lane()));
        } catch (RuntimeException e) {
          journalsMade.remove(life.lane());
          log.warn("Could not make {} ({}); the key stays held for now", topic, e.toString());
          answers.put(life, Fence.UNFENCED);
          continue;
        }
      }
      int partitions;
      try {
        partitions = reader.partitionsFor(topic, LIMIT).size();
      } catch (KafkaException e) {
        log.warn("Could not describe {} ({}); the key stays held for now", topic, e.toString());
        answers.put(life, Fence.UNFENCED);
        continue;
      }
      if (partitions == 0) {
        answers.put(life, Fence.UNFENCED);
        continue;
      }
      int partition =
          Utils.toPositive(Utils.murmur2(life.idempotencyKey().getBytes(StandardCharsets.UTF_8)))
              % partitions;
      TopicPartition journal = new TopicPartition(topic, partition);
      TopicPartition dispatch = AttemptJournal.dispatchPartition(journal);
      long dispatchEnd;
      try {
        // the high watermark, not the last stable offset: a dispatch of the life may still sit
        // in a transaction whose commit a coordinator skipped on this partition (AttemptJournal),
        // and the fence must outlive it
        dispatchEnd = ends.endOffsets(List.of(dispatch), LIMIT).getOrDefault(dispatch, 0L);
      } catch (KafkaException e) {
        answers.put(life, Fence.UNFENCED);
        continue;
      }
      journalOf.put(life, journal);
      sent.put(
          life,
          producer.send(
              new ProducerRecord<>(
                  journal.topic(),
                  journal.partition(),
                  AttemptJournal.fenceKey(life.effectKey(), life.incarnation())
                      .getBytes(StandardCharsets.UTF_8),
                  AttemptJournal.fenceValue(Math.max(0, dispatchEnd - 1), by)
                      .getBytes(StandardCharsets.UTF_8))));
    }
    producer.flush();
    Map<TopicPartition, Long> upTo = new HashMap<>();
    Map<Life, Long> fenceAt = new HashMap<>();
    sent.forEach(
        (life, send) -> {
          try {
            long offset = send.get(LIMIT.toMillis(), TimeUnit.MILLISECONDS).offset();
            fenceAt.put(life, offset);
            upTo.merge(journalOf.get(life), offset, Math::max);
          } catch (ExecutionException | TimeoutException e) {
            log.warn(
                "Could not write a release fence ({}); the key stays held for now", e.toString());
            answers.put(life, Fence.UNFENCED);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            answers.put(life, Fence.UNFENCED);
          }
        });
    Map<TopicPartition, List<Map.Entry<Long, Map.Entry<String, String>>>> read = readBack(upTo);
    fenceAt.forEach(
        (life, offset) -> {
          List<Map.Entry<Long, Map.Entry<String, String>>> records = read.get(journalOf.get(life));
          if (records == null) {
            answers.put(life, Fence.UNFENCED);
            return;
          }
          List<Map.Entry<String, String>> before = new ArrayList<>();
          for (var r : records) {
            if (r.getKey() < offset) {
              before.add(r.getValue());
            }
          }
          answers.put(
              life,
              AttemptJournal.releasable(before, life.effectKey(), life.incarnation())
                      == AttemptJournal.Release.FENCED
                  ? Fence.RELEASABLE
                  : Fence.STARTED);
        });
    return answers;
  }

  /**
   * The committed records of each partition from its beginning up to (not including) the offset
   * given, with their offsets; a partition not read that far within the limit is left out.
   */
  private Map<TopicPartition, List<Map.Entry<Long, Map.Entry<String, String>>>> readBack(
      Map<TopicPartition, Long> upTo) {
    Map<TopicPartition, List<Map.Entry<Long, Map.Entry<String, String>>>> read = new HashMap<>();
    if (upTo.isEmpty()) {
      return read;
    }
    Map<TopicPartition, Long> ends = new HashMap<>();
    upTo.forEach((tp, offset) -> ends.put(tp, offset + 1));
    upTo.keySet().forEach(tp -> read.put(tp, new ArrayList<>()));
    try {
      reader.assign(List.copyOf(upTo.keySet()));
      reader.seekToBeginning(upTo.keySet());
      boolean done =
          TopicReads.toOffsets(
              reader,
              ends,
              LIMIT,
              r -> {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                read.get(tp)
                    .add(
                        new AbstractMap.SimpleImmutableEntry<>(
                            r.offset(),
                            new AbstractMap.SimpleImmutableEntry<>(
                                new String(r.key(), StandardCharsets.UTF_8),
                                r.value() == null
                                    ? null
                                    : new String(r.value(), StandardCharsets.UTF_8))));
              });
      if (!done) {
        upTo.keySet().stream()
            .filter(tp -> reader.position(tp) < ends.get(tp))
            .forEach(
                tp -> {
                  log.warn(
                      "Could not read {} back to its release fence within {} (an open transaction"
                          + " there?); its keys stay held for now",
                      tp,
                      LIMIT);
                  read.remove(tp);
                });
      }
    } catch (KafkaException e) {
      log.warn(
          "Could not read the attempt journal back ({}); keys stay held for now", e.toString());
      read.clear();
    } finally {
      reader.assign(List.of());
    }
    return read;
  }

  @Override
  public synchronized void close() {
    closed = true;
    producer.close(Duration.ofSeconds(5));
    reader.close(Duration.ofSeconds(5));
    ends.close(Duration.ofSeconds(5));
  }
}
