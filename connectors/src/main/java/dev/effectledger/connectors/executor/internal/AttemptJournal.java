package dev.effectledger.connectors.executor.internal;

import static dev.effectledger.connectors.executor.internal.JournalFormat.FENCED;
import static dev.effectledger.connectors.executor.internal.JournalFormat.FENCE_SUFFIX;
import static dev.effectledger.connectors.executor.internal.JournalFormat.fenceOfMarker;
import static dev.effectledger.connectors.executor.internal.JournalFormat.ofLife;
import static dev.effectledger.connectors.executor.internal.JournalFormat.parse;

import dev.effectledger.connectors.executor.internal.JournalFormat.Marker;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The attempt journal of the dispatch partitions an executor owns: which effects on a connector
 * that cannot take a repeat (the downstream ignores keys and is not transactional) were started,
 * and which of those were answered, as committed to {@code tool-attempts.<lane>}. It is the
 * executor's copy of that compacted topic, changed only by transactions that commit.
 *
 * <h2>The invariant</h2>
 *
 * For every dispatch at offset {@code o} of partition {@code p} whose effect may have happened, a
 * marker is live for as long as the group's committed offset of {@code p} is at or below {@code o},
 * that is for as long as the dispatch can be delivered again:
 *
 * <ol>
 *   <li>a <em>started</em> marker is committed, with the consumer offsets and the group's
 *       generation (so a fenced executor cannot start anything), and read back as committed (the
 *       journal partition's last stable offset has passed it, {@link JournalReader#settled}),
 *       before the effect runs;
 *   <li>the outcome's transaction turns it into an <em>answered</em> marker, not a tombstone:
 *       effects finish out of order and a partition's offsets commit only at its low watermark, so
 *       a dispatch answered above the watermark is still delivered again after a crash;
 *   <li>its tombstone goes into a transaction <em>after</em> the group's committed offset, read
 *       back from the group coordinator ({@link #confirmed}), is above the dispatch: nobody reads
 *       the dispatch again then.
 * </ol>
 *
 * <p>Why not tombstone in the transaction that moves the offset past the dispatch, all or nothing
 * with it: a Kafka transaction is not always all or nothing. A transaction coordinator that
 * completes a commit after a broker restart skips the partitions whose leader it cannot find at
 * that moment, taking them for deleted topics; their records stay pending until the producer's next
 * transaction on that partition ends, and take its fate. A chaos run saw it (docs/chaos.md, "An
 * answered dispatch run again"): the outcome and the marker's tombstone committed, the offsets were
 * aborted by the next transaction, and the dispatch, read again with no marker, ran twice. A marker
 * that outlives its dispatch is harmless; one that dies before it is not. The same skip can leave a
 * start marker pending after its commit was reported, to be aborted with the producer's next
 * transaction there; hence the read back before the effect runs.
 *
 * <p>A dispatch read again meets one of three {@link Verdict verdicts}: no marker, run it; answered
 * at this very offset, its outcome is committed, so nothing is done again; anything else, it may
 * have acted, so it is answered from a lookup or as ambiguous, never run again.
 *
 * <p>Two dispatches can share a marker (the ledger under at-least-once can emit one attempt twice).
 * A marker therefore keeps the highest offset of the dispatches it covers, and only a marker for
 * exactly one answered dispatch says "answered". A key the ledger released (no effect found, or an
 * operator's decision) and that is sent again is dispatched as attempt 1 of its next life: the
 * marker names the life, so the earlier life's marker, which outlives its dispatch for about a
 * second, does not take the next life for a redelivery (ConsoleSecurityIT met that in CI on
 * 2026-11-26: the next life was answered from a lookup of the earlier life's effect instead of
 * run). A dispatch of a ledger that names no life has a marker without one, and a dispatch that
 * names its life also meets the marker without one (written by an executor of an earlier release
 * for the same attempt), read the safe way.
 *
 * <p>Marker keys are {@code <effect key>#<attempt>@<incarnation>} ({@code <effect key>#<attempt>}
 * for a dispatch that names no life); values are {@code started <offset> <owner>} or {@code
 * answered <offset> effect|none}. A value written by the first release (the owner alone) reads as
 * started at an unknown offset and is never tombstoned by an offset.
 *
 * <h2>Fences: a released life never runs</h2>
 *
 * Whoever releases a held key (the reconciler's "no effect", an operator) first writes a
 * <em>fence</em> for the key's life into the same journal partition ({@link #fenceKey}: {@code
 * <effect key>@<incarnation>!fence}, value {@code fenced <offset> <by>}, where {@code <offset>} is
 * the last dispatch offset the life can have: the dispatch partition's end when the fence was
 * written, less one). The partition's order is the arbiter between a fence and a start marker of
 * that life: the releaser reads the partition back up to its fence and releases only when no start
 * of the life before it is still unanswered ({@link #releasable}); the executor, once its start
 * markers are committed, reads the partition up to them ({@link JournalReader#readNew}) and does
 * not run a start that a fence of its life precedes ({@link #beaten}), answering it {@code
 * SUPERSEDED} instead. A dispatch of a fenced life read afterwards is answered the same way without
 * a start. Both sides read the same committed records in the same order, so exactly one of them
 * wins. A fence is tombstoned, like a marker, once the group's committed offset has passed its
 * offset. Used by the poll thread only.
 *
 * <p>Its parts: each partition's committed markers are a {@link PartitionMarkers}, the open
 * transaction's changes a {@link StagedMarkers}, and the record values a {@link JournalFormat}.
 */
public final class AttemptJournal {

  /** What a dispatch read from a journalled lane must do. */
  public enum Verdict {
    /** No marker: its effect never started. Journal the start, then run it. */
    RUN,
    /** Answered at this very offset: its outcome is committed; nothing is done again. */
    ANSWERED,
    /** Started, or covered by a marker of another dispatch: it may have acted. */
    STARTED_BEFORE
  }

  private final Map<TopicPartition, PartitionMarkers> partitions = new HashMap<>();

  /** What the open transaction changes. */
  private final StagedMarkers staged;

  /** A journal whose start markers name {@code owner} (the executor's transactional id). */
  public AttemptJournal(String owner) {
    this.staged = new StagedMarkers(owner, partitions);
  }

  /** The marker of attempt {@code attempt} of a dispatch that names no life. */
  public static String marker(String effectKey, int attempt) {
    return effectKey + "#" + attempt;
  }

  /**
   * The marker of attempt {@code attempt} of the key's life {@code incarnation} ({@code <effect
   * key>#<attempt>@<incarnation>}); without a life, as {@link #marker(String, int)}.
   */
  public static String marker(String effectKey, int attempt, Long incarnation) {
    return incarnation == null
        ? marker(effectKey, attempt)
        : marker(effectKey, attempt) + "@" + incarnation;
  }

  /** The key of the fence of the life {@code incarnation} of {@code effectKey}. */
  public static String fenceKey(String effectKey, long incarnation) {
    return effectKey + "@" + incarnation + FENCE_SUFFIX;
  }

  /** The value of a fence whose life's dispatches are all at or below {@code lastDispatch}. */
  public static String fenceValue(long lastDispatch, String by) {
    return FENCED + " " + lastDispatch + " " + by.replace(' ', '_');
  }

  /** True when {@code value} (a journal record's) is a fence. */
  public static boolean isFence(String value) {
    return value != null && value.startsWith(FENCED + " ");
  }

  /** What a releaser found in the journal partition, read back up to its own fence. */
  public enum Release {
    /** No start of the life before the fence is unanswered: no dispatch of it can act any more. */
    FENCED,
    /** A start of the life precedes the fence and is not answered: its effect may be under way. */
    STARTED
  }

  /**
   * Decides for a releaser from the committed records of the journal partition before its fence
   * ({@code before}, in partition order; null values are tombstones): {@link Release#STARTED} when
   * the latest record of some start marker of the life {@code incarnation} of {@code effectKey} (or
   * of a marker of that effect key naming no life) says started, {@link Release#FENCED} otherwise.
   * An answered marker's effect ended before its answer committed, and a tombstone comes only after
   * an answer, so neither is in the way.
   */
  public static Release releasable(
      List<Map.Entry<String, String>> before, String effectKey, long incarnation) {
    Map<String, String> latest = new HashMap<>();
    for (Map.Entry<String, String> record : before) {
      if (ofLife(record.getKey(), effectKey, incarnation)) {
        latest.put(record.getKey(), record.getValue());
      }
    }
    boolean started =
        latest.values().stream().anyMatch(v -> v != null && !isFence(v) && !parse(v).answered());
    return started ? Release.STARTED : Release.FENCED;
  }

  public static String journalTopic(String lane) {
    return Topics.attempts(lane);
  }

  /** The journal topic partition of a dispatch partition. */
  public static TopicPartition journalPartition(TopicPartition dispatch) {
    return new TopicPartition(
        Topics.attempts(Topics.laneOfDispatch(dispatch.topic())), dispatch.partition());
  }

  /** The dispatch partition a journal partition belongs to. */
  public static TopicPartition dispatchPartition(TopicPartition journal) {
    return new TopicPartition(
        Topics.dispatch(Topics.laneOfAttempts(journal.topic())), journal.partition());
  }

  /** What the dispatch at {@code offset} of {@code dispatch} with marker {@code key} must do. */
  public Verdict verdict(TopicPartition dispatch, String key, long offset) {
    Marker marker = current(dispatch, key);
    if (marker == null) {
      return Verdict.RUN;
    }
    if (marker.answered() && marker.offset() == offset) {
      return Verdict.ANSWERED;
    }
    if (marker.answered() && marker.noEffect()) {
      return Verdict.RUN; // the dispatch it covers provably did nothing
    }
    return Verdict.STARTED_BEFORE;
  }

  /**
   * True when a fence of the dispatch's life is committed in its partition, as far as this executor
   * has read it: the life was released, and no dispatch of it may start.
   */
  public boolean fenced(TopicPartition dispatch, String effectKey, Long incarnation) {
    if (incarnation == null) {
      return false;
    }
    PartitionMarkers markers = partitions.get(dispatch);
    return markers != null && markers.byKey.containsKey(fenceKey(effectKey, incarnation));
  }

  /**
   * True when the committed start marker {@code marker} was preceded in its partition by a fence of
   * its life, as read back by {@link JournalReader#readNew}: its effect must not run (the releaser
   * read the partition up to its fence, saw no start, and released the key).
   */
  public boolean beaten(TopicPartition dispatch, String marker) {
    PartitionMarkers markers = partitions.get(dispatch);
    return markers != null && markers.beaten.contains(marker);
  }

  /** Stages a start marker; the effect may run once the transaction carrying it commits. */
  public void start(TopicPartition dispatch, String key, long offset) {
    staged.start(dispatch, key, offset);
  }

  /** Records that the dispatch's outcome goes into the next transaction. */
  public void answer(TopicPartition dispatch, String key, long offset, boolean noEffect) {
    staged.answer(dispatch, key, offset, noEffect);
  }

  /**
   * The journal records of the next transaction: the start markers staged, the answers recorded
   * since the last transaction, and the tombstones {@link #confirmed} staged. One record per
   * marker, its final state in the transaction.
   */
  public List<ProducerRecord<byte[], byte[]>> records() {
    return staged.records();
  }

  /** True when the next transaction has journal records to carry. */
  public boolean hasStaged() {
    return staged.hasStaged();
  }

  /**
   * The dispatch partitions with a committed marker that an offset can pass: those whose offsets
   * {@link #confirmed} is worth asking the group for.
   */
  public Set<TopicPartition> sweepable() {
    Set<TopicPartition> sweepable = new HashSet<>();
    partitions.forEach(
        (tp, markers) -> {
          if (!markers.byOffset.isEmpty()) {
            sweepable.add(tp);
          }
        });
    return sweepable;
  }

  /**
   * Stages, for the next transaction, a tombstone for every marker below its partition's offset in
   * {@code committed}: offsets read back from the group coordinator once no transaction held them
   * pending, so no dispatch below them is read again. Never give it offsets this executor only
   * sent.
   */
  public void confirmed(Map<TopicPartition, Long> committed) {
    staged.confirmed(committed);
  }

  /**
   * Stages again, as they are, the committed markers of {@code dispatchPartitions} that are not
   * answered (those the last transaction started among them): for a transaction whose commit was
   * reported but whose markers cannot be read as committed (see {@link JournalReader#settled}).
   * Writing them again is harmless, and the next transaction's commit marker ends the first one's
   * records too. A marker with a change staged keeps that change.
   */
  public void reassertStarts(Collection<TopicPartition> dispatchPartitions) {
    staged.reassertStarts(dispatchPartitions);
  }

  /** The transaction carrying the staged records committed. */
  public void committed() {
    staged.committed();
  }

  /** The transaction aborted, or will not be: nothing staged or answered happened. */
  public void aborted() {
    staged.aborted();
  }

  /** Starts tracking a newly assigned partition, empty until its committed records are applied. */
  public void assigned(TopicPartition dispatch) {
    partitions.put(dispatch, new PartitionMarkers());
  }

  /** Applies one committed record of the journal topic, read back from it. */
  public void apply(TopicPartition journal, byte[] key, byte[] value) {
    PartitionMarkers markers = partitions.get(dispatchPartition(journal));
    if (markers == null) {
      return;
    }
    String marker = new String(key, StandardCharsets.UTF_8);
    if (value == null) {
      markers.remove(marker);
      return;
    }
    Marker read = parse(new String(value, StandardCharsets.UTF_8));
    boolean wasBeaten = markers.beaten.contains(marker);
    markers.put(marker, read);
    if (read.fence() || read.answered()) {
      return;
    }
    String fence = fenceOfMarker(marker);
    if (wasBeaten || (fence != null && markers.byKey.containsKey(fence))) {
      markers.beaten.add(marker); // a fence of its life came first: this start must not run
    }
  }

  /**
   * The records that commit again, as started, the markers in {@code uncertain}: records of the
   * journal partition {@code journal} read past its committed ones, from a transaction that may
   * never end (a hanging one) or from later transactions that may have aborted. Whether their
   * transaction committed is unknown, so each marker written there is read the safe way: its effect
   * may have started. Answered markers come back as started (their outcome may be lost), tombstones
   * are ignored (the marker they remove may still be needed), and each marker keeps the highest
   * offset of the records and the committed marker it merges with.
   */
  public List<ProducerRecord<byte[], byte[]>> restarts(
      TopicPartition journal, List<ConsumerRecord<byte[], byte[]>> uncertain) {
    return staged.restarts(journal, uncertain);
  }

  /** Committed markers of the partition whose dispatch was started and not answered. */
  public int unanswered(TopicPartition dispatch) {
    PartitionMarkers markers = partitions.get(dispatch);
    return markers == null
        ? 0
        : (int) markers.byKey.values().stream().filter(m -> !m.answered() && !m.fence()).count();
  }

  /** Committed markers of the partition, answered or not. */
  public int live(TopicPartition dispatch) {
    PartitionMarkers markers = partitions.get(dispatch);
    return markers == null ? 0 : markers.byKey.size();
  }

  public void forget(Collection<TopicPartition> dispatchPartitions) {
    dispatchPartitions.forEach(partitions::remove);
    staged.forget(dispatchPartitions);
  }

  private Marker current(TopicPartition dispatch, String key) {
    return staged.current(dispatch, key);
  }

  /**
   * The journal's whole state, canonical (sorted): two journals with equal strings answer every
   * question alike. For logs and for the protocol's model-based test, which compares states.
   */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder("AttemptJournal{");
    new TreeMap<>(
            partitions.entrySet().stream()
                .collect(
                    java.util.stream.Collectors.toMap(
                        e -> e.getKey().toString(), e -> e.getValue())))
        .forEach(
            (tp, markers) ->
                out.append(tp)
                    .append('=')
                    .append(new TreeMap<>(markers.byKey))
                    .append(" beaten=")
                    .append(new java.util.TreeSet<>(markers.beaten))
                    .append(';'));
    staged.describe(out);
    return out.append('}').toString();
  }
}
