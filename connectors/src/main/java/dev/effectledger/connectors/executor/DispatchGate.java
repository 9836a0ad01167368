package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.connectors.executor.internal.Finished;
import dev.effectledger.connectors.executor.internal.KeyOrderedRunner;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;

/**
 * What each dispatch read does: run at once (a connector that can take a repeat), journal its start
 * first and run it once that commits, answer it from a lookup (started before), skip it (its
 * outcome is committed), or dead-letter it (undecodable). Used by the poll thread only; what it
 * starts ends up in the {@code finished} queue.
 *
 * <p>A connector whose downstream cannot take a repeat (it ignores keys and is not transactional)
 * is never run twice for one dispatch: the {@link AttemptJournal} records each start before the
 * effect and keeps it until the partition's committed offset has passed the dispatch, so a
 * redelivered dispatch that was started is answered from a lookup or as AMBIGUOUS (which the ledger
 * holds for the reconciler), and one whose outcome is already committed is skipped. On such a
 * connector only the first attempt of a key runs: a re-dispatch follows an attempt that may have
 * acted, and is answered the same way.
 *
 * <p>A dispatch of a life that a releaser fenced ({@link AttemptJournal#fenced}), or whose start a
 * fence preceded in the journal ({@link AttemptJournal#beaten}), is answered {@code SUPERSEDED}
 * without calling the downstream: its key was released on the evidence that nothing had started.
 */
final class DispatchGate {

  /** A dispatch whose start must be journalled before its effect runs. */
  private record Journalled(
      TopicPartition tp, long offset, int epoch, Dispatch dispatch, String marker) {}

  private final RegistryAvroSerde<Dispatch> dispatches;
  private final EffectPerformer performer;

  /** Null when no tool on the executor's lanes needs start markers. */
  private final AttemptJournal journal;

  private volatile LaneTools tools;
  private final KeyOrderedRunner workers;
  private final Queue<Finished> finished;
  private final List<Journalled> toJournal = new ArrayList<>();

  DispatchGate(
      RegistryAvroSerde<Dispatch> dispatches,
      EffectPerformer performer,
      AttemptJournal journal,
      LaneTools tools,
      KeyOrderedRunner workers,
      Queue<Finished> finished) {
    this.dispatches = dispatches;
    this.performer = performer;
    this.journal = journal;
    this.tools = tools;
    this.workers = workers;
    this.finished = finished;
  }

  /** Decides for {@code record}, read while its partition was at {@code epoch}. */
  void read(ConsumerRecord<byte[], byte[]> record, int epoch) {
    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
    Dispatch dispatch;
    try {
      dispatch = dispatches.deserialize(record.topic(), record.value());
      if (dispatch == null) {
        throw new SerializationException("dispatch record has no value");
      }
    } catch (SerializationException e) {
      finished.add(
          Finished.unjournalled(
              tp, record.offset(), epoch, List.of(EffectPerformer.undecodable(record, e))));
      return;
    }
    if (journal == null || !tools.needsJournal(dispatch.getTool())) {
      workers.run(
          dispatch.getEffectKey(),
          () ->
              finished.add(
                  Finished.unjournalled(
                      tp, record.offset(), epoch, performer.perform(dispatch).records())));
      return;
    }
    String marker =
        AttemptJournal.marker(
            dispatch.getEffectKey(), dispatch.getAttempt(), dispatch.getIncarnation());
    switch (decide(journal, tp, dispatch, record.offset())) {
      case SUPERSEDED -> // its life was released: it never starts
          finished.add(
              Finished.unjournalled(
                  tp, record.offset(), epoch, performer.superseded(dispatch).records()));
      case RUN -> {
        journal.start(tp, marker, record.offset());
        toJournal.add(new Journalled(tp, record.offset(), epoch, dispatch, marker));
      }
      case ANSWERED -> finished.add(Finished.unjournalled(tp, record.offset(), epoch, List.of()));
      case STARTED_BEFORE ->
          workers.run(
              dispatch.getEffectKey(),
              () ->
                  finished.add(
                      Finished.journalled(
                          tp, record.offset(), epoch, marker, performer.startedBefore(dispatch))));
    }
  }

  /** What a dispatch read from a journalled lane must do. */
  enum Decision {
    /** Its key's life was released (fenced): answered SUPERSEDED, never started. */
    SUPERSEDED,
    /** No marker: journal its start, then run it once that commits and no fence came first. */
    RUN,
    /** Its outcome is committed: nothing to do. */
    ANSWERED,
    /** It may have acted: answered from a lookup or held as ambiguous, never run. */
    STARTED_BEFORE
  }

  /**
   * The decision for the dispatch at {@code offset} of {@code tp} on a journalled lane, from what
   * the journal holds; the whole rule, kept apart from the I/O so the protocol's model-based test
   * ({@code EffectProtocolExplorationTest}) runs this very code.
   */
  static Decision decide(
      AttemptJournal journal, TopicPartition tp, Dispatch dispatch, long offset) {
    String marker =
        AttemptJournal.marker(
            dispatch.getEffectKey(), dispatch.getAttempt(), dispatch.getIncarnation());
    AttemptJournal.Verdict verdict = journal.verdict(tp, marker, offset);
    if (verdict == AttemptJournal.Verdict.RUN && dispatch.getIncarnation() != null) {
      // a marker for this attempt written before markers named their life: read the safe way
      verdict =
          journal.verdict(
              tp, AttemptJournal.marker(dispatch.getEffectKey(), dispatch.getAttempt()), offset);
    }
    if (verdict == AttemptJournal.Verdict.RUN && dispatch.getAttempt() > 1) {
      // a re-dispatch follows an attempt that may have acted
      verdict = AttemptJournal.Verdict.STARTED_BEFORE;
    }
    if (verdict == AttemptJournal.Verdict.RUN
        && journal.fenced(tp, dispatch.getEffectKey(), dispatch.getIncarnation())) {
      // its life was released before it started. One that started before the fence is answered
      // from a lookup instead, which answers its marker: a releaser waits for that answer.
      return Decision.SUPERSEDED;
    }
    return switch (verdict) {
      case RUN -> Decision.RUN;
      case ANSWERED -> Decision.ANSWERED;
      case STARTED_BEFORE -> Decision.STARTED_BEFORE;
    };
  }

  /**
   * True when a start committed for {@code marker} may run its effect: no fence of its life came
   * before it in the journal partition, as read back after the start committed.
   */
  static boolean mayRun(AttemptJournal journal, TopicPartition tp, String marker) {
    return !journal.beaten(tp, marker);
  }

  /**
   * Commits the start markers staged since the last call ({@code commit} is given their partitions;
   * with the offsets, so a fenced executor fails there) and only then runs them. If the commit
   * aborts they are dropped: they are read and journalled again.
   */
  void startJournalled(Predicate<Set<TopicPartition>> commit) {
    if (toJournal.isEmpty()) {
      return;
    }
    List<Journalled> starting = List.copyOf(toJournal);
    toJournal.clear();
    Set<TopicPartition> partitions = new HashSet<>();
    starting.forEach(j -> partitions.add(j.tp()));
    if (!commit.test(partitions)) {
      return;
    }
    for (Journalled j : starting) {
      if (!mayRun(journal, j.tp(), j.marker())) {
        // a fence of its life precedes its start in the journal: the releaser saw no start
        finished.add(
            Finished.journalled(
                j.tp(), j.offset(), j.epoch(), j.marker(), performer.superseded(j.dispatch())));
        continue;
      }
      workers.run(
          j.dispatch().getEffectKey(),
          () ->
              finished.add(
                  Finished.journalled(
                      j.tp(), j.offset(), j.epoch(), j.marker(), performer.perform(j.dispatch()))));
    }
  }

  /** The tools of a policy applied live, from the next dispatch on. */
  void use(LaneTools next) {
    this.tools = next;
  }
}
