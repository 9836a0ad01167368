package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.JournalReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** A journal load that cannot reach the end: the executor stops and says what holds it back. */
class JournalReaderTest {

  private static final TopicPartition DISPATCH = new TopicPartition("tool-dispatch.payments", 2);
  private static final TopicPartition JOURNAL = new TopicPartition("tool-attempts.payments", 2);

  private static MockConsumer<byte[], byte[]> reader() {
    MockConsumer<byte[], byte[]> reader = new MockConsumer<>("earliest");
    reader.updateBeginningOffsets(Map.of(JOURNAL, 0L));
    return reader;
  }

  @Test
  void shouldStopNamingTheOpenTransactionThatHoldsTheJournalBack() {
    // The high watermark is 5 but nothing is readable: a transaction holds records 0-4 open.
    JournalReader journalReader =
        new JournalReader(
            reader(),
            partitions -> Map.of(JOURNAL, 5L),
            partitions ->
                List.of(
                    JOURNAL
                        + " from offset 0, producer 3 epoch 173, transactional id"
                        + " effectledger-executor-executor-1 (Empty)"),
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
  void shouldStopWithoutADiagnosisWhenTheOpenTransactionsCannotBeDescribed() {
    JournalReader journalReader =
        new JournalReader(
            reader(),
            partitions -> Map.of(JOURNAL, 5L),
            partitions -> {
              throw new IllegalStateException("admin unreachable");
            },
            Duration.ofMillis(300),
            () -> {});

    assertThatThrownBy(
            () -> journalReader.load(new AttemptJournal("executor-1"), List.of(DISPATCH)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Could not read the attempt journal")
        .hasMessageNotContaining("hanging");
  }
}
