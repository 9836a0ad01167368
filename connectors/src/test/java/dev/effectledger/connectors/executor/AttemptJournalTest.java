package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.AttemptJournal.Verdict;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AttemptJournalTest {

  private static final TopicPartition P0 = new TopicPartition("tool-dispatch.payments", 0);
  private static final TopicPartition JOURNAL = new TopicPartition("tool-attempts.payments", 0);

  private final AttemptJournal journal = new AttemptJournal("executor-1");

  @BeforeEach
  void assign() {
    journal.assigned(P0);
  }

  /** One transaction that commits: its journal records, then commit. */
  private List<ProducerRecord<byte[], byte[]>> commit() {
    List<ProducerRecord<byte[], byte[]>> records = journal.records();
    journal.committed();
    return records;
  }

  /**
   * The group's committed offset of the partition, read back at {@code offset}, then one
   * transaction.
   */
  private List<ProducerRecord<byte[], byte[]>> confirmThenCommit(long offset) {
    journal.confirmed(Map.of(P0, offset));
    return commit();
  }

  private static String value(ProducerRecord<byte[], byte[]> record) {
    return record.value() == null ? null : new String(record.value(), StandardCharsets.UTF_8);
  }

  @Test
  void shouldRunADispatchWithoutMarkerAndNotOneStartedBefore() {
    assertThat(journal.verdict(P0, "k#1", 5)).isEqualTo(Verdict.RUN);

    journal.start(P0, "k#1", 5);
    List<ProducerRecord<byte[], byte[]>> records = commit();

    assertThat(records)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.topic()).isEqualTo(JOURNAL.topic());
              assertThat(r.partition()).isEqualTo(0);
              assertThat(value(r)).isEqualTo("started 5 executor-1");
            });
    assertThat(journal.verdict(P0, "k#1", 5)).isEqualTo(Verdict.STARTED_BEFORE);
  }

  @Test
  void shouldKeepAnAnsweredMarkerAboveTheCommittedOffsetAndSkipItsDispatchWhenReadAgain() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, false);

    List<ProducerRecord<byte[], byte[]>> records = commit(); // an earlier dispatch still runs

    assertThat(records).extracting(AttemptJournalTest::value).containsExactly("answered 7 effect");
    assertThat(journal.verdict(P0, "k#1", 7)).isEqualTo(Verdict.ANSWERED);
    assertThat(journal.verdict(P0, "k#1", 9))
        .as("another dispatch of the attempt")
        .isEqualTo(Verdict.STARTED_BEFORE);
  }

  @Test
  void shouldTombstoneAMarkerOnlyOnceTheCommittedOffsetReadBackHasPassedItsDispatch() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, false);
    commit();
    assertThat(journal.hasStaged()).isFalse();

    journal.confirmed(Map.of(P0, 7L));
    assertThat(journal.hasStaged()).as("7 is not passed: the dispatch may be read again").isFalse();
    journal.confirmed(Map.of(P0, 8L));
    assertThat(journal.hasStaged()).isTrue();
    List<ProducerRecord<byte[], byte[]>> records = commit();

    assertThat(records)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("k#1");
              assertThat(r.value()).isNull();
            });
    assertThat(journal.live(P0)).isZero();
    assertThat(journal.verdict(P0, "k#1", 7)).isEqualTo(Verdict.RUN);
  }

  /**
   * The transaction that carries the answer may also carry the offset past the dispatch, and that
   * transaction may commit on the journal and lose its offsets (docs/chaos.md): the marker must
   * survive it, answered.
   */
  @Test
  void shouldWriteTheAnswerNotATombstoneInTheTransactionThatMovesTheOffsetPastTheDispatch() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, false);

    assertThat(commit()).extracting(AttemptJournalTest::value).containsExactly("answered 7 effect");
    assertThat(journal.verdict(P0, "k#1", 7)).isEqualTo(Verdict.ANSWERED);
    assertThat(confirmThenCommit(8))
        .extracting(AttemptJournalTest::value)
        .containsExactly((String) null);
    assertThat(journal.live(P0)).isZero();
  }

  @Test
  void shouldKeepATombstoneStagedForATransactionThatAbortsOutOfTheJournal() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, false);
    commit();
    journal.confirmed(Map.of(P0, 8L));
    journal.records();
    journal.aborted();

    assertThat(journal.live(P0)).as("the tombstone did not commit").isOne();
    assertThat(journal.verdict(P0, "k#1", 7)).isEqualTo(Verdict.ANSWERED);
    assertThat(confirmThenCommit(8))
        .as("the next sweep stages it again")
        .extracting(AttemptJournalTest::value)
        .containsExactly((String) null);
  }

  @Test
  void shouldForgetWhatAnAbortedTransactionStagedOrAnswered() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, false);
    journal.records();
    journal.aborted();

    assertThat(journal.verdict(P0, "k#1", 7))
        .as("the outcome did not commit")
        .isEqualTo(Verdict.STARTED_BEFORE);
    journal.start(P0, "other#1", 9);
    journal.aborted();
    assertThat(journal.verdict(P0, "other#1", 9)).isEqualTo(Verdict.RUN);
    assertThat(commit()).isEmpty();
  }

  @Test
  void shouldRunAnotherDispatchOfAKeyWhoseAnsweredAttemptProvablyDidNothing() {
    journal.start(P0, "k#1", 7);
    commit();
    journal.answer(P0, "k#1", 7, true);
    commit();

    assertThat(journal.verdict(P0, "k#1", 7)).isEqualTo(Verdict.ANSWERED);
    assertThat(journal.verdict(P0, "k#1", 12)).isEqualTo(Verdict.RUN);
  }

  @Test
  void shouldTreatTheSameAttemptTwiceInOneTransactionAsStartedBefore() {
    journal.start(P0, "k#1", 7);

    assertThat(journal.verdict(P0, "k#1", 8)).isEqualTo(Verdict.STARTED_BEFORE);
  }

  @Test
  void shouldKeepAMarkerSharedByTwoDispatchesUntilTheHigherOneIsPassed() {
    journal.start(P0, "k#1", 7);
    commit();
    // a second dispatch of the same attempt at 12 was answered from a lookup
    journal.answer(P0, "k#1", 12, false);
    journal.answer(P0, "k#1", 7, false);
    commit();

    assertThat(confirmThenCommit(9)).as("passed 7, not 12").isEmpty();
    assertThat(journal.verdict(P0, "k#1", 12)).isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(confirmThenCommit(13))
        .extracting(AttemptJournalTest::value)
        .containsExactly((String) null);
  }

  @Test
  void shouldReadMarkersBackFromTheTopicIncludingThoseOfTheFirstRelease() {
    journal.apply(JOURNAL, bytes("a#1"), bytes("started 4 executor-0"));
    journal.apply(JOURNAL, bytes("b#1"), bytes("answered 5 effect"));
    journal.apply(JOURNAL, bytes("c#1"), bytes("executor-0-6f1c"));
    journal.apply(JOURNAL, bytes("d#1"), bytes("started 6 executor-0"));
    journal.apply(JOURNAL, bytes("d#1"), null);

    assertThat(journal.verdict(P0, "a#1", 4)).isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(P0, "b#1", 5)).isEqualTo(Verdict.ANSWERED);
    assertThat(journal.verdict(P0, "c#1", 6))
        .as("a marker of the first release")
        .isEqualTo(Verdict.STARTED_BEFORE);
    assertThat(journal.verdict(P0, "d#1", 6)).isEqualTo(Verdict.RUN);
    assertThat(journal.unanswered(P0)).isEqualTo(2);
    assertThat(journal.sweepable()).containsExactly(P0);
    assertThat(confirmThenCommit(100))
        .as("the first release's marker has no offset to pass")
        .hasSize(2)
        .noneMatch(r -> new String(r.key(), StandardCharsets.UTF_8).equals("c#1"));
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A record of the journal partition as a reader gets it; a null value is a tombstone. */
  static ConsumerRecord<byte[], byte[]> journalRecord(
      TopicPartition journal, long offset, String key, String value) {
    return new ConsumerRecord<>(
        journal.topic(),
        journal.partition(),
        offset,
        key.getBytes(StandardCharsets.UTF_8),
        value == null ? null : value.getBytes(StandardCharsets.UTF_8));
  }

  private static ConsumerRecord<byte[], byte[]> uncertain(long offset, String key, String value) {
    return journalRecord(JOURNAL, offset, key, value);
  }

  @Test
  void shouldCommitUncertainMarkersAgainAsStartedAtTheHighestOffsetTheyCover() {
    journal.apply(
        JOURNAL, "k#1".getBytes(StandardCharsets.UTF_8), "started 9 executor-0".getBytes());

    List<ProducerRecord<byte[], byte[]>> restarts =
        journal.restarts(
            JOURNAL,
            List.of(
                uncertain(20, "k#1", "answered 4 effect"),
                uncertain(21, "m#1", "started 12 executor-0"),
                uncertain(22, "m#1", "answered 14 none"),
                uncertain(23, "k#1", null),
                uncertain(24, "gone#1", null),
                uncertain(25, "old#1", "executor-0")));

    assertThat(restarts)
        .extracting(r -> new String(r.key(), StandardCharsets.UTF_8) + " " + value(r))
        .containsExactly(
            "k#1 started 9 executor-1", "m#1 started 14 executor-1", "old#1 started -1 executor-1");
  }

  @Test
  void shouldStageAgainTheUnansweredMarkersOfAPartitionAsTheyAreNow() {
    journal.start(P0, "k#1", 7);
    journal.start(P0, "m#1", 8);
    commit();
    journal.answer(P0, "m#1", 8, false);

    journal.reassertStarts(List.of(P0));

    assertThat(journal.records())
        .extracting(r -> new String(r.key(), StandardCharsets.UTF_8) + " " + value(r))
        .containsExactlyInAnyOrder("k#1 started 7 executor-1", "m#1 answered 8 effect");
    journal.committed();
    journal.answer(P0, "k#1", 7, false);
    commit();
    journal.reassertStarts(List.of(P0));
    assertThat(journal.records()).as("no marker is unanswered").isEmpty();
  }

  private void read(String key, String value) {
    journal.apply(
        JOURNAL,
        key.getBytes(StandardCharsets.UTF_8),
        value == null ? null : value.getBytes(StandardCharsets.UTF_8));
  }

  private static Map.Entry<String, String> rec(String key, String value) {
    return new java.util.AbstractMap.SimpleEntry<>(key, value);
  }

  @Test
  void shouldBeatAStartThatAFenceOfItsLifePrecedesInThePartitionAndNoOther() {
    String fence = AttemptJournal.fenceKey("k", 40);
    read(fence, AttemptJournal.fenceValue(12, "reconciler"));
    assertThat(journal.fenced(P0, "k", 40L)).isTrue();
    assertThat(journal.fenced(P0, "k", 41L)).as("another life").isFalse();
    assertThat(journal.fenced(P0, "k", null)).as("a dispatch naming no life").isFalse();

    read("k#1@40", "started 12 executor-2"); // read back after the fence: beaten
    read("k#1@41", "started 13 executor-2"); // the next life: not fenced
    read("j#1@40", "started 14 executor-2"); // another key

    assertThat(journal.beaten(P0, "k#1@40")).isTrue();
    assertThat(journal.beaten(P0, "k#1@41")).isFalse();
    assertThat(journal.beaten(P0, "j#1@40")).isFalse();
    assertThat(journal.unanswered(P0)).as("a fence is no start").isEqualTo(3);
  }

  @Test
  void shouldLetAStartRunWhenItsFenceComesAfterIt() {
    read("k#1@40", "started 12 executor-2");
    read(AttemptJournal.fenceKey("k", 40), AttemptJournal.fenceValue(12, "reconciler"));

    assertThat(journal.beaten(P0, "k#1@40")).as("the releaser saw this start").isFalse();
    assertThat(journal.fenced(P0, "k", 40L)).as("later dispatches of the life").isTrue();
  }

  @Test
  void shouldTombstoneAFenceOnceTheCommittedOffsetPassesTheLifesLastDispatchAndNeverRestartIt() {
    String fence = AttemptJournal.fenceKey("k", 40);
    read(fence, AttemptJournal.fenceValue(12, "reconciler"));

    journal.reassertStarts(List.of(P0));
    assertThat(journal.records()).as("a fence is not written again as a start").isEmpty();
    assertThat(confirmThenCommit(12)).as("its last dispatch may still be read").isEmpty();
    assertThat(confirmThenCommit(13))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo(fence);
              assertThat(r.value()).isNull();
            });
    assertThat(journal.fenced(P0, "k", 40L)).isFalse();
  }

  @Test
  void shouldRefuseAReleaseOnlyWhileAStartOfTheLifeBeforeTheFenceIsUnanswered() {
    assertThat(AttemptJournal.releasable(List.of(), "k", 40))
        .isEqualTo(AttemptJournal.Release.FENCED);
    assertThat(AttemptJournal.releasable(List.of(rec("k#1@40", "started 3 e")), "k", 40))
        .isEqualTo(AttemptJournal.Release.STARTED);
    assertThat(
            AttemptJournal.releasable(
                List.of(rec("k#1@40", "started 3 e"), rec("k#1@40", "answered 3 effect")), "k", 40))
        .as("answered: its effect ended before the fence")
        .isEqualTo(AttemptJournal.Release.FENCED);
    assertThat(
            AttemptJournal.releasable(
                List.of(rec("k#1@40", "started 3 e"), rec("k#1@40", null)), "k", 40))
        .isEqualTo(AttemptJournal.Release.FENCED);
    assertThat(AttemptJournal.releasable(List.of(rec("k#2@40", "started 9 e")), "k", 40))
        .as("any attempt of the life")
        .isEqualTo(AttemptJournal.Release.STARTED);
    assertThat(AttemptJournal.releasable(List.of(rec("k#1", "started 3 e")), "k", 40))
        .as("a marker naming no life, read the safe way")
        .isEqualTo(AttemptJournal.Release.STARTED);
    assertThat(
            AttemptJournal.releasable(
                List.of(
                    rec("k#1@39", "started 3 e"),
                    rec("kk#1@40", "started 4 e"),
                    rec(AttemptJournal.fenceKey("k", 40), AttemptJournal.fenceValue(3, "r"))),
                "k",
                40))
        .as("another life, another key, an earlier fence")
        .isEqualTo(AttemptJournal.Release.FENCED);
  }

  @Test
  void shouldNotCommitAgainAFenceReadPastTheCommittedRecords() {
    var uncertain =
        List.of(
            new ConsumerRecord<>(
                JOURNAL.topic(),
                0,
                5L,
                AttemptJournal.fenceKey("k", 40).getBytes(StandardCharsets.UTF_8),
                AttemptJournal.fenceValue(3, "r").getBytes(StandardCharsets.UTF_8)));
    assertThat(journal.restarts(JOURNAL, uncertain)).isEmpty();
  }
}
