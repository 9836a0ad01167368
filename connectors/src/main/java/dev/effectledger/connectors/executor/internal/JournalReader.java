package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.transactions.HangingTransactions;
import dev.effectledger.schema.TopicReads;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the committed markers of newly assigned dispatch partitions into an {@link AttemptJournal}.
 *
 * <p>When to read, and how far, is what makes the journal trustworthy after a crash. The executor
 * reads a partition's markers only once the group's committed offset of that partition is stable (a
 * read_committed consumer's offset fetch waits for any transaction that holds a pending offset
 * commit for the partition, and every transaction that writes a start marker commits the
 * partition's offsets). It then reads the journal partition up to its high watermark, not its last
 * stable offset: a read_committed reader passes an open transaction only once it commits or aborts,
 * so a transaction of a killed executor is waited for (until its successor's {@code
 * initTransactions} or the transaction timeout aborts it) instead of being read past, which would
 * miss the markers committed after it. Once there, it asks for the high watermark again and reads
 * on if it grew (a repair, below, wrote after it).
 *
 * <p>A transaction that never ends (a {@link HangingTransactions hanging} one) is repaired, not
 * waited for: its start markers may belong to effects that ran (the executor that wrote them may
 * have seen its commit succeed), so before it is aborted every marker in the uncommitted records
 * from its first offset to the high watermark is committed again as started ({@link
 * AttemptJournal#restarts}); the abort comes only after that commit, and the load then reads the
 * partition again from its beginning. A dispatch of such a marker is answered from a lookup or held
 * as ambiguous, never run again. A hanging transaction that its coordinator is known to have
 * committed is committed instead, as it is ({@link HangingTransactions#decide}).
 */
public final class JournalReader implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(JournalReader.class);

  /** How long reading a journal to its end may take before the executor gives up and stops. */
  private static final Duration LOAD_LIMIT = Duration.ofMinutes(2);

  /** How long a load waits before it looks for a hanging transaction holding it back. */
  private static final Duration CHECK_EVERY = Duration.ofSeconds(5);

  /** How often {@link #settled} asks for the last stable offsets again. */
  private static final Duration SETTLE_POLL = Duration.ofMillis(2);

  /** Repairs in one load, after which a transaction still hanging stops the executor. */
  private static final int MAX_REPAIRS = 3;

  /** What a load does about transactions that hold a journal partition back. */
  public interface Repairs {

    /** Does nothing: a load waits for open transactions to end, and describes none. */
    Repairs NONE =
        new Repairs() {
          @Override
          public List<String> describeOpen(Collection<TopicPartition> partitions) {
            return List.of();
          }

          @Override
          public List<HangingTransactions.Hanging> hanging(Collection<TopicPartition> partitions) {
            return List.of();
          }

          @Override
          public List<ConsumerRecord<byte[], byte[]>> readUncommitted(
              TopicPartition partition, long from, long to) {
            return List.of();
          }

          @Override
          public void recommit(List<ProducerRecord<byte[], byte[]>> records) {}

          @Override
          public boolean end(HangingTransactions.Hanging hanging) {
            return false;
          }
        };

    /** The transactions open on {@code partitions}, described for an error. */
    List<String> describeOpen(Collection<TopicPartition> partitions);

    /** The hanging transactions on {@code partitions}. */
    List<HangingTransactions.Hanging> hanging(Collection<TopicPartition> partitions);

    /** The records of {@code partition} from {@code from} to {@code to}, committed or not. */
    List<ConsumerRecord<byte[], byte[]>> readUncommitted(
        TopicPartition partition, long from, long to);

    /**
     * Commits {@code records} in a transaction of their own.
     *
     * @throws RuntimeException when the transaction did not commit
     */
    void recommit(List<ProducerRecord<byte[], byte[]>> records);

    /**
     * Ends {@code hanging} as its coordinator decided (commits it when it committed, aborts it
     * otherwise); false when it was no longer open.
     */
    boolean end(HangingTransactions.Hanging hanging);
  }

  private final Consumer<byte[], byte[]> reader;
  private final Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks;
  private final JournalRepair repair;

  /** Where the next {@link #readNew} of each journal partition starts: past what was applied. */
  private final Map<TopicPartition, Long> positions = new java.util.HashMap<>();

  private final Duration checkEvery;
  private final Duration limit;
  private final AutoCloseable resources;

  /**
   * A reader that waits for open transactions and repairs none.
   *
   * @param reader a read_committed consumer without a group, used by the poll thread only
   * @param highWatermarks the end offsets of journal partitions, counting records of open
   *     transactions
   * @param limit how long one load may wait for open transactions to end before it gives up
   */
  public JournalReader(
      Consumer<byte[], byte[]> reader,
      Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks,
      Duration limit,
      AutoCloseable resources) {
    this(reader, highWatermarks, Repairs.NONE, limit, limit, resources);
  }

  /**
   * @param repairs finds, repairs and describes the transactions that hold a load back
   * @param checkEvery how long a load waits between looks for hanging transactions
   */
  public JournalReader(
      Consumer<byte[], byte[]> reader,
      Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks,
      Repairs repairs,
      Duration checkEvery,
      Duration limit,
      AutoCloseable resources) {
    this.reader = reader;
    this.highWatermarks = highWatermarks;
    this.repair = new JournalRepair(repairs, limit);
    this.checkEvery = checkEvery;
    this.limit = limit;
    this.resources = resources;
  }

  /**
   * Creates the journal topics of these lanes where missing, shaped like their dispatch topics, and
   * a reader of them that repairs hanging transactions, committing the markers it must keep with
   * {@code producer} (the executor's, its transactions initialised, used by the poll thread only).
   *
   * @param hangingAfter how long a producer must have been silent on a partition before its open
   *     transaction there can be hanging
   */
  public static JournalReader open(
      Properties kafka,
      Collection<String> lanes,
      Producer<byte[], byte[]> producer,
      Duration hangingAfter) {
    JournalTopics.create(kafka, lanes);
    KafkaConsumer<byte[], byte[]> reader = JournalTopics.reader(kafka, "read_committed");
    KafkaConsumer<byte[], byte[]> uncommitted = JournalTopics.reader(kafka, "read_uncommitted");
    Admin admin = Admin.create(kafka);
    HangingTransactions hanging = HangingTransactions.connect(kafka, hangingAfter);
    return new JournalReader(
        reader,
        partitions -> JournalTopics.highWatermarks(admin, partitions),
        new JournalTopics.KafkaRepairs(hanging, uncommitted, producer),
        CHECK_EVERY,
        LOAD_LIMIT,
        () -> {
          reader.close(CloseOptions.timeout(Duration.ZERO));
          uncommitted.close(CloseOptions.timeout(Duration.ZERO));
          hanging.close();
          admin.close(Duration.ZERO);
        });
  }

  /**
   * Whether everything written to {@code journalPartitions} so far can be read as committed: their
   * last stable offset (what a read_committed reader can read up to) reaches their high watermark,
   * taken now, within {@code wait}. Asked after a transaction with start markers was reported
   * committed: a transaction coordinator that completes a commit after a broker restart skips the
   * partitions whose leader it cannot find, and their records then stay pending, to take the fate
   * of the producer's next transaction there, which may abort. False also when the offsets cannot
   * be read, or another producer's open transaction holds a partition back: the caller treats the
   * markers as not yet written, never as absent.
   */
  public boolean settled(Collection<TopicPartition> journalPartitions, Duration wait) {
    long deadline = System.nanoTime() + wait.toNanos();
    try {
      Map<TopicPartition, Long> written = highWatermarks.apply(journalPartitions);
      while (true) {
        Map<TopicPartition, Long> stable = reader.endOffsets(journalPartitions, wait);
        if (journalPartitions.stream()
            .allMatch(tp -> stable.getOrDefault(tp, -1L) >= written.getOrDefault(tp, 0L))) {
          return true;
        }
        if (System.nanoTime() >= deadline) {
          return false;
        }
        Thread.sleep(SETTLE_POLL.toMillis());
      }
    } catch (KafkaException | IllegalStateException e) {
      log.debug("Could not read the end offsets of {}: {}", journalPartitions, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Reads the committed markers of these dispatch partitions into {@code journal}. */
  public void load(AttemptJournal journal, Collection<TopicPartition> dispatchPartitions) {
    if (dispatchPartitions.isEmpty()) {
      return;
    }
    List<TopicPartition> partitions =
        dispatchPartitions.stream().map(AttemptJournal::journalPartition).toList();
    Map<TopicPartition, Long> ends = readFromStart(journal, dispatchPartitions, partitions);
    long deadline = System.nanoTime() + limit.toNanos();
    int repaired = 0;
    while (true) {
      Duration wait =
          Duration.ofNanos(
              Math.max(0, Math.min(checkEvery.toNanos(), deadline - System.nanoTime())));
      if (TopicReads.toOffsets(reader, ends, wait, record -> apply(journal, record))) {
        Map<TopicPartition, Long> now = highWatermarks.apply(partitions);
        if (now.equals(ends)) {
          break;
        }
        ends = now;
        continue;
      }
      Map<TopicPartition, Long> target = ends;
      List<TopicPartition> behind =
          partitions.stream().filter(tp -> reader.position(tp) < target.get(tp)).toList();
      List<HangingTransactions.Hanging> hanging = repair.findHanging(behind);
      if (!hanging.isEmpty() && repaired < MAX_REPAIRS) {
        repaired++;
        repair.repair(journal, hanging, ends);
        ends = readFromStart(journal, dispatchPartitions, partitions);
        deadline = System.nanoTime() + limit.toNanos();
      } else if (System.nanoTime() >= deadline) {
        throw repair.stalled(partitions);
      }
    }
    partitions.forEach(tp -> positions.put(tp, reader.position(tp)));
    reader.assign(List.of());
    int unanswered = dispatchPartitions.stream().mapToInt(journal::unanswered).sum();
    if (unanswered > 0) {
      log.info(
          "{} effect(s) on {} were started by an earlier owner without a committed outcome; they will be answered from"
              + " a lookup or held as ambiguous, not run again",
          unanswered,
          dispatchPartitions);
    }
  }

  /**
   * Applies to {@code journal} the committed records of {@code journalPartitions} written since the
   * last read, up to their high watermark taken now: the executor's own start markers, just
   * committed, and whatever others wrote before them, a releaser's fences above all (see {@link
   * AttemptJournal#beaten}). False when they could not be read that far within {@code wait} (an
   * open transaction of another producer, a broker away): the caller then runs none of the starts
   * and reads their dispatches again, which are answered from a lookup or held, never run.
   */
  public boolean readNew(
      AttemptJournal journal, Collection<TopicPartition> journalPartitions, Duration wait) {
    try {
      Map<TopicPartition, Long> ends = highWatermarks.apply(journalPartitions);
      List<TopicPartition> partitions = List.copyOf(journalPartitions);
      reader.assign(partitions);
      for (TopicPartition tp : partitions) {
        Long from = positions.get(tp);
        if (from == null) {
          reader.seekToBeginning(List.of(tp));
        } else {
          reader.seek(tp, from);
        }
      }
      boolean read = TopicReads.toOffsets(reader, ends, wait, record -> apply(journal, record));
      if (read) {
        partitions.forEach(tp -> positions.put(tp, reader.position(tp)));
      }
      reader.assign(List.of());
      return read;
    } catch (KafkaException | IllegalStateException e) {
      log.debug("Could not read {} back: {}", journalPartitions, e.toString());
      reader.assign(List.of());
      return false;
    }
  }

  /** Forgets where the journal partitions of these dispatch partitions were read to (revoked). */
  public void forget(Collection<TopicPartition> dispatchPartitions) {
    dispatchPartitions.forEach(tp -> positions.remove(AttemptJournal.journalPartition(tp)));
  }

  @Override
  public void close() {
    try {
      resources.close();
    } catch (Exception e) {
      log.debug("Closing the attempt journal reader: {}", e.toString());
    }
  }

  private Map<TopicPartition, Long> readFromStart(
      AttemptJournal journal,
      Collection<TopicPartition> dispatchPartitions,
      List<TopicPartition> partitions) {
    dispatchPartitions.forEach(journal::assigned);
    Map<TopicPartition, Long> ends = highWatermarks.apply(partitions);
    reader.assign(partitions);
    reader.seekToBeginning(partitions);
    return ends;
  }

  private static void apply(AttemptJournal journal, ConsumerRecord<byte[], byte[]> record) {
    journal.apply(
        new TopicPartition(record.topic(), record.partition()), record.key(), record.value());
  }
}
