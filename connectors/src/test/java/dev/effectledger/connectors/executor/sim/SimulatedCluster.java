package dev.effectledger.connectors.executor.sim;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What a Kafka cluster keeps for the executor's seam tests: the records of each partition, in order
 * with their offsets, and one group's committed offsets. {@link LogProducer} appends a
 * transaction's records and offsets when it commits; {@link LogConsumer} reads the committed ones,
 * so a consumer started after a "crash" sees exactly what was committed.
 *
 * <p>A record can also be left <em>pending</em>, as a transaction's records are on a partition its
 * coordinator skipped when it wrote the commit markers: it holds the partition's last stable offset
 * (read_committed readers stop before it) until the same producer's next transaction on that
 * partition ends, and then takes that transaction's fate, commit or abort.
 */
public final class SimulatedCluster {

  private enum State {
    PENDING,
    COMMITTED,
    ABORTED
  }

  private static final class Entry {
    final ConsumerRecord<byte[], byte[]> record;
    final long producer;
    State state;

    Entry(ConsumerRecord<byte[], byte[]> record, long producer, State state) {
      this.record = record;
      this.producer = producer;
      this.state = state;
    }
  }

  /** What a read_committed fetch returns: the committed records, and where the next one starts. */
  record Read(List<ConsumerRecord<byte[], byte[]>> records, long next) {}

  private final Map<TopicPartition, List<Entry>> logs = new HashMap<>();
  private final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();

  /** Appends a committed record (a non-transactional write, or one whose transaction committed). */
  public synchronized void append(String topic, int partition, byte[] key, byte[] value) {
    add(new TopicPartition(topic, partition), key, value, -1, State.COMMITTED);
  }

  /** Appends a record of {@code producer}'s transaction whose commit marker never came. */
  synchronized void appendPending(
      long producer, String topic, int partition, byte[] key, byte[] value) {
    add(new TopicPartition(topic, partition), key, value, producer, State.PENDING);
  }

  /**
   * Ends, as {@code commit} says, the records {@code producer} left pending on {@code partitions}:
   * what its next transaction's markers there do.
   */
  synchronized void end(long producer, Collection<TopicPartition> partitions, boolean commit) {
    for (TopicPartition tp : partitions) {
      for (Entry e : logs.getOrDefault(tp, List.of())) {
        if (e.producer == producer && e.state == State.PENDING) {
          e.state = commit ? State.COMMITTED : State.ABORTED;
        }
      }
    }
  }

  private void add(TopicPartition tp, byte[] key, byte[] value, long producer, State state) {
    List<Entry> log = logs.computeIfAbsent(tp, t -> new ArrayList<>());
    log.add(
        new Entry(
            new ConsumerRecord<>(tp.topic(), tp.partition(), log.size(), key, value),
            producer,
            state));
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

  /** The committed records of {@code tp} from {@code offset} below its last stable offset. */
  synchronized Read read(TopicPartition tp, long offset, int max) {
    List<Entry> log = logs.getOrDefault(tp, List.of());
    long stable = stableEnd(tp);
    List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
    long next = offset;
    while (next < stable && records.size() < max) {
      Entry e = log.get((int) next++);
      if (e.state == State.COMMITTED) {
        records.add(e.record);
      }
    }
    return new Read(records, next);
  }

  /** The high watermark: one past the last record, pending or not. */
  public synchronized long end(TopicPartition tp) {
    return logs.getOrDefault(tp, List.of()).size();
  }

  /** The last stable offset: the first pending record, or the high watermark. */
  public synchronized long stableEnd(TopicPartition tp) {
    List<Entry> log = logs.getOrDefault(tp, List.of());
    for (int i = 0; i < log.size(); i++) {
      if (log.get(i).state == State.PENDING) {
        return i;
      }
    }
    return log.size();
  }

  /** Every committed record of {@code topic}, all partitions. */
  public synchronized List<ConsumerRecord<byte[], byte[]>> records(String topic) {
    return logs.entrySet().stream()
        .filter(e -> e.getKey().topic().equals(topic))
        .flatMap(e -> e.getValue().stream())
        .filter(e -> e.state == State.COMMITTED)
        .map(e -> e.record)
        .toList();
  }

  /**
   * What a compacted topic keeps: the last committed value per key, with keys whose last value is a
   * tombstone left out.
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
