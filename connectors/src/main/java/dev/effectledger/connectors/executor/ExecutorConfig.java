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
 * @param commitInterval the longest a finished effect waits for the transaction that publishes its
 *     outcome, reply and offsets
 * @param minCommitInterval the shortest time between two of those transactions: once every effect
 *     read so far has finished and this long has passed since the last commit, the executor commits
 *     at once instead of waiting out {@code commitInterval}. Dispatches become readable in bursts,
 *     at each ledger commit, so this commits each burst as soon as it is done. Not less than {@code
 *     commitInterval}: commit only every {@code commitInterval}
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
    Duration minCommitInterval,
    Duration shutdownDeadline,
    String schemaRegistryUrl,
    String transactionalIdPrefix,
    String instanceId,
    boolean leaveGroupOnClose) {

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
    if (minCommitInterval.isNegative()) {
      throw new IllegalArgumentException(
          "minCommitInterval must not be negative, was " + minCommitInterval);
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

  /** The default {@link #minCommitInterval}: at most 100 transactions a second per executor. */
  public static final Duration DEFAULT_MIN_COMMIT_INTERVAL = Duration.ofMillis(10);

  /**
   * Defaults: 32 effects at once, a finished effect committed within 100 ms (at once when nothing
   * else is running, at most every 10 ms), 30 s to finish on shutdown.
   */
  public static ExecutorConfig of(Properties kafka, List<String> lanes, String schemaRegistryUrl) {
    return new ExecutorConfig(
        kafka,
        "effectledger-executor",
        lanes,
        32,
        Duration.ofMillis(100),
        DEFAULT_MIN_COMMIT_INTERVAL,
        Duration.ofSeconds(30),
        schemaRegistryUrl,
        "effectledger-executor",
        null,
        false);
  }

  public ExecutorConfig withGroupId(String group) {
    return new ExecutorConfig(
        kafka,
        group,
        lanes,
        concurrency,
        commitInterval,
        minCommitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leaveGroupOnClose);
  }

  public ExecutorConfig withConcurrency(int effects) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        effects,
        commitInterval,
        minCommitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leaveGroupOnClose);
  }

  public ExecutorConfig withCommitInterval(Duration interval) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        interval,
        minCommitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leaveGroupOnClose);
  }

  /**
   * See {@link #minCommitInterval}; {@code commitInterval} or more commits only on the interval.
   */
  public ExecutorConfig withMinCommitInterval(Duration gap) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        commitInterval,
        gap,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leaveGroupOnClose);
  }

  /** Whether a burst of finished effects may commit before {@link #commitInterval} is up. */
  public boolean commitsEarly() {
    return minCommitInterval.compareTo(commitInterval) < 0;
  }

  public ExecutorConfig withInstanceId(String id) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        commitInterval,
        minCommitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        id,
        leaveGroupOnClose);
  }

  /**
   * With an instance id: whether a clean {@link EffectExecutor#close} leaves the group (its
   * partitions move to the other executors at once) rather than keeping the membership for a
   * restart under the same id. {@code effectledger executor} sets it for the identity it keeps in
   * its state directory: a kill -9 still comes back as the same member.
   */
  public ExecutorConfig withLeaveGroupOnClose(boolean leave) {
    return new ExecutorConfig(
        kafka,
        groupId,
        lanes,
        concurrency,
        commitInterval,
        minCommitInterval,
        shutdownDeadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leave);
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
        minCommitInterval,
        deadline,
        schemaRegistryUrl,
        transactionalIdPrefix,
        instanceId,
        leaveGroupOnClose);
  }
}
