package dev.effectledger.connectors.executor;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Properties;

/**
 * An executor's settings.
 *
 * @param kafka Kafka client settings passed to the consumer and producer as they are
 *     (bootstrap.servers, SASL/SSL); the executor sets isolation, commits and transactions itself
 * @param groupId consumer group of the executors of these lanes
 * @param lanes dispatch lanes to consume ({@code tool-dispatch.<lane>})
 * @param concurrency effects running at once in this executor, across its partitions
 * @param commitInterval how often finished outcomes and offsets are committed in one transaction
 * @param shutdownDeadline how long close() and a rebalance wait for running effects
 * @param schemaRegistryUrl {@code http(s)://...} or {@code mock://<scope>}
 * @param transactionalIdPrefix prefix of this instance's transactional id (a random suffix is added)
 */
public record ExecutorConfig(
    Properties kafka,
    String groupId,
    List<String> lanes,
    int concurrency,
    Duration commitInterval,
    Duration shutdownDeadline,
    String schemaRegistryUrl,
    String transactionalIdPrefix) {

  public static final String DEAD_LETTER_TOPIC = "tool-dispatch.dlq";
  public static final String OUTCOMES_TOPIC = "tool-outcomes";

  public ExecutorConfig {
    Objects.requireNonNull(kafka, "kafka");
    Objects.requireNonNull(groupId, "groupId");
    Objects.requireNonNull(schemaRegistryUrl, "schemaRegistryUrl");
    Objects.requireNonNull(transactionalIdPrefix, "transactionalIdPrefix");
    lanes = List.copyOf(lanes);
    if (lanes.isEmpty()) {
      throw new IllegalArgumentException("an executor needs at least one lane");
    }
    if (concurrency < 1) {
      throw new IllegalArgumentException("concurrency must be at least 1, was " + concurrency);
    }
    if (commitInterval.isNegative() || commitInterval.isZero()) {
      throw new IllegalArgumentException("commitInterval must be positive, was " + commitInterval);
    }
    if (shutdownDeadline.isNegative()) {
      throw new IllegalArgumentException("shutdownDeadline must not be negative, was " + shutdownDeadline);
    }
  }

  /** Defaults: 32 effects at once, commits every 100 ms, 30 s to finish on shutdown. */
  public static ExecutorConfig of(Properties kafka, List<String> lanes, String schemaRegistryUrl) {
    return new ExecutorConfig(kafka, "effectledger-executor", lanes, 32, Duration.ofMillis(100),
        Duration.ofSeconds(30), schemaRegistryUrl, "effectledger-executor");
  }

  public ExecutorConfig withGroupId(String group) {
    return new ExecutorConfig(kafka, group, lanes, concurrency, commitInterval, shutdownDeadline, schemaRegistryUrl, transactionalIdPrefix);
  }

  public ExecutorConfig withConcurrency(int effects) {
    return new ExecutorConfig(kafka, groupId, lanes, effects, commitInterval, shutdownDeadline, schemaRegistryUrl, transactionalIdPrefix);
  }

  public ExecutorConfig withCommitInterval(Duration interval) {
    return new ExecutorConfig(kafka, groupId, lanes, concurrency, interval, shutdownDeadline, schemaRegistryUrl, transactionalIdPrefix);
  }

  public ExecutorConfig withShutdownDeadline(Duration deadline) {
    return new ExecutorConfig(kafka, groupId, lanes, concurrency, commitInterval, deadline, schemaRegistryUrl, transactionalIdPrefix);
  }
}
