package dev.effectledger.connectors.transactions;

import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import dev.effectledger.connectors.transactions.HangingTransactions.Hanging;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an executor does about {@link HangingTransactions hanging transactions} outside its attempt
 * journal: a periodic {@link #sweep} of what it writes and reads, and, when it restarts under its
 * transactional id, {@link #settlePredecessor settling} what its predecessor left open while the
 * coordinator still knows how that ended.
 */
public final class HangingSweep {

  private static final Logger log = LoggerFactory.getLogger(HangingSweep.class);

  private static final Duration ADMIN_TIMEOUT = HangingTransactions.ADMIN_TIMEOUT;

  private final HangingTransactions hanging;
  private final Admin admin;
  private final Clock clock;

  /** Warned of once each: hanging offset commits of producers that are not this group's. */
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  public HangingSweep(HangingTransactions hanging, Clock clock) {
    this.hanging = hanging;
    this.admin = hanging.admin();
    this.clock = clock;
  }

  /**
   * Ends every hanging transaction on the partitions of {@code topics} and on the partition of
   * {@code __consumer_offsets} that holds {@code groupId}'s offsets (null: none), as its
   * coordinator decided. When that cannot be told any more:
   *
   * <ul>
   *   <li>on {@code topics} it aborts: only for records that, if lost, are sent again (outcomes and
   *       dispatches: the ledger's pending timeout);
   *   <li>on the offsets partition it commits, and only a transaction of a producer that the
   *       coordinator maps to one of {@code ours} (the group's transactional ids). Committing a
   *       pending offset commit never runs an effect again (no dispatch below it is read again, and
   *       the executor commits an offset only past dispatches it answered), while aborting one
   *       whose transaction committed has them read again: before 2026-11-26 that transaction also
   *       removed the start markers of the dispatches below it from the attempt journal, so they
   *       ran again; now markers are removed only once the offsets are read back ({@link
   *       dev.effectledger.connectors.executor.internal.AttemptJournal#confirmed}), and a dispatch
   *       read again is skipped or answered by lookup, still work the commit saves. A hanging
   *       offset commit of another producer is left alone (it is another group's), and warned of
   *       once.
   * </ul>
   *
   * A hanging offset commit would otherwise hold back every fetch of the group's committed offsets.
   *
   * @return how many it ended
   */
  public int sweep(Collection<String> topics, String groupId, Predicate<String> ours) {
    return sweep(topics, groupId, ours, false);
  }

  /**
   * {@link #sweep(Collection, String, Predicate)}, committing rather than aborting on {@code
   * topics} a transaction whose fate cannot be told when {@code commitUnknown}: for partitions
   * where losing a committed record is worse than keeping an aborted one (the ledger's changelogs:
   * an entry forgotten lets a retry run again; an entry kept from an aborted transaction is only a
   * duplicate the ledger answers, and the pending timeout dispatches it again).
   */
  public int sweep(
      Collection<String> topics, String groupId, Predicate<String> ours, boolean commitUnknown) {
    List<TopicPartition> partitions = partitions(topics, groupId, false);
    int ended = 0;
    for (Hanging h : hanging.find(partitions)) {
      boolean offsets = h.partition().topic().equals(Topic.GROUP_METADATA_TOPIC_NAME);
      boolean commit =
          h.decision() == Decision.COMMITTED
              || (commitUnknown && !offsets && h.decision() == Decision.UNKNOWN);
      if (offsets && h.decision() == Decision.UNKNOWN) {
        commit = h.transactionalIds().stream().anyMatch(ours);
      }
      if (offsets && h.decision() == Decision.UNKNOWN && !commit) {
        if (warned.add(h.partition() + "/" + h.producerId() + "/" + h.startOffset())) {
          log.warn(
              "A hanging transaction on {} is not one of this group's executors' and is left"
                  + " alone. If it holds this group's offsets back (the executors stop after two"
                  + " minutes waiting for their committed offsets), end it with"
                  + " kafka-transactions.sh; read docs/operations.md (Honest limits) first",
              h);
        }
        continue;
      }
      if (commit ? hanging.commit(h) : hanging.abort(h)) {
        ended++;
        log.warn(
            "{} a hanging transaction on {} (left open by a broker crash; no coordinator would ever"
                + " end it, and every read_committed reader of the partition waited behind it).{}",
            commit ? "Committed" : "Aborted",
            h,
            commit || offsets || commitUnknown
                ? ""
                : " The ledger's pending timeout sends a dispatch in it again and answers an"
                    + " outcome in it again (by a lookup where the effect may have happened)");
      }
    }
    return ended;
  }

  /**
   * Before an executor takes over {@code transactionalId} (before its {@code initTransactions},
   * which makes the coordinator forget how the predecessor's last transaction ended): ends every
   * transaction of the predecessor still open on {@code topics} and on {@code groupId}'s offsets
   * partition as the coordinator decided, without waiting for it to fall silent (nothing else
   * writes as that producer). A predecessor's open transaction whose fate cannot be told is left to
   * the {@link #sweep} and to the {@link
   * dev.effectledger.connectors.executor.internal.JournalReader}. Topics that do not exist are
   * skipped.
   *
   * @return how many it ended
   * @throws IllegalStateException when the cluster cannot be asked
   */
  public int settlePredecessor(String transactionalId, Collection<String> topics, String groupId) {
    TransactionDescription predecessor = settledDescription(transactionalId);
    if (predecessor == null) {
      return 0;
    }
    List<TopicPartition> partitions = partitions(topics, groupId, true);
    int ended = 0;
    for (Hanging h : hanging.openOf(transactionalId, predecessor, partitions)) {
      if (h.decision() != Decision.UNKNOWN && hanging.end(h)) {
        ended++;
        log.warn(
            "{} the transaction the predecessor of {} left open on {} (its coordinator had"
                + " decided it, and the marker never reached the partition)",
            h.decision() == Decision.COMMITTED ? "Committed" : "Aborted",
            transactionalId,
            h);
      }
    }
    return ended;
  }

  /**
   * The coordinator's description of {@code transactionalId} once no marker of it is being written
   * (waits up to the Admin timeout for a preparing one to complete); null when it has none.
   */
  private TransactionDescription settledDescription(String transactionalId) {
    long deadline = clock.millis() + ADMIN_TIMEOUT.toMillis();
    while (true) {
      TransactionDescription d;
      try {
        d =
            admin
                .describeTransactions(List.of(transactionalId))
                .description(transactionalId)
                .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof TransactionalIdNotFoundException) {
          return null;
        }
        throw new IllegalStateException(
            "Could not describe the transaction of " + transactionalId + ": " + e.getCause(), e);
      } catch (TimeoutException e) {
        throw new IllegalStateException(
            "Could not describe the transaction of " + transactionalId + " in time", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted", e);
      }
      boolean preparing =
          d.state() == TransactionState.PREPARE_COMMIT
              || d.state() == TransactionState.PREPARE_ABORT
              || d.state() == TransactionState.PREPARE_EPOCH_FENCE;
      if (!preparing || clock.millis() > deadline) {
        return d;
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted", e);
      }
    }
  }

  /**
   * The partitions of {@code topics} and the partition of {@code __consumer_offsets} that holds
   * {@code groupId}'s offsets (null: none), each topic described once; a topic that does not exist
   * is skipped when {@code skipMissing}, an error otherwise.
   */
  private List<TopicPartition> partitions(
      Collection<String> topics, String groupId, boolean skipMissing) {
    List<String> described = new ArrayList<>(topics);
    if (groupId != null) {
      described.add(Topic.GROUP_METADATA_TOPIC_NAME);
    }
    Map<String, KafkaFuture<TopicDescription>> futures =
        admin.describeTopics(described).topicNameValues();
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : described) {
      TopicDescription d;
      try {
        d = futures.get(topic).get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (skipMissing && e.getCause() instanceof UnknownTopicOrPartitionException) {
          continue;
        }
        throw new IllegalStateException("Could not describe " + topic + ": " + e.getCause(), e);
      } catch (TimeoutException e) {
        throw new IllegalStateException("Could not describe " + topic + " in time", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted", e);
      }
      if (topic.equals(Topic.GROUP_METADATA_TOPIC_NAME)) {
        partitions.add(offsetsPartition(groupId, d.partitions().size()));
      } else {
        d.partitions().forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
      }
    }
    return partitions;
  }

  /** The partition of {@code __consumer_offsets} that holds {@code groupId}'s offsets. */
  static TopicPartition offsetsPartition(String groupId, int partitions) {
    return new TopicPartition(
        Topic.GROUP_METADATA_TOPIC_NAME, Utils.abs(groupId.hashCode()) % partitions);
  }

  /**
   * Sweeps {@code topics} and {@code groupId}'s offsets (see {@link #sweep}) every {@code
   * interval}, from now, on a daemon thread, until closed. A sweep that fails is logged and tried
   * again at the next.
   */
  public AutoCloseable sweepEvery(
      Duration interval, Collection<String> topics, String groupId, Predicate<String> ours) {
    ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "hanging-transaction-sweep");
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(
        () -> {
          try {
            sweep(topics, groupId, ours);
          } catch (RuntimeException e) {
            log.debug("Sweeping {} for hanging transactions failed: {}", topics, e.toString());
          }
        },
        0,
        interval.toMillis(),
        TimeUnit.MILLISECONDS);
    return timer::shutdownNow;
  }
}
