package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.AttemptJournal.Verdict;
import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.executor.sim.LogConsumer;
import dev.effectledger.connectors.executor.sim.LogProducer;
import dev.effectledger.connectors.executor.sim.SimulatedCluster;
import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import dev.effectledger.connectors.transactions.HangingTransactions.Hanging;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * A journal load held back by an open transaction: a hanging one is repaired (its markers committed
 * again as started, then aborted); anything else stops the executor, saying what holds it back.
 */
class JournalReaderTest {

  private static final TopicPartition DISPATCH = new TopicPartition("tool-dispatch.payments", 2);
  private static final TopicPartition JOURNAL = new TopicPartition("tool-attempts.payments", 2);
  private static final Hanging HANGING = hanging(Decision.UNKNOWN);

  private static Hanging hanging(Decision decision) {
    return new Hanging(
        JOURNAL,
        3,
        (short) 173,
        0,
        2,
        0,
        decision,
        Set.of("effectledger-executor-executor-1"),
        "effectledger-executor-executor-1 (CompleteCommit at epoch 180)");
  }

  private static MockConsumer<byte[], byte[]> reader() {
    MockConsumer<byte[], byte[]> reader = new MockConsumer<>("earliest");
    reader.updateBeginningOffsets(Map.of(JOURNAL, 0L));
    return reader;
  }

  private static ConsumerRecord<byte[], byte[]> record(long offset, String key, String value) {
    return AttemptJournalTest.journalRecord(JOURNAL, offset, key, value);
  }

  /**
   * The journal partition of one dispatch partition: records 0-1 committed, 2-5 held open by a
   * hanging transaction (what they are is all a reader past it can know), and what a repair commits
   * after them.
   */
  private static class HeldBack implements JournalReader.Repairs {
    final MockConsumer<byte[], byte[]> committed = JournalReaderTest.reader();
    final List<String> events = new ArrayList<>();
    final List<ProducerRecord<byte[], byte[]>> recommitted = new ArrayList<>();
    final AtomicLong highWatermark = new AtomicLong(6);
    RuntimeException recommitFailure;
    Hanging found = HANGING;

    final List<ConsumerRecord<byte[], byte[]>> before =
        List.of(record(0, "a#1", "started 0 executor-1"), record(1, "a#1", "answered 0 effect"));
    final List<ConsumerRecord<byte[], byte[]>> open =
        List.of(
            record(2, "b#1", "started 3 executor-1"),
            record(3, "c#1", "answered 4 effect"),
            record(4, "a#1", null),
            record(5, "d#1", "started 5 executor-1"));

    HeldBack() {
      committed.schedulePollTask(() -> before.forEach(committed::addRecord));
    }

    JournalReader journalReader() {
      return new JournalReader(
          committed,
          partitions -> Map.of(JOURNAL, highWatermark.get()),
          this,
          Duration.ofMillis(100),
          Duration.ofSeconds(5),
          () -> {});
    }

    @Override
    public List<String> describeOpen(Collection<TopicPartition> partitions) {
      return List.of(HANGING.toString());
    }

    @Override
    public List<Hanging> hanging(Collection<TopicPartition> partitions) {
      events.add("found " + partitions);
      return List.of(found);
    }

    @Override
    public List<ConsumerRecord<byte[], byte[]>> readUncommitted(
        TopicPartition partition, long from, long to) {
      events.add("read " + partition + " " + from + "-" + to);
      return open.stream().filter(r -> r.offset() >= from && r.offset() < to).toList();
    }

    @Override
    public void recommit(List<ProducerRecord<byte[], byte[]>> records) {
      if (recommitFailure != null) {
        throw recommitFailure;
      }
      events.add("recommit " + records.size());
      recommitted.addAll(records);
      highWatermark.addAndGet(records.size() + 1); // the records and the commit marker
    }

    @Override
    public boolean end(Hanging hanging) {
      boolean commit = hanging.decision() == Decision.COMMITTED;
      events.add((commit ? "commit " : "abort ") + hanging.producerId());
      // Now a read_committed reader passes 2-5 (committed or aborted) and reads what was committed.
      committed.schedulePollTask(
          () -> {
            before.forEach(committed::addRecord);
            if (commit) {
              open.forEach(committed::addRecord);
            }
            long offset = 7;
            for (ProducerRecord<byte[], byte[]> r : recommitted) {
              committed.addRecord(
                  new ConsumerRecord<>(
                      JOURNAL.topic(), JOURNAL.partition(), offset++, r.key(), r.value()));
            }
          });
      return true;
    }
  }

  @Test
  void shouldCommitAHangingTransactionThatItsCoordinatorCommittedAsItIs() {
    HeldBack journalPartition = new HeldBack();
    journalPartition.found = hanging(Decision.COMMITTED);
    AttemptJournal journal = new AttemptJournal("executor-2");

    journalPartition.journalReader().load(journal, List.of(DISPATCH));

    assertThat(journalPartition.events)
        .as("nothing committed again: its own records are committed")
        .containsExactly("found [" + JOURNAL + "]", "commit 3");
    assertThat(journal.verdict(DISPATCH, "b#1", 3)).isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(DISPATCH, "c#1", 4))
        .as("its answer committed with it")
        .isEqualTo(Verdict.ANSWERED);
    assertThat(journal.verdict(DISPATCH, "d#1", 5)).isEqualTo(Verdict.STARTED_BEFORE);
  }

  @Test
  void shouldCommitTheMarkersOfAHangingTransactionAgainAsStartedBeforeAbortingIt() {
    HeldBack journalPartition = new HeldBack();
    AttemptJournal journal = new AttemptJournal("executor-2");

    journalPartition.journalReader().load(journal, List.of(DISPATCH));

    assertThat(journalPartition.events)
        .containsExactly(
            "found [" + JOURNAL + "]", "read " + JOURNAL + " 2-6", "recommit 3", "abort 3");
    assertThat(journalPartition.recommitted)
        .extracting(r -> new String(r.key()) + " " + new String(r.value()))
        .containsExactly(
            "b#1 started 3 executor-2", "c#1 started 4 executor-2", "d#1 started 5 executor-2");
    assertThat(journal.verdict(DISPATCH, "a#1", 0))
        .as("committed before the hanging transaction; its tombstone in it is not trusted")
        .isEqualTo(Verdict.ANSWERED);
    assertThat(journal.verdict(DISPATCH, "b#1", 3)).isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(DISPATCH, "c#1", 4))
        .as("answered in a transaction that may not commit: its outcome may be lost")
        .isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(DISPATCH, "d#1", 5)).isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(DISPATCH, "e#1", 6)).isEqualTo(Verdict.RUN);
  }

  @Test
  void shouldNeverAbortAHangingTransactionWhoseMarkersCouldNotBeCommittedAgain() {
    HeldBack journalPartition = new HeldBack();
    journalPartition.recommitFailure = new IllegalStateException("producer fenced");

    assertThatThrownBy(
            () ->
                journalPartition
                    .journalReader()
                    .load(new AttemptJournal("executor-2"), List.of(DISPATCH)))
        .hasMessageContaining("producer fenced");
    assertThat(journalPartition.events).noneMatch(e -> e.startsWith("abort"));
  }

  @Test
  void shouldStopNamingTheOpenTransactionThatHoldsTheJournalBackWhenNoneIsHanging() {
    // The high watermark is 5 but nothing is readable: a transaction holds records 0-4 open.
    JournalReader journalReader =
        new JournalReader(
            reader(),
            partitions -> Map.of(JOURNAL, 5L),
            new HeldBack() {
              @Override
              public List<Hanging> hanging(Collection<TopicPartition> partitions) {
                return List.of();
              }
            },
            Duration.ofMillis(100),
            Duration.ofMillis(300),
            () -> {});

    assertThatThrownBy(
            () -> journalReader.load(new AttemptJournal("executor-1"), List.of(DISPATCH)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Could not read the attempt journal [" + JOURNAL + "]")
        .hasMessageContaining("producer 3 epoch 173")
        .hasMessageContaining("hanging transaction")
        .hasMessageContaining("docs/operations.md");
  }

  @Test
  void shouldStopWithoutADiagnosisWhenNoOpenTransactionIsKnown() {
    JournalReader journalReader =
        new JournalReader(
            reader(), partitions -> Map.of(JOURNAL, 5L), Duration.ofMillis(300), () -> {});

    assertThatThrownBy(
            () -> journalReader.load(new AttemptJournal("executor-1"), List.of(DISPATCH)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Could not read the attempt journal")
        .hasMessageNotContaining("hanging");
  }

  /**
   * Start markers reported committed whose commit marker never reached the partition (the
   * coordinator skipped it) are not settled; the producer's next transaction there settles them.
   */
  @Test
  void shouldSettleStartMarkersOnlyOnceTheyCanBeReadAsCommitted() {
    SimulatedCluster cluster = new SimulatedCluster();
    JournalReader journalReader =
        new JournalReader(
            new LogConsumer(cluster),
            partitions -> partitions.stream().collect(Collectors.toMap(tp -> tp, cluster::end)),
            Duration.ofSeconds(10),
            () -> {});
    LogProducer producer = new LogProducer(cluster);
    producer.initTransactions();
    producer.skipMarkersOn(JOURNAL.topic(), 1);
    Runnable commitAMarker =
        () -> {
          producer.beginTransaction();
          producer.send(
              new ProducerRecord<>(
                  JOURNAL.topic(),
                  JOURNAL.partition(),
                  "k#1".getBytes(),
                  "started 0 e".getBytes()));
          producer.commitTransaction();
        };

    commitAMarker.run();
    assertThat(journalReader.settled(List.of(JOURNAL), Duration.ofMillis(50)))
        .as("reported committed, still pending")
        .isFalse();
    commitAMarker.run();
    assertThat(journalReader.settled(List.of(JOURNAL), Duration.ofMillis(50))).isTrue();
    assertThat(cluster.records(JOURNAL.topic())).as("both committed").hasSize(2);
  }
}
