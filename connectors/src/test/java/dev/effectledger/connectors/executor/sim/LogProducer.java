package dev.effectledger.connectors.executor.sim;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional {@link MockProducer} whose committed transactions land in a {@link
 * SimulatedCluster}; it can be told to fail the next commits of transactions that carry a record of
 * some topic (the transaction stays open and the executor aborts it), or to split them: the commit
 * succeeds and the records land, but the consumer offsets do not, as when a transaction coordinator
 * completing a commit after a broker restart skips the offsets partition and the producer's next
 * transaction aborts there (docs/chaos.md, "An answered dispatch run again").
 */
public final class LogProducer extends MockProducer<byte[], byte[]> {

  private final SimulatedCluster cluster;
  private final AtomicInteger failures = new AtomicInteger();
  private volatile String failingTopic;
  private final AtomicInteger splits = new AtomicInteger();
  private volatile String splitTopic;

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

  @Override
  public synchronized void commitTransaction() {
    List<ProducerRecord<byte[], byte[]>> records = uncommittedRecords();
    Map<String, Map<TopicPartition, OffsetAndMetadata>> offsets = uncommittedOffsets();
    if (records.stream().anyMatch(r -> r.topic().equals(failingTopic))
        && failures.getAndDecrement() > 0) {
      throw new KafkaException("injected: the transaction could not commit");
    }
    super.commitTransaction();
    for (ProducerRecord<byte[], byte[]> r : records) {
      cluster.append(r.topic(), r.partition() == null ? 0 : r.partition(), r.key(), r.value());
    }
    if (records.stream().anyMatch(r -> r.topic().equals(splitTopic))
        && splits.getAndDecrement() > 0) {
      return;
    }
    offsets.values().forEach(cluster::commit);
  }
}
