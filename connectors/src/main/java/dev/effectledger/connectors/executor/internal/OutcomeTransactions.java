package dev.effectledger.connectors.executor.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's transactional publisher: finished work waits here for the next transaction, which
 * carries its outcomes and effect records, the attempt journal's records and the consumer offsets
 * at each partition's low watermark, all or nothing as far as Kafka keeps that promise (see {@link
 * AttemptJournal} for where it does not, and what the journal does about it).
 */
public final class OutcomeTransactions {

  private static final Logger log = LoggerFactory.getLogger(OutcomeTransactions.class);

  private final Producer<byte[], byte[]> producer;
  private final AtomicLong committed = new AtomicLong();
  private final OffsetTracker tracker;

  /** Null when no tool on the executor's lanes needs start markers. */
  private final AttemptJournal journal;

  private final List<Finished> staged = new ArrayList<>();

  public OutcomeTransactions(
      Producer<byte[], byte[]> producer, OffsetTracker tracker, AttemptJournal journal) {
    this.producer = producer;
    this.tracker = tracker;
    this.journal = journal;
  }

  /** Stages finished work for the next transaction, answering its start marker if it has one. */
  public void add(Finished work) {
    staged.add(work);
    if (work.marker() != null) {
      journal.answer(work.tp(), work.marker(), work.offset(), work.noEffect());
    }
  }

  /** Transactions committed so far (read from other threads: a benchmark's count). */
  public long committed() {
    return committed.get();
  }

  /** True when no finished work waits for a transaction. */
  public boolean isEmpty() {
    return staged.isEmpty();
  }

  /** Drops the staged work of partitions this executor lost: it must not be published. */
  public void drop(Collection<TopicPartition> partitions) {
    staged.removeIf(work -> partitions.contains(work.tp()));
  }

  /**
   * Publishes the staged work, the journal's records and the offsets in one transaction: the
   * offsets of every partition read, whether or not they moved, so that the group's generation
   * fences the transaction. Does nothing when nothing moved and nothing waits, unless {@code
   * starting} names partitions whose start markers must commit.
   *
   * @return false when the transaction aborted: the staged work and the journal's staged changes
   *     are dropped, and the caller must read again from the committed offsets
   * @throws ProducerFencedException (or {@link OutOfOrderSequenceException}, {@link
   *     AuthorizationException}) when the executor can commit nothing more
   */
  public boolean commit(Set<TopicPartition> starting, Supplier<ConsumerGroupMetadata> group) {
    if (staged.isEmpty()
        && starting.isEmpty()
        && tracker.committable().isEmpty()
        && (journal == null || !journal.hasStaged())) {
      return true;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = tracker.watermarks();
    List<ProducerRecord<byte[], byte[]>> journalRecords =
        journal == null ? List.of() : journal.records();
    try {
      producer.beginTransaction();
      staged.forEach(work -> work.records().forEach(producer::send));
      journalRecords.forEach(producer::send);
      if (!offsets.isEmpty()) {
        producer.sendOffsetsToTransaction(offsets, group.get());
      }
      producer.commitTransaction();
      committed.incrementAndGet();
    } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
      throw e;
    } catch (KafkaException e) {
      log.warn(
          "Commit failed ({}); aborting and re-reading from the last committed offsets",
          e.toString());
      producer.abortTransaction();
      staged.clear();
      if (journal != null) {
        journal.aborted();
      }
      return false;
    }
    tracker.committed(offsets);
    staged.clear();
    if (journal != null) {
      journal.committed();
    }
    return true;
  }
}
