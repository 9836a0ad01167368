package dev.effectledger.connectors.executor.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What a Kafka cluster keeps for the executor's seam tests: the committed records of each
 * partition, in order with their offsets, and one group's committed offsets. {@link LogProducer}
 * appends a transaction's records and offsets only when it commits; {@link LogConsumer} reads from
 * here, so a consumer started after a "crash" sees exactly what was committed.
 */
public final class SimulatedCluster {

  private final Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> logs = new HashMap<>();
  private final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();

  public synchronized void append(String topic, int partition, byte[] key, byte[] value) {
    TopicPartition tp = new TopicPartition(topic, partition);
    List<ConsumerRecord<byte[], byte[]>> log = logs.computeIfAbsent(tp, t -> new ArrayList<>());
    log.add(new ConsumerRecord<>(topic, partition, log.size(), key, value));
  }

  synchronized void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
    committed.putAll(offsets);
  }

  public synchronized Map<TopicPartition, OffsetAndMetadata> committed(
      Set<TopicPartition> partitions) {
    return partitions.stream()
        .filter(committed::containsKey)
        .collect(Collectors.toMap(tp -> tp, committed::get));
  }

  /** Records of {@code tp} from {@code offset}, at most {@code max}. */
  synchronized List<ConsumerRecord<byte[], byte[]>> read(TopicPartition tp, long offset, int max) {
    List<ConsumerRecord<byte[], byte[]>> log = logs.getOrDefault(tp, List.of());
    return List.copyOf(
        log.subList((int) Math.min(offset, log.size()), (int) Math.min(offset + max, log.size())));
  }

  public synchronized long end(TopicPartition tp) {
    return logs.getOrDefault(tp, List.of()).size();
  }

  /** Every committed record of {@code topic}, all partitions. */
  public synchronized List<ConsumerRecord<byte[], byte[]>> records(String topic) {
    return logs.entrySet().stream()
        .filter(e -> e.getKey().topic().equals(topic))
        .flatMap(e -> e.getValue().stream())
        .toList();
  }

  /**
   * What a compacted topic keeps: the last value per key, with keys whose last value is a tombstone
   * left out.
   */
  public synchronized Map<String, String> compacted(String topic) {
    Map<String, String> live = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records(topic)) {
      String key = new String(r.key());
      if (r.value() == null) {
        live.remove(key);
      } else {
        live.put(key, new String(r.value()));
      }
    }
    return live;
  }
}
