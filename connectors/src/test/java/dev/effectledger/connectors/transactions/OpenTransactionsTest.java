package dev.effectledger.connectors.transactions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import dev.effectledger.connectors.transactions.HangingTransactions.Hanging;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.internals.KafkaFutureImpl;
import org.junit.jupiter.api.Test;

/**
 * How an open transaction the cluster describes becomes a {@link Hanging} (what the markers are
 * written from, and what the logs say), and how an Admin answer is awaited: no broker.
 */
class OpenTransactionsTest {

  private static final TopicPartition OUTCOMES_2 = new TopicPartition("tool-outcomes", 2);
  private static final ProducerState OPEN =
      new ProducerState(3, 173, 12, 400_000, OptionalInt.of(4), OptionalLong.of(251));

  @Test
  void anOpenTransactionKeepsWhatItsMarkersAreWrittenFrom() {
    TransactionDescription described =
        new TransactionDescription(
            1, TransactionState.COMPLETE_COMMIT, 3, 174, 10_000, OptionalLong.empty(), Set.of());

    Hanging hanging =
        new OpenTransactions.Open(OUTCOMES_2, OPEN, Map.of("executor-a", described))
            .hanging(Decision.COMMITTED);

    assertThat(hanging.partition()).isEqualTo(OUTCOMES_2);
    assertThat(hanging.producerId()).isEqualTo(3);
    assertThat(hanging.producerEpoch()).isEqualTo((short) 173);
    assertThat(hanging.coordinatorEpoch()).isEqualTo(4);
    assertThat(hanging.startOffset()).isEqualTo(251);
    assertThat(hanging.lastTimestamp()).isEqualTo(400_000);
    assertThat(hanging.decision()).isEqualTo(Decision.COMMITTED);
    assertThat(hanging.transactionalIds()).containsExactly("executor-a");
    assertThat(hanging.coordinator()).isEqualTo("executor-a (CompleteCommit at epoch 174)");
    assertThat(hanging.toString())
        .isEqualTo(
            "tool-outcomes-2 from offset 251, producer 3 epoch 173, transactional id"
                + " executor-a (CompleteCommit at epoch 174), decided: COMMITTED");
  }

  @Test
  void aProducerItsCoordinatorForgotIsSaidToBeUnknownWithCoordinatorEpochZero() {
    ProducerState noCoordinatorEpoch =
        new ProducerState(3, 173, 12, 400_000, OptionalInt.empty(), OptionalLong.of(251));

    Hanging hanging =
        new OpenTransactions.Open(OUTCOMES_2, noCoordinatorEpoch, Map.of())
            .hanging(Decision.UNKNOWN);

    assertThat(hanging.coordinatorEpoch()).isZero();
    assertThat(hanging.transactionalIds()).isEmpty();
    assertThat(hanging.toString())
        .isEqualTo(
            "tool-outcomes-2 from offset 251, producer 3 epoch 173, unknown to its coordinator,"
                + " decided: UNKNOWN");
  }

  @Test
  void anAdminAnswerIsReturnedAndAFailureNamesWhatCouldNotBeDone() {
    assertThat(OpenTransactions.await(KafkaFuture.completedFuture(7), "count")).isEqualTo(7);

    KafkaFutureImpl<Integer> failed = new KafkaFutureImpl<>();
    failed.completeExceptionally(new TimeoutException("no broker"));
    assertThatThrownBy(() -> OpenTransactions.await(failed, "describe the producers"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("Could not describe the producers: ")
        .hasMessageContaining("no broker");
  }
}
