package dev.effectledger.connectors.executor.internal;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Per partition, the offsets handed out and not yet finished. What may be committed is the low
 * watermark: the first unfinished offset, or one past the last seen when all are finished, so a
 * crash redelivers every record whose outcome was not committed. Used by the poll thread only.
 */
public final class OffsetTracker {

  private static final class Partition {
    final TreeSet<Long> pending = new TreeSet<>();
    long highestSeen = -1;
    long committed = -1;

    long watermark() {
      return pending.isEmpty() ? highestSeen + 1 : pending.first();
    }
  }

  private final Map<TopicPartition, Partition> partitions = new HashMap<>();

  public void started(TopicPartition tp, long offset) {
    Partition p = partitions.computeIfAbsent(tp, t -> new Partition());
    if (p.highestSeen < 0) {
      p.committed = offset; // where reading began: nothing to commit until it moves
    }
    p.pending.add(offset);
    p.highestSeen = Math.max(p.highestSeen, offset);
  }

  /** Marks an offset finished; false when the partition is no longer tracked. */
  public boolean finished(TopicPartition tp, long offset) {
    Partition p = partitions.get(tp);
    return p != null && p.pending.remove(offset);
  }

  public int pending() {
    return partitions.values().stream().mapToInt(p -> p.pending.size()).sum();
  }

  public int pending(Collection<TopicPartition> tps) {
    return tps.stream()
        .map(partitions::get)
        .filter(p -> p != null)
        .mapToInt(p -> p.pending.size())
        .sum();
  }

  /** Where reading would resume for {@code tp} if the executor stopped now. */
  public long watermark(TopicPartition tp) {
    Partition p = partitions.get(tp);
    if (p == null) {
      throw new IllegalStateException(tp + " is not tracked");
    }
    return p.watermark();
  }

  /** Offsets to commit: each partition's watermark, where it moved since the last commit. */
  public Map<TopicPartition, OffsetAndMetadata> committable() {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    partitions.forEach(
        (tp, p) -> {
          long watermark = p.watermark();
          if (p.highestSeen >= 0 && watermark > p.committed) {
            offsets.put(tp, new OffsetAndMetadata(watermark));
          }
        });
    return offsets;
  }

  /**
   * Every tracked partition's watermark, moved or not: what a transaction commits to be fenced by
   * the group.
   */
  public Map<TopicPartition, OffsetAndMetadata> watermarks() {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    partitions.forEach((tp, p) -> offsets.put(tp, new OffsetAndMetadata(p.watermark())));
    return offsets;
  }

  public void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
    offsets.forEach(
        (tp, o) -> {
          Partition p = partitions.get(tp);
          if (p != null) {
            p.committed = o.offset();
          }
        });
  }

  public void forget(Collection<TopicPartition> tps) {
    tps.forEach(partitions::remove);
  }

  public void forgetAll() {
    partitions.clear();
  }
}
