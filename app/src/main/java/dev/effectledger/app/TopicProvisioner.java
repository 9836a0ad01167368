package dev.effectledger.app;

import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.TopicVisibility;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.CoPartitioning;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates the ledger's topics when allowed, or checks them when not: that each exists, that
 * tool-intents and tool-outcomes are co-partitioned, and that the ledger store's changelog (when
 * Kafka Streams has created it) is compacted.
 */
public final class TopicProvisioner {

  private final Admin admin;

  TopicProvisioner(Admin admin) {
    this.admin = admin;
  }

  /** Every topic the ledger reads or writes for these policies. */
  public static List<String> topics(ToolPolicies policies) {
    Set<String> topics = new LinkedHashSet<>(Topics.fixed());
    for (ToolPolicy policy : policies.tools().values()) {
      topics.add(Topics.dispatch(policy.lane()));
    }
    policies.unknownTool().ifPresent(p -> topics.add(Topics.dispatch(p.lane())));
    return new ArrayList<>(topics);
  }

  void create(List<String> topics, int partitions, short replication, int minInsyncReplicas) {
    List<NewTopic> missing = new ArrayList<>();
    Set<String> existing = call(admin.listTopics().names());
    for (String topic : topics) {
      if (!existing.contains(topic)) {
        NewTopic created = new NewTopic(topic, partitions, replication);
        Map<String, String> configs = new java.util.HashMap<>();
        if (minInsyncReplicas > 0) {
          configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(minInsyncReplicas));
        }
        if (topic.equals(Topics.POLICY) || topic.equals(Topics.FINDINGS)) {
          // One document per partition, the latest kept: every task reads it from its start.
          configs.put(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT);
        }
        created.configs(configs);
        missing.add(created);
      }
    }
    if (missing.isEmpty()) {
      return;
    }
    try {
      admin.createTopics(missing).all().get(60, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException(
            "Could not create topics "
                + missing.stream().map(NewTopic::name).toList()
                + ": "
                + e.getCause().getMessage()
                + ". Create them yourself and set topics.create=false.",
            e.getCause());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating topics", e);
    } catch (TimeoutException e) {
      throw new IllegalStateException("Timed out creating topics; is the cluster reachable?", e);
    }
    // The checks that follow (co-partitioning) describe the topics from a broker's cache.
    TopicVisibility.await(
        admin, missing.stream().map(NewTopic::name).toList(), Duration.ofSeconds(60));
  }

  /** Fails with one message listing every problem. */
  void check(List<String> topics, String applicationId) {
    List<String> problems = new ArrayList<>();
    Set<String> existing = call(admin.listTopics().names());
    for (String topic : topics) {
      // tool-findings is for operators only: the console and the reconciler go on without it
      if (!existing.contains(topic) && !topic.equals(Topics.FINDINGS)) {
        problems.add("topic " + topic + " does not exist");
      }
    }
    if (existing.contains(Topics.INTENTS) && existing.contains(Topics.OUTCOMES)) {
      try {
        CoPartitioning.verify(admin);
      } catch (IllegalStateException e) {
        problems.add(e.getMessage());
      }
    }
    String changelog = LedgerStore.changelog(applicationId);
    if (existing.contains(changelog)) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
      Map<ConfigResource, Config> configs = call(admin.describeConfigs(List.of(resource)).all());
      String policy = configs.get(resource).get(TopicConfig.CLEANUP_POLICY_CONFIG).value();
      if (!policy.contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
        problems.add(
            "store changelog "
                + changelog
                + " has cleanup.policy="
                + policy
                + "; it must be compact or the"
                + " ledger loses entries on restore");
      }
    }
    if (!problems.isEmpty()) {
      throw new IllegalStateException(
          "Topics are not ready (topics.create=false):\n  "
              + String.join("\n  ", problems)
              + "\nCreate them with the same partition count for tool-intents and tool-outcomes, or set topics.create=true.");
    }
  }

  private static <T> T call(KafkaFuture<T> future) {
    try {
      return future.get(60, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new IllegalStateException(
          "Kafka admin call failed: "
              + e.getCause().getMessage()
              + ". Check bootstrap.servers and the security settings.",
          e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while talking to Kafka", e);
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "Kafka did not answer within 60 s; check bootstrap.servers", e);
    }
  }
}
