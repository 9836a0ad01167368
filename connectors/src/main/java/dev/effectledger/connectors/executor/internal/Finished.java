package dev.effectledger.connectors.executor.internal;

import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * A finished dispatch, handed from a worker to the poll thread: what to publish for it and, on a
 * journalled lane, its marker and whether its effect provably did not happen (a null marker means
 * nothing to journal: another lane, or an outcome committed before).
 *
 * @param epoch the partition's epoch when the dispatch was read; work of an older epoch (the
 *     partition was revoked, or a transaction aborted since) is dropped
 */
public record Finished(
    TopicPartition tp,
    long offset,
    int epoch,
    List<ProducerRecord<byte[], byte[]>> records,
    String marker,
    boolean noEffect) {

  /** Work on a lane without a journal, or with nothing to journal. */
  public static Finished unjournalled(
      TopicPartition tp, long offset, int epoch, List<ProducerRecord<byte[], byte[]>> records) {
    return new Finished(tp, offset, epoch, records, null, false);
  }

  /** Work whose start marker {@code marker} is answered by {@code answer}. */
  public static Finished journalled(
      TopicPartition tp, long offset, int epoch, String marker, EffectPerformer.Answer answer) {
    return new Finished(tp, offset, epoch, answer.records(), marker, answer.noEffect());
  }
}
