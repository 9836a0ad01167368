package dev.effectledger.connectors.executor.sim;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A read_committed {@link MockConsumer} that reads a {@link SimulatedCluster}'s logs from its
 * positions, so a seek re-reads, and whose committed offsets are the cluster's: what a real
 * consumer of a group sees after a crash or a rewind.
 */
public final class LogConsumer extends MockConsumer<byte[], byte[]> {

  private final SimulatedCluster cluster;

  public LogConsumer(SimulatedCluster cluster) {
    super("earliest");
    this.cluster = cluster;
  }

  /** A group rebalance giving this consumer {@code partitions}; call it from a poll task. */
  public void assignFromGroup(Collection<TopicPartition> partitions) {
    Map<TopicPartition, Long> beginnings = new HashMap<>();
    partitions.forEach(tp -> beginnings.put(tp, 0L));
    updateBeginningOffsets(beginnings);
    commitSync(cluster.committed(Set.copyOf(partitions)));
    rebalance(partitions);
  }

  @Override
  public synchronized Map<TopicPartition, OffsetAndMetadata> committed(
      Set<TopicPartition> partitions) {
    return cluster.committed(partitions);
  }

  @Override
  public synchronized Map<TopicPartition, OffsetAndMetadata> committed(
      Set<TopicPartition> partitions, Duration timeout) {
    return cluster.committed(partitions);
  }

  @Override
  public synchronized void seekToBeginning(Collection<TopicPartition> partitions) {
    partitions.forEach(tp -> seek(tp, 0));
  }

  /** A read_committed consumer's end offsets: each partition's last stable offset. */
  @Override
  public synchronized Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions) {
    Map<TopicPartition, Long> ends = new HashMap<>();
    partitions.forEach(tp -> ends.put(tp, cluster.stableEnd(tp)));
    return ends;
  }

  @Override
  public synchronized Map<TopicPartition, Long> endOffsets(
      Collection<TopicPartition> partitions, Duration timeout) {
    return endOffsets(partitions);
  }

  @Override
  public synchronized ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
    super.poll(Duration.ZERO); // runs poll tasks and rebalances, settles positions
    Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> out = new HashMap<>();
    for (TopicPartition tp : assignment()) {
      if (paused().contains(tp)) {
        continue;
      }
      SimulatedCluster.Read read = cluster.read(tp, position(tp), 500);
      if (!read.records().isEmpty()) {
        out.put(tp, new ArrayList<>(read.records()));
      }
      seek(tp, read.next());
    }
    if (out.isEmpty() && !timeout.isZero()) {
      try {
        Thread.sleep(Math.min(timeout.toMillis(), 5)); // an idle poll waits, as a real one does
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return new ConsumerRecords<>(out, Map.of());
  }
}
