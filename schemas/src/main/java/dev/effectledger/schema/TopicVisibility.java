package dev.effectledger.schema;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Waits until topics just created can be described with a leader on every partition.
 *
 * <p>{@code createTopics} completes when the controller has accepted the topics; brokers learn of
 * them from the metadata log a moment later, and {@code describeTopics} answers from a broker's
 * cache. Without this wait a check that runs right after creation (co-partitioning, a consumer's
 * assignment) can be told the topic does not exist.
 */
public final class TopicVisibility {

  private TopicVisibility() {}

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
            .allMatch(d -> d.partitions().stream().allMatch(p -> p.leader() != null))) {
          return;
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw new IllegalStateException(
              "Cannot describe topics " + topics + ": " + e.getCause().getMessage(), e.getCause());
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
