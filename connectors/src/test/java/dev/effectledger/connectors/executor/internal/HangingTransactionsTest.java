package dev.effectledger.connectors.executor.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Which open transactions are hanging: never one that its coordinator still ends. */
class HangingTransactionsTest {

  private static final TopicPartition OUTCOMES_2 = new TopicPartition("tool-outcomes", 2);
  private static final Duration AFTER = Duration.ofSeconds(30);
  private static final long NOW = 1_000_000;

  private static ProducerState open(long lastTimestamp) {
    return new ProducerState(3, 173, 12, lastTimestamp, OptionalInt.of(4), OptionalLong.of(251));
  }

  private static TransactionDescription coordinator(
      TransactionState state, long producerId, TopicPartition... partitions) {
    return new TransactionDescription(
        1, state, producerId, 174, 10_000, OptionalLong.empty(), Set.of(partitions));
  }

  private static boolean hanging(ProducerState producer, TransactionDescription... coordinator) {
    return HangingTransactions.isHanging(OUTCOMES_2, producer, List.of(coordinator), NOW, AFTER);
  }

  @Test
  void shouldFindAnOldTransactionThatItsCoordinatorListsAsEmpty() {
    // What the single-broker chaos run left: the transactional id Empty, four partitions open.
    assertThat(hanging(open(NOW - 31_000), coordinator(TransactionState.EMPTY, 3))).isTrue();
  }

  @Test
  void shouldFindAnOldTransactionWhoseProducerNoCoordinatorKnows() {
    assertThat(hanging(open(NOW - 31_000))).isTrue();
  }

  @Test
  void shouldFindAnOldTransactionWhenTheCoordinatorsOngoingOneLeavesThePartitionOut() {
    // The successor's transaction is ongoing, on other partitions: this one is not in it.
    TopicPartition other = new TopicPartition("tool-outcomes", 0);
    assertThat(hanging(open(NOW - 31_000), coordinator(TransactionState.ONGOING, 3, other)))
        .isTrue();
  }

  @Test
  void shouldLeaveATransactionThatItsCoordinatorStillEnds() {
    for (TransactionState state :
        List.of(
            TransactionState.ONGOING,
            TransactionState.PREPARE_COMMIT,
            TransactionState.PREPARE_ABORT,
            TransactionState.UNKNOWN)) {
      assertThat(hanging(open(NOW - 600_000), coordinator(state, 3, OUTCOMES_2)))
          .as(state.toString())
          .isFalse();
    }
  }

  @Test
  void shouldLeaveATransactionWrittenToWithinTheThreshold() {
    assertThat(hanging(open(NOW - 30_000))).isFalse();
    assertThat(hanging(open(NOW - 1))).isFalse();
  }

  @Test
  void shouldLeaveAProducerWithNothingOpen() {
    ProducerState closed =
        new ProducerState(3, 173, 12, NOW - 600_000, OptionalInt.of(4), OptionalLong.empty());
    assertThat(hanging(closed)).isFalse();
  }
}
