package dev.effectledger.schema;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Reading partitions to their end within a deadline, written once for every reader that takes stock
 * of a topic (the reconciler, the demo's closing table, the chaos harness).
 *
 * <p>"The end" is each partition's end offset when the read starts: for a {@code read_committed}
 * consumer its last stable offset, for a {@code read_uncommitted} one its high watermark. Records
 * written after the start may or may not be read. A transaction left open holds a read_committed
 * reader back until it ends, which is why every read has a deadline.
 */
public final class TopicReads {

  private static final Duration POLL = Duration.ofMillis(200);

  private TopicReads() {}

  /** What a read does with each record. */
  @FunctionalInterface
  public interface RecordHandler<K, V> {
    void accept(ConsumerRecord<K, V> record);
  }

  /**
   * Reads from where {@code consumer} stands in {@code partitions} (it must have them assigned) up
   * to their end offsets, handing each record to {@code each}; false if {@code limit} passed first.
   */
  public static <K, V> boolean toEnd(
      Consumer<K, V> consumer,
      Collection<TopicPartition> partitions,
      Duration limit,
      RecordHandler<K, V> each) {
    return toOffsets(consumer, consumer.endOffsets(partitions), limit, each);
  }

  /**
   * Reads from where {@code consumer} stands up to {@code end}, an offset per partition (a high
   * watermark, say, where the consumer's own end would be the last stable offset); false if {@code
   * limit} passed first.
   */
  public static <K, V> boolean toOffsets(
      Consumer<K, V> consumer,
      Map<TopicPartition, Long> end,
      Duration limit,
      RecordHandler<K, V> each) {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!reached(consumer, end)) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      consumer.poll(POLL).forEach(each::accept);
    }
    return true;
  }

  /**
   * Assigns every partition of {@code topic} to {@code consumer} and reads it from the beginning to
   * its end.
   */
  public static <K, V> boolean wholeTopic(
      Consumer<K, V> consumer, String topic, Duration limit, RecordHandler<K, V> each) {
    List<TopicPartition> partitions =
        consumer.partitionsFor(topic).stream()
            .map(p -> new TopicPartition(topic, p.partition()))
            .toList();
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
    return toEnd(consumer, partitions, limit, each);
  }

  private static boolean reached(Consumer<?, ?> consumer, Map<TopicPartition, Long> end) {
    return end.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue());
  }
}
