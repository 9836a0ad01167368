package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.CommitPacer;
import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.executor.internal.JournalSweep;
import dev.effectledger.connectors.executor.internal.OffsetTracker;
import dev.effectledger.connectors.executor.internal.OutcomeTransactions;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The {@link PollLoop}'s answer to its group's rebalances, called on the poll thread inside a poll:
 * a revoked partition's running effects finish and are committed before it goes; an assigned
 * journalled partition's attempt journal is read back once no transaction holds its offsets
 * pending; a lost partition's work is dropped uncommitted. Either way a partition that goes gets a
 * new epoch, so what still finishes for it is dropped.
 */
final class Rebalance implements ConsumerRebalanceListener {

  /**
   * How long an assignment waits for a killed owner's transaction to end before reading the
   * journal.
   */
  private static final Duration STABLE_OFFSETS_WAIT = Duration.ofMinutes(2);

  private final PollLoop loop;
  private final Consumer<byte[], byte[]> consumer;
  private final OffsetTracker tracker;
  private final OutcomeTransactions transactions;
  private final CommitPacer pacer;
  private final Map<TopicPartition, Integer> epochs;

  /** Both null when no tool on these lanes needs start markers. */
  private final AttemptJournal journal;

  private final JournalReader journalReader;
  private final Set<String> journalledTopics;

  Rebalance(
      PollLoop loop,
      Consumer<byte[], byte[]> consumer,
      OffsetTracker tracker,
      OutcomeTransactions transactions,
      CommitPacer pacer,
      Map<TopicPartition, Integer> epochs,
      AttemptJournal journal,
      JournalReader journalReader,
      Set<String> journalledTopics) {
    this.loop = loop;
    this.consumer = consumer;
    this.tracker = tracker;
    this.transactions = transactions;
    this.pacer = pacer;
    this.epochs = epochs;
    this.journal = journal;
    this.journalReader = journalReader;
    this.journalledTopics = journalledTopics;
  }

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    if (loop.halted() || loop.abandoning() || partitions.isEmpty()) {
      return;
    }
    loop.finishRunning(() -> tracker.pending(partitions));
    loop.commit();
    forget(partitions);
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    pacer.forgetPause();
    List<TopicPartition> journalled =
        partitions.stream().filter(tp -> journalledTopics.contains(tp.topic())).toList();
    if (journal != null && !journalled.isEmpty()) {
      // Waits until no transaction holds a pending offset commit for these partitions: every
      // transaction that wrote a start marker for them did, so it has committed or aborted.
      Map<TopicPartition, OffsetAndMetadata> committed =
          consumer.committed(new HashSet<>(journalled), STABLE_OFFSETS_WAIT);
      journalReader.load(journal, journalled);
      // Markers a predecessor left below the committed offsets are dead: tombstoned in the
      // first transaction, and no verdict sees them before that.
      journal.confirmed(JournalSweep.offsets(committed));
    }
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> partitions) {
    transactions.drop(partitions);
    forget(partitions);
  }

  private void forget(Collection<TopicPartition> partitions) {
    partitions.forEach(tp -> epochs.merge(tp, 1, Integer::sum));
    tracker.forget(partitions);
    if (journal != null) {
      journal.forget(partitions);
      journalReader.forget(partitions);
    }
  }
}
