package dev.effectledger.connectors.executor.internal;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's periodic sweep of its {@link AttemptJournal}: tombstones for the markers whose
 * dispatch the group's committed offsets have passed, at most once per {@link
 * #JOURNAL_SWEEP_EVERY}. Owns the time of the last sweep. Used by the poll thread only.
 */
public final class JournalSweep {

  private static final Logger log = LoggerFactory.getLogger(JournalSweep.class);

  /**
   * How often the journal's markers below the group's committed offsets are tombstoned: each sweep
   * reads the offsets back from the group coordinator (one request), so markers outlive their
   * dispatch by about this long.
   */
  private static final Duration JOURNAL_SWEEP_EVERY = Duration.ofSeconds(1);

  /**
   * How long a sweep waits for the group's offsets to be stable (no transaction holding them
   * pending) before it gives up until the next sweep.
   */
  private static final Duration JOURNAL_SWEEP_WAIT = Duration.ofSeconds(2);

  /** Null when no tool on the executor's lanes needs start markers: then nothing is swept. */
  private final AttemptJournal journal;

  private final Consumer<byte[], byte[]> consumer;
  private final Clock clock;
  private long lastSweepMs;

  public JournalSweep(AttemptJournal journal, Consumer<byte[], byte[]> consumer, Clock clock) {
    this.journal = journal;
    this.consumer = consumer;
    this.clock = clock;
  }

  /**
   * Stages tombstones for the journal's markers whose dispatch the group's committed offset has
   * passed, as read back from the group coordinator, not as this executor sent it: a transaction
   * that carried the offsets may still lose them (see {@link AttemptJournal}). The tombstones go
   * into the next transaction. An offset fetch that does not become stable in time (a transaction
   * holds the offsets pending) leaves the markers for the next sweep.
   */
  public void sweepJournal() {
    if (journal == null || clock.millis() - lastSweepMs < JOURNAL_SWEEP_EVERY.toMillis()) {
      return;
    }
    lastSweepMs = clock.millis();
    Set<TopicPartition> sweepable = journal.sweepable();
    if (sweepable.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> committed;
    try {
      committed = consumer.committed(sweepable, JOURNAL_SWEEP_WAIT);
    } catch (RetriableException e) { // a TimeoutException among them
      log.debug("Journal sweep skipped: the group's offsets are not stable yet ({})", e.toString());
      return;
    }
    journal.confirmed(offsets(committed));
  }

  /** The offsets of {@code committed}, leaving out the partitions the group has no offset for. */
  public static Map<TopicPartition, Long> offsets(
      Map<TopicPartition, OffsetAndMetadata> committed) {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    committed.forEach(
        (tp, offset) -> {
          if (offset != null) {
            offsets.put(tp, offset.offset());
          }
        });
    return offsets;
  }
}
