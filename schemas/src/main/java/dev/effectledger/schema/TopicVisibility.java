package dev.effectledger.schema;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Waits until topics just created can be described with a leader on every partition, and every
 * partition's leader serves it.
 *
 * <p>{@code createTopics} completes when the controller has accepted the topics; brokers learn of
 * them from the metadata log a moment later, and {@code describeTopics} answers from a broker's
 * cache. Without this wait a check that runs right after creation (co-partitioning, a consumer's
 * assignment) can be told the topic does not exist.
 *
 * <p>A broker updates that cache before it makes itself the partitions' leader (Kafka 4.3: the
 * metadata publisher sets the cache image, then {@code ReplicaManager.applyDelta}), so for a moment
 * a partition is described with a leader that answers produce requests {@code
 * NOT_LEADER_OR_FOLLOWER}. An idempotent producer's first batch refused in that moment, while its
 * next batch (already in flight) is accepted once the leader is ready, is refused for good: every
 * retry of the first batch is out of sequence, and it expires at {@code delivery.timeout.ms}
 * (KAFKA-15591, fixed by rejecting an out-of-order first batch from Kafka 4.5). So this also waits
 * until {@code listOffsets} of every partition is answered, which only the partition's ready leader
 * does.
 */
public final class TopicVisibility {

  private TopicVisibility() {}

  /** Whether every partition's leader answers {@code listOffsets} (a second at most per try). */
  private static boolean led(Admin admin, Collection<TopicDescription> topics, long deadline)
      throws InterruptedException, ExecutionException {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (TopicDescription topic : topics) {
      topic
          .partitions()
          .forEach(
              p ->
                  latest.put(new TopicPartition(topic.name(), p.partition()), OffsetSpec.latest()));
    }
    int wait = (int) Math.max(100, Math.min(1_000, (deadline - System.nanoTime()) / 1_000_000));
    try {
      admin
          .listOffsets(latest, new ListOffsetsOptions().timeoutMs(wait))
          .all()
          .get(wait + 1_000L, TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RetriableException) {
        return false; // not the leader yet (or not known to be): ask again
      }
      throw e;
    } catch (TimeoutException e) {
      return false;
    }
  }

  /**
   * Returns once every topic is described with a leader on each partition.
   *
   * @throws IllegalStateException naming the topics when they are not visible within the timeout
   */
  public static void await(Admin admin, Collection<String> topics, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    while (true) {
      try {
        Map<String, TopicDescription> described =
            admin
                .describeTopics(topics)
                .allTopicNames()
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (described.values().stream()
                .allMatch(d -> d.partitions().stream().allMatch(p -> p.leader() != null))
            && led(admin, described.values(), deadline)) {
          return;
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw new IllegalStateException(
              "Cannot describe topics "
                  + topics
                  + " or list their offsets: "
                  + e.getCause().getMessage(),
              e.getCause());
        }
        last = e;
      } catch (TimeoutException e) {
        last = e;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for topics " + topics, e);
      }
      if (System.nanoTime() >= deadline) {
        throw new IllegalStateException(
            "Topics "
                + topics
                + " were created but brokers did not report them with a leader within "
                + timeout.toSeconds()
                + " s; check that every broker is up and reachable",
            last);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for topics " + topics, e);
      }
    }
  }
}
