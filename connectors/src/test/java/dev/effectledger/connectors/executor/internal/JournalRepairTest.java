package dev.effectledger.connectors.executor.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import dev.effectledger.connectors.transactions.HangingTransactions.Hanging;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * The repair of hanging transactions on the attempt journal, in the order it must happen (commits
 * of committed ones, then markers committed again, then aborts), over a recording {@link
 * JournalReader.Repairs}: no broker.
 */
class JournalRepairTest {

  private static final TopicPartition DISPATCH = new TopicPartition("tool-dispatch.payments", 2);
  private static final TopicPartition JOURNAL = AttemptJournal.journalPartition(DISPATCH);

  private static Hanging hanging(long producerId, long startOffset, Decision decision) {
    return new Hanging(JOURNAL, producerId, (short) 1, 0, startOffset, 0, decision, Set.of(), "");
  }

  private static ConsumerRecord<byte[], byte[]> record(long offset, String key, String value) {
    return new ConsumerRecord<>(
        JOURNAL.topic(),
        JOURNAL.partition(),
        offset,
        key.getBytes(StandardCharsets.UTF_8),
        value.getBytes(StandardCharsets.UTF_8));
  }

  /** Records what the repair asks for, in order; the records 2-5 are open. */
  private static final class Recording implements JournalReader.Repairs {
    final List<String> events = new ArrayList<>();
    RuntimeException failure;
    List<String> open = List.of("tool-attempts.payments-2 from offset 2, producer 3");

    @Override
    public List<String> describeOpen(Collection<TopicPartition> partitions) {
      if (failure != null) {
        throw failure;
      }
      return open;
    }

    @Override
    public List<Hanging> hanging(Collection<TopicPartition> partitions) {
      events.add("find " + partitions);
      if (failure != null) {
        throw failure;
      }
      return List.of(JournalRepairTest.hanging(3, 2, Decision.UNKNOWN));
    }

    @Override
    public List<ConsumerRecord<byte[], byte[]>> readUncommitted(
        TopicPartition partition, long from, long to) {
      events.add("read " + from + "-" + to);
      return List.of(
              record(2, "b#1", "started 3 executor-1"), record(5, "d#1", "started 5 executor-1"))
          .stream()
          .filter(r -> r.offset() >= from && r.offset() < to)
          .toList();
    }

    @Override
    public void recommit(List<ProducerRecord<byte[], byte[]>> records) {
      if (failure != null) {
        throw failure;
      }
      events.add("recommit " + records.size());
    }

    @Override
    public boolean end(Hanging hanging) {
      events.add("end " + hanging.producerId() + " " + hanging.decision());
      return true;
    }
  }

  private final Recording repairs = new Recording();
  private final JournalRepair repair = new JournalRepair(repairs, Duration.ofSeconds(5));
  private final AttemptJournal journal = new AttemptJournal("executor-2");

  @Test
  void committedOnesEndFirstThenTheOthersMarkersFromTheirEarliestOffsetBeforeAnyAbort() {
    journal.assigned(DISPATCH);

    repair.repair(
        journal,
        List.of(
            hanging(7, 5, Decision.ABORTED),
            hanging(4, 0, Decision.COMMITTED),
            hanging(3, 2, Decision.UNKNOWN)),
        Map.of(JOURNAL, 6L));

    assertThat(repairs.events)
        .containsExactly(
            "end 4 COMMITTED", "read 2-6", "recommit 2", "end 7 ABORTED", "end 3 UNKNOWN");
  }

  @Test
  void onlyCommittedOnesAreEndedWhenTheMarkersCannotBeCommittedAgain() {
    journal.assigned(DISPATCH);
    repairs.failure = new IllegalStateException("producer fenced");

    assertThatThrownBy(
            () ->
                repair.repair(
                    journal,
                    List.of(hanging(4, 0, Decision.COMMITTED), hanging(3, 2, Decision.UNKNOWN)),
                    Map.of(JOURNAL, 6L)))
        .hasMessage("producer fenced");
    assertThat(repairs.events).containsExactly("end 4 COMMITTED", "read 2-6");
  }

  @Test
  void hangingTransactionsAreLookedForOnlyOnPartitionsBehindAndAFailedLookFindsNone() {
    assertThat(repair.findHanging(List.of())).isEmpty();
    assertThat(repairs.events).isEmpty();

    assertThat(repair.findHanging(List.of(JOURNAL))).hasSize(1);

    repairs.failure = new IllegalStateException("no broker");
    assertThat(repair.findHanging(List.of(JOURNAL))).isEmpty();
    assertThat(repairs.events).containsExactly("find [" + JOURNAL + "]", "find [" + JOURNAL + "]");
  }

  @Test
  void aStalledLoadNamesItsPartitionsItsLimitAndTheOpenTransactions() {
    String message = repair.stalled(List.of(JOURNAL)).getMessage();

    assertThat(message)
        .startsWith("Could not read the attempt journal [" + JOURNAL + "] to its end within PT5S")
        .contains("Open transactions on it: tool-attempts.payments-2 from offset 2, producer 3.");

    repairs.failure = new IllegalStateException("no broker");
    assertThat(repair.stalled(List.of(JOURNAL)).getMessage())
        .contains("restart it.")
        .doesNotContain("Open transactions on it");
  }
}
