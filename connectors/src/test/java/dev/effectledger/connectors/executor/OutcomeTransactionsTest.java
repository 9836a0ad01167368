package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.executor.internal.Finished;
import dev.effectledger.connectors.executor.internal.OffsetTracker;
import dev.effectledger.connectors.executor.internal.OutcomeTransactions;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The executor's transactional publisher over a MockProducer: no broker. */
class OutcomeTransactionsTest {

  private static final TopicPartition P0 = new TopicPartition("tool-dispatch.payments", 0);
  private static final TopicPartition P1 = new TopicPartition("tool-dispatch.payments", 1);
  private static final ConsumerGroupMetadata GROUP = new ConsumerGroupMetadata("executors");

  private final MockProducer<byte[], byte[]> producer =
      new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
  private final OffsetTracker tracker = new OffsetTracker();
  private final OutcomeTransactions transactions = new OutcomeTransactions(producer, tracker, null);

  @BeforeEach
  void init() {
    producer.initTransactions();
  }

  private Finished finishedAt(TopicPartition tp, long offset, String key) {
    tracker.started(tp, offset);
    tracker.finished(tp, offset);
    return Finished.unjournalled(
        tp,
        offset,
        0,
        List.of(
            new ProducerRecord<>(
                "tool-outcomes", key.getBytes(StandardCharsets.UTF_8), new byte[] {1})));
  }

  @Test
  void shouldPublishStagedOutcomesWithTheOffsetsPastThemInOneTransaction() {
    transactions.add(finishedAt(P0, 0, "k0"));
    transactions.add(finishedAt(P0, 1, "k1"));

    assertThat(transactions.commit(Set.of(), () -> GROUP)).isTrue();

    assertThat(producer.history())
        .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
        .containsExactly("k0", "k1");
    assertThat(producer.consumerGroupOffsetsHistory())
        .containsExactly(Map.of("executors", Map.of(P0, new OffsetAndMetadata(2))));
    assertThat(transactions.isEmpty()).isTrue();
    assertThat(tracker.committable()).as("nothing left to commit").isEmpty();
    assertThat(transactions.committed()).isEqualTo(1);
    assertThat(transactions.commit(Set.of(), () -> GROUP)).isTrue();
    assertThat(transactions.committed()).as("nothing to commit: no transaction").isEqualTo(1);
  }

  @Test
  void shouldDropWhatWasStagedWhenTheTransactionAbortsAndSayTheCallerMustReadAgain() {
    transactions.add(finishedAt(P0, 0, "k0"));
    producer.commitTransactionException = new KafkaException("broker restarted");

    assertThat(transactions.commit(Set.of(), () -> GROUP)).isFalse();

    assertThat(producer.transactionAborted()).isTrue();
    assertThat(producer.history()).as("nothing published").isEmpty();
    assertThat(transactions.isEmpty()).as("the aborted work is read again, not kept").isTrue();
    assertThat(transactions.committed()).as("an abort is not counted").isZero();
  }

  @Test
  void shouldNotPublishTheWorkOfPartitionsItLost() {
    transactions.add(finishedAt(P0, 0, "k0"));
    transactions.add(finishedAt(P1, 0, "k1"));

    transactions.drop(List.of(P1));
    tracker.forget(List.of(P1));
    transactions.commit(Set.of(), () -> GROUP);

    assertThat(producer.history())
        .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
        .containsExactly("k0");
  }

  @Test
  void shouldLetAFencedProducerStopTheExecutor() {
    transactions.add(finishedAt(P0, 0, "k0"));
    producer.fenceProducer();

    assertThatThrownBy(() -> transactions.commit(Set.of(), () -> GROUP))
        .isInstanceOf(ProducerFencedException.class);
  }

  @Test
  void shouldCommitNothingWhenNothingMovedAndNothingWaits() {
    assertThat(transactions.commit(Set.of(), () -> GROUP)).isTrue();

    assertThat(producer.transactionInFlight()).isFalse();
    assertThat(producer.transactionCommitted()).as("no empty transaction").isFalse();
  }
}
