package dev.effectledger.connectors.executor.sim;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional {@link MockProducer} whose committed transactions land in a {@link
 * SimulatedCluster}, as one transactional id's producer (every instance is the same producer, as a
 * restarted executor's is). Faults it can be told to inject on the next commits of transactions
 * that carry a record of some topic:
 *
 * <ul>
 *   <li>fail: the commit throws (the executor aborts the transaction);
 *   <li>split: the commit succeeds and the records land, but the consumer offsets do not;
 *   <li>skip markers: the commit succeeds and everything lands, but that topic's records are left
 *       pending, to take the fate of this producer's next transaction on their partition.
 * </ul>
 *
 * The last two are what a transaction coordinator does when it completes a commit after a broker
 * restart and cannot find the leader of some partitions: it skips them, taking them for deleted
 * (docs/chaos.md, "An answered dispatch run again").
 */
public final class LogProducer extends MockProducer<byte[], byte[]> {

  /** The producer id every instance shares: one transactional id. */
  private static final long PRODUCER_ID = 0;

  private final SimulatedCluster cluster;
  private final AtomicInteger failures = new AtomicInteger();
  private volatile String failingTopic;
  private final AtomicInteger splits = new AtomicInteger();
  private volatile String splitTopic;
  private final AtomicInteger skips = new AtomicInteger();
  private volatile String skippedTopic;
  private volatile boolean dieAfterAbort;

  public LogProducer(SimulatedCluster cluster) {
    super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    this.cluster = cluster;
  }

  /** The next {@code times} commits of a transaction with a record of {@code topic} fail. */
  public void failCommitsWith(String topic, int times) {
    failingTopic = topic;
    failures.set(times);
  }

  /**
   * The next {@code times} commits of a transaction with a record of {@code topic} land their
   * records and lose their consumer offsets, and the producer is told they committed.
   */
  public void splitCommitsWith(String topic, int times) {
    splitTopic = topic;
    splits.set(times);
  }

  /**
   * The next {@code times} commits of a transaction with a record of {@code topic} leave that
   * topic's records pending, and the producer is told they committed.
   */
  public void skipMarkersOn(String topic, int times) {
    skippedTopic = topic;
    skips.set(times);
  }

  /** After its next abort the producer is fenced: the executor stops, as if killed. */
  public void dieAfterAbort() {
    dieAfterAbort = true;
  }

  @Override
  public synchronized void commitTransaction() {
    List<ProducerRecord<byte[], byte[]>> records = uncommittedRecords();
    Map<String, Map<TopicPartition, OffsetAndMetadata>> offsets = uncommittedOffsets();
    if (carries(records, failingTopic) && failures.getAndDecrement() > 0) {
      throw new KafkaException("injected: the transaction could not commit");
    }
    boolean skip = carries(records, skippedTopic) && skips.getAndDecrement() > 0;
    super.commitTransaction();
    cluster.end(
        PRODUCER_ID,
        partitions(records.stream().filter(r -> !(skip && r.topic().equals(skippedTopic)))),
        true);
    for (ProducerRecord<byte[], byte[]> r : records) {
      int partition = r.partition() == null ? 0 : r.partition();
      if (skip && r.topic().equals(skippedTopic)) {
        cluster.appendPending(PRODUCER_ID, r.topic(), partition, r.key(), r.value());
      } else {
        cluster.append(r.topic(), partition, r.key(), r.value());
      }
    }
    if (carries(records, splitTopic) && splits.getAndDecrement() > 0) {
      return;
    }
    offsets.values().forEach(cluster::commit);
  }

  @Override
  public synchronized void abortTransaction() {
    cluster.end(PRODUCER_ID, partitions(uncommittedRecords().stream()), false);
    super.abortTransaction();
    if (dieAfterAbort) {
      fenceProducer();
    }
  }

  private static boolean carries(List<ProducerRecord<byte[], byte[]>> records, String topic) {
    return topic != null && records.stream().anyMatch(r -> r.topic().equals(topic));
  }

  private static Set<TopicPartition> partitions(Stream<ProducerRecord<byte[], byte[]>> records) {
    return records
        .map(r -> new TopicPartition(r.topic(), r.partition() == null ? 0 : r.partition()))
        .collect(Collectors.toSet());
  }
}
