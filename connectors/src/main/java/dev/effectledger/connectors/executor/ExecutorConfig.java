package dev.effectledger.connectors.executor;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Pattern;

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
 * @param transactionalIdPrefix prefix of the transactional id of an executor without an instance id
 *     (a random suffix is added at each start)
 * @param instanceId a name for this executor that stays the same across its restarts and is unique
 *     in its group (a pod or host name), or null. With one, the executor is a static member of its
 *     group ({@code group.instance.id}) and its transactional id is {@code <groupId>-<instanceId>},
 *     so a restarted executor takes its partitions back without a rebalance and fences its killed
 *     predecessor at once, aborting the transaction that was left open. Without one, a restart is a
 *     new member: its predecessor's partitions wait for {@code session.timeout.ms} and
 *     read_committed readers for its {@code transaction.timeout.ms}.
 */
public record ExecutorConfig(
    Properties kafka,
    String groupId,
    List<String> lanes,
    int concurrency,
    Duration commitInterval,
    Duration shutdownDeadline,
    String schemaRegistryUrl,
    String transactionalIdPrefix,
    String instanceId) {

  private static final Pattern VALID_ID = Pattern.compile("[A-Za-z0-9._-]{1,200}");

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
      throw new IllegalArgumentException(
          "shutdownDeadline must not be negative, was " + shutdownDeadline);
    }
    if (instanceId != null && !VALID_ID.matcher(instanceId).matches()) {
      throw new IllegalArgumentException(
          "instanceId '" + instanceId + "' must be 1-200 of A-Z a-z 0-9 . _ -");
    }
  }

  /** Defaults: 32 effects at once, commits every 100 ms, 30 s to finish on shutdown. */
  public static ExecutorConfig of(Properties kafka, List<String> lanes, String schemaRegistryUrl) {
    return new ExecutorConfig(
        kafka,
        "effectledger-executor",
        lanes,
        32,
        Duration.ofMillis(100),
        Duration.ofSeconds(30),
        schemaRegistryUrl,
        "effectledger-executor",
        null);
  }

  public ExecutorConfig withGroupId(String group) {
    return new ExecutorConfig(
        kafka,
        group,
        lanes,
        concurrency,
        commitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId);
  }

  public ExecutorConfig withConcurrency(int effects) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        effects,
        commitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId);
  }

  public ExecutorConfig withCommitInterval(Duration interval) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        interval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId);
  }

  public ExecutorConfig withInstanceId(String id) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        commitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        id);
  }

  /** The transactional id for this start: stable with an instance id, random without. */
  public String transactionalId() {
    return instanceId != null
        ? groupId + "-" + instanceId
        : transactionalIdPrefix + "-" + UUID.randomUUID();
  }

  public ExecutorConfig withShutdownDeadline(Duration deadline) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        commitInterval,
        deadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId);
  }
}
