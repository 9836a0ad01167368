package dev.effectledger.connectors.executor.internal;

import static dev.effectledger.connectors.executor.internal.JournalFormat.parse;

import dev.effectledger.connectors.executor.internal.JournalFormat.Marker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The attempt journal's open transaction: the start markers and tombstones staged, by dispatch
 * partition and key, and the answers recorded, which become the journal records of the next
 * transaction; applied to the committed markers when it commits, dropped when it aborts. Also the
 * records that commit uncertain markers again as started. Shares the committed markers with its
 * {@link AttemptJournal}. Used by the poll thread only.
 */
final class StagedMarkers {

  /** A dispatch whose outcome goes into the next transaction. */
  private record Answer(TopicPartition dispatch, String key, long offset, boolean noEffect) {}

  /** The owner start markers name (the executor's transactional id). */
  private final String owner;

  /** The journal's committed markers, by dispatch partition: its {@link AttemptJournal}'s. */
  private final Map<TopicPartition, PartitionMarkers> partitions;

  /** Changes in the open transaction, by partition and key; an empty value is a tombstone. */
  private final Map<TopicPartition, Map<String, Optional<Marker>>> staged = new LinkedHashMap<>();

  private final List<Answer> answers = new ArrayList<>();

  StagedMarkers(String owner, Map<TopicPartition, PartitionMarkers> partitions) {
    this.owner = owner;
    this.partitions = partitions;
  }

  /** See {@link AttemptJournal#start}. */
  void start(TopicPartition dispatch, String key, long offset) {
    Marker current = current(dispatch, key);
    stage(
        dispatch,
        key,
        new Marker(current == null ? offset : Math.max(offset, current.offset()), false, false));
  }

  /** See {@link AttemptJournal#answer}. */
  void answer(TopicPartition dispatch, String key, long offset, boolean noEffect) {
    answers.add(new Answer(dispatch, key, offset, noEffect));
  }

  /** See {@link AttemptJournal#records}. */
  List<ProducerRecord<byte[], byte[]>> records() {
    for (Answer a : answers) {
      Marker current = current(a.dispatch(), a.key());
      stage(
          a.dispatch(),
          a.key(),
          current == null || current.offset() == a.offset()
              ? new Marker(a.offset(), true, a.noEffect())
              : new Marker(Math.max(a.offset(), current.offset()), false, false));
    }
    answers.clear();
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    staged.forEach(
        (tp, changes) ->
            changes.forEach(
                (key, marker) -> records.add(JournalFormat.record(tp, key, marker, owner))));
    return records;
  }

  /** See {@link AttemptJournal#hasStaged}. */
  boolean hasStaged() {
    return !answers.isEmpty() || staged.values().stream().anyMatch(c -> !c.isEmpty());
  }

  /** See {@link AttemptJournal#confirmed}. */
  void confirmed(Map<TopicPartition, Long> committed) {
    committed.forEach(
        (tp, offset) -> {
          PartitionMarkers markers = partitions.get(tp);
          if (markers == null) {
            return;
          }
          List<String> below = new ArrayList<>();
          markers.byOffset.headMap(offset).values().forEach(below::addAll);
          for (String key : below) {
            Marker current = current(tp, key);
            if (current != null && current.offset() >= 0 && current.offset() < offset) {
              staged.computeIfAbsent(tp, t -> new LinkedHashMap<>()).put(key, Optional.empty());
            }
          }
        });
  }

  /** See {@link AttemptJournal#reassertStarts}. */
  void reassertStarts(Collection<TopicPartition> dispatchPartitions) {
    for (TopicPartition tp : dispatchPartitions) {
      PartitionMarkers markers = partitions.get(tp);
      Map<String, Optional<Marker>> changes = staged.getOrDefault(tp, Map.of());
      if (markers != null) {
        markers.byKey.forEach(
            (key, marker) -> {
              if (!marker.answered() && !marker.fence() && !changes.containsKey(key)) {
                stage(tp, key, marker);
              }
            });
      }
    }
  }

  /** See {@link AttemptJournal#committed}. */
  void committed() {
    staged.forEach(
        (tp, changes) -> {
          PartitionMarkers markers = partitions.get(tp);
          if (markers != null) {
            changes.forEach(
                (key, marker) ->
                    marker.ifPresentOrElse(m -> markers.put(key, m), () -> markers.remove(key)));
          }
        });
    staged.clear();
  }

  /** See {@link AttemptJournal#aborted}. */
  void aborted() {
    staged.clear();
    answers.clear();
  }

  /** See {@link AttemptJournal#restarts}. */
  List<ProducerRecord<byte[], byte[]>> restarts(
      TopicPartition journal, List<ConsumerRecord<byte[], byte[]>> uncertain) {
    TopicPartition dispatch = AttemptJournal.dispatchPartition(journal);
    Map<String, Long> offsets = new LinkedHashMap<>();
    for (ConsumerRecord<byte[], byte[]> record : uncertain) {
      if (record.value() == null
          || AttemptJournal.isFence(new String(record.value(), StandardCharsets.UTF_8))) {
        continue; // fences are written outside transactions: an uncertain record is none
      }
      String key = new String(record.key(), StandardCharsets.UTF_8);
      long offset = parse(new String(record.value(), StandardCharsets.UTF_8)).offset();
      Marker committed = current(dispatch, key);
      offsets.merge(
          key, committed == null ? offset : Math.max(offset, committed.offset()), Math::max);
    }
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    offsets.forEach(
        (key, offset) ->
            records.add(
                JournalFormat.record(
                    dispatch, key, Optional.of(new Marker(offset, false, false)), owner)));
    return records;
  }

  /** Drops what is staged and answered for {@code dispatchPartitions}. */
  void forget(Collection<TopicPartition> dispatchPartitions) {
    dispatchPartitions.forEach(staged::remove);
    answers.removeIf(a -> dispatchPartitions.contains(a.dispatch()));
  }

  /** The marker {@code key} has in the open transaction: staged, else committed. */
  Marker current(TopicPartition dispatch, String key) {
    Map<String, Optional<Marker>> changes = staged.get(dispatch);
    if (changes != null && changes.containsKey(key)) {
      return changes.get(key).orElse(null);
    }
    PartitionMarkers markers = partitions.get(dispatch);
    return markers == null ? null : markers.byKey.get(key);
  }

  private void stage(TopicPartition dispatch, String key, Marker marker) {
    staged.computeIfAbsent(dispatch, tp -> new LinkedHashMap<>()).put(key, Optional.of(marker));
  }

  /** Appends what is staged and answered to the journal's canonical state. */
  void describe(StringBuilder out) {
    staged.forEach(
        (tp, changes) ->
            out.append(" staged ").append(tp).append('=').append(new TreeMap<>(changes)));
    answers.forEach(a -> out.append(" answer ").append(a));
  }
}
