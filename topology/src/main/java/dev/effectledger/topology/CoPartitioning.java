package dev.effectledger.topology;

import dev.effectledger.schema.Topics;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;

/** Checks, before the topology starts, that intents and outcomes share one partitioning. */
public final class CoPartitioning {

  private CoPartitioning() {}

  /**
   * Fails when tool-intents and tool-outcomes differ in partition count (or one is missing): a
   * key's intents and outcomes would land in different tasks, and two duplicates could race.
   *
   * @return the partition count of both
   * @throws IllegalStateException naming both counts and what to do
   */
  public static int verify(Admin admin) {
    Map<String, TopicDescription> topics;
    try {
      topics =
          admin
              .describeTopics(List.of(Topics.INTENTS, Topics.OUTCOMES))
              .allTopicNames()
              .get(30, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Cannot describe "
              + Topics.INTENTS
              + " and "
              + Topics.OUTCOMES
              + ": create both with the same partition count before starting the processor",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while checking co-partitioning", e);
    }
    int intents = topics.get(Topics.INTENTS).partitions().size();
    int outcomes = topics.get(Topics.OUTCOMES).partitions().size();
    if (intents != outcomes) {
      throw new IllegalStateException(
          Topics.INTENTS
              + " has "
              + intents
              + " partitions but "
              + Topics.OUTCOMES
              + " has "
              + outcomes
              + ": they must be co-partitioned (same count, keyed by"
              + " idempotency key) so one task owns every event of a key. Recreate "
              + Topics.OUTCOMES
              + " with "
              + intents
              + " partitions.");
    }
    return intents;
  }

  /**
   * Fails when tool-policy does not have {@code partitions} partitions: each ledger task reads its
   * own partition of it, and a task without one would never apply a policy.
   */
  public static void verifyPolicy(Admin admin, int partitions) {
    int policy;
    try {
      policy =
          admin
              .describeTopics(List.of(Topics.POLICY))
              .allTopicNames()
              .get(30, TimeUnit.SECONDS)
              .get(Topics.POLICY)
              .partitions()
              .size();
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Cannot describe "
              + Topics.POLICY
              + ": create it (compacted, "
              + partitions
              + " partitions) or set policy.live=false",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while checking " + Topics.POLICY, e);
    }
    if (policy != partitions) {
      throw new IllegalStateException(
          Topics.POLICY
              + " has "
              + policy
              + " partitions but "
              + Topics.INTENTS
              + " has "
              + partitions
              + ": each ledger task reads its own partition of it. Recreate "
              + Topics.POLICY
              + " (compacted) with "
              + partitions
              + " partitions, then run effectledger tools apply again.");
    }
  }
}
