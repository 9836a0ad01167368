package dev.effectledger.connectors.transactions;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Which open transactions are hanging (never one that its coordinator still ends), and what their
 * coordinator decided: the records open on the partition are at epoch 173 of producer 3.
 */
class HangingTransactionsTest {

  private static final TopicPartition OUTCOMES_2 = new TopicPartition("tool-outcomes", 2);
  private static final Duration AFTER = Duration.ofSeconds(30);
  private static final long NOW = 1_000_000;
  private static final ProducerState OPEN =
      new ProducerState(3, 173, 12, NOW - 600_000, OptionalInt.of(4), OptionalLong.of(251));

  private static TransactionDescription coordinator(
      TransactionState state, int epoch, TopicPartition... partitions) {
    return new TransactionDescription(
        1, state, 3, epoch, 10_000, OptionalLong.empty(), Set.of(partitions));
  }

  private static Optional<Decision> decide(TransactionDescription... coordinator) {
    return HangingTransactions.decide(OUTCOMES_2, OPEN, List.of(coordinator), true);
  }

  @Test
  void shouldCommitWhatTheCoordinatorCommittedAtTheNextEpoch() {
    // What the single-broker chaos run left: CompleteCommit, markers lost on two partitions.
    assertThat(decide(coordinator(TransactionState.COMPLETE_COMMIT, 174)))
        .contains(Decision.COMMITTED);
    assertThat(decide(coordinator(TransactionState.PREPARE_COMMIT, 174)))
        .as("decided, writing its markers elsewhere")
        .contains(Decision.COMMITTED);
  }

  @Test
  void shouldAbortWhatTheCoordinatorAbortedAtTheNextEpoch() {
    for (TransactionState state :
        List.of(
            TransactionState.COMPLETE_ABORT,
            TransactionState.PREPARE_ABORT,
            TransactionState.PREPARE_EPOCH_FENCE)) {
      assertThat(decide(coordinator(state, 174))).as(state.toString()).contains(Decision.ABORTED);
    }
  }

  @Test
  void shouldNotTakeAStateOlderThanTheRecordsForAnAbort() {
    // What the single-broker chaos run left: the executor's transactional id Empty at the epoch
    // of records open on four partitions. A coordinator that lost the tail of its log shows that,
    // and the executor may have seen the lost transaction commit.
    assertThat(decide(coordinator(TransactionState.EMPTY, 173))).contains(Decision.UNKNOWN);
    assertThat(decide(coordinator(TransactionState.COMPLETE_COMMIT, 173)))
        .as("the end of the transaction before it")
        .contains(Decision.UNKNOWN);
    assertThat(decide(coordinator(TransactionState.EMPTY, 174))).contains(Decision.UNKNOWN);
  }

  @Test
  void shouldNotKnowOnceTheCoordinatorMovedOn() {
    assertThat(decide(coordinator(TransactionState.COMPLETE_COMMIT, 176)))
        .as("a later transaction committed: this one's end is forgotten")
        .contains(Decision.UNKNOWN);
    assertThat(decide(coordinator(TransactionState.EMPTY, 175)))
        .as("the successor initialised after it ended")
        .contains(Decision.UNKNOWN);
    TopicPartition other = new TopicPartition("tool-outcomes", 0);
    assertThat(decide(coordinator(TransactionState.ONGOING, 174, other)))
        .as("the next transaction is ongoing, on other partitions")
        .contains(Decision.UNKNOWN);
    assertThat(decide()).as("a producer no coordinator knows").contains(Decision.UNKNOWN);
    assertThat(
            decide(
                new TransactionDescription(
                    1,
                    TransactionState.COMPLETE_COMMIT,
                    4,
                    174,
                    10_000,
                    OptionalLong.empty(),
                    Set.of())))
        .as("another producer's transaction")
        .contains(Decision.UNKNOWN);
  }

  @Test
  void shouldNotTellAnythingUnderTransactionsV1() {
    // Under v1 the epoch stays the same from one transaction to the next.
    assertThat(
            HangingTransactions.decide(
                OUTCOMES_2,
                OPEN,
                List.of(coordinator(TransactionState.COMPLETE_COMMIT, 174)),
                false))
        .contains(Decision.UNKNOWN);
  }

  @Test
  void shouldLeaveATransactionThatItsCoordinatorStillEnds() {
    for (TransactionState state :
        List.of(
            TransactionState.ONGOING,
            TransactionState.PREPARE_COMMIT,
            TransactionState.PREPARE_ABORT,
            TransactionState.UNKNOWN)) {
      assertThat(decide(coordinator(state, 173, OUTCOMES_2))).as(state.toString()).isEmpty();
      assertThat(decide(coordinator(state, 174, OUTCOMES_2))).as(state.toString()).isEmpty();
    }
  }

  @Test
  void shouldWaitForAnOngoingTransactionAtTheSameEpochToEnd() {
    TopicPartition other = new TopicPartition("tool-outcomes", 0);
    assertThat(decide(coordinator(TransactionState.ONGOING, 173, other)))
        .as("it still ends, and its end is this partition's too")
        .isEmpty();
  }

  @Test
  void shouldLeaveAProducerWithNothingOpen() {
    ProducerState closed =
        new ProducerState(3, 173, 12, NOW - 600_000, OptionalInt.of(4), OptionalLong.empty());
    assertThat(HangingTransactions.decide(OUTCOMES_2, closed, List.of(), true)).isEmpty();
  }

  @Test
  void shouldCountOnlyAProducerSilentForLongerThanTheThreshold() {
    assertThat(HangingTransactions.silent(OPEN, NOW, AFTER)).isTrue();
    ProducerState recent =
        new ProducerState(3, 173, 12, NOW - 30_000, OptionalInt.of(4), OptionalLong.of(251));
    assertThat(HangingTransactions.silent(recent, NOW, AFTER)).isFalse();
  }
}
