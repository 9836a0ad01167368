package dev.effectledger.topology;

import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.Topics;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;

/**
 * What the ledger topology needs besides Kafka settings.
 *
 * @param policies per-tool policy
 * @param schemaRegistryUrl {@code http(s)://...} or {@code mock://<scope>}
 * @param maxArgumentsBytes intents whose arguments exceed this many UTF-8 bytes are dead-lettered
 * @param replyTopics reply topics an intent may name; others are rejected
 * @param pendingCheckInterval wall-clock period of the punctuation that re-dispatches or holds
 *     timed-out PENDING entries, then purges entries whose window passed in stream time
 * @param purgeInterval stream-time period of a second expiry purge, which catches up right after
 *     stream time jumps
 * @param batchSize entries one scan of the deadline index takes; a punctuation scans again while a
 *     scan came back full and its budget lasts
 * @param punctuationBudget how long one punctuation may work before it leaves the rest to the next,
 *     so that a backlog cannot stall the task's processing for long; the work a budget buys per
 *     interval bounds the sustained rate of expiries (see docs/operations.md)
 * @param ticker nanosecond time source that measures the budget ({@code System::nanoTime}; tests
 *     pass a fake)
 * @param intentPartitions partitions of tool-intents, to check that each intent sits in the
 *     partition Kafka's Java default partitioner gives its key (murmur2); 0 leaves it unchecked
 * @param verifyArgumentsHash whether each intent's argumentsHash is checked against its arguments
 *     and the tool's key rules (on; off only to measure what the check costs)
 * @param storeCaching whether the ledger stores keep Kafka Streams' record cache in front of
 *     RocksDB (off by default: on a stream of mostly new keys it saves no store access and no
 *     changelog record, and costs its bookkeeping; docs/performance.md has the runs)
 * @param observer hears every decision, for metrics
 * @param bypassApprovals the signers whose bypass approvals the ledger accepts; {@link
 *     BypassApprovals#UNVERIFIED} (none configured) takes approvals as given
 * @param livePolicy whether the topology reads {@value Topics#POLICY} and applies each policy
 *     published there at one point in each task ({@code effectledger tools apply}); {@code
 *     policies} is then only what a task uses until its first applied policy. Off by default (the
 *     topic must exist); the processor command turns it on.
 */
public record LedgerConfig(
    ToolPolicies policies,
    String schemaRegistryUrl,
    int maxArgumentsBytes,
    Pattern replyTopics,
    Duration pendingCheckInterval,
    Duration purgeInterval,
    int batchSize,
    Duration punctuationBudget,
    LongSupplier ticker,
    int intentPartitions,
    boolean verifyArgumentsHash,
    boolean storeCaching,
    LedgerObserver observer,
    BypassApprovals bypassApprovals,
    boolean livePolicy) {

  public static final int DEFAULT_MAX_ARGUMENTS_BYTES = 64 * 1024;

  /**
   * The most {@code maxArgumentsBytes} may be: 512 KiB, so that a dispatch fits a default 1 MiB
   * request.
   */
  public static final int MAX_ARGUMENTS_BYTES_LIMIT = 512 * 1024;

  public static final Pattern DEFAULT_REPLY_TOPICS =
      Pattern.compile(Pattern.quote(Topics.RESULTS) + "(\\.[A-Za-z0-9._-]{1,200})?");

  public LedgerConfig {
    Objects.requireNonNull(policies, "policies");
    Objects.requireNonNull(schemaRegistryUrl, "schemaRegistryUrl");
    Objects.requireNonNull(replyTopics, "replyTopics");
    Objects.requireNonNull(observer, "observer");
    Objects.requireNonNull(bypassApprovals, "bypassApprovals");
    if (maxArgumentsBytes < 2 || maxArgumentsBytes > MAX_ARGUMENTS_BYTES_LIMIT) {
      throw new IllegalArgumentException(
          "maxArgumentsBytes must be 2 to "
              + MAX_ARGUMENTS_BYTES_LIMIT
              + " (a dispatch carries the"
              + " arguments and must stay under a producer's default max.request.size of 1 MiB), was "
              + maxArgumentsBytes);
    }
    if (pendingCheckInterval.isNegative() || pendingCheckInterval.isZero()) {
      throw new IllegalArgumentException(
          "pendingCheckInterval must be positive, was " + pendingCheckInterval);
    }
    if (purgeInterval.isNegative() || purgeInterval.isZero()) {
      throw new IllegalArgumentException("purgeInterval must be positive, was " + purgeInterval);
    }
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize must be at least 1, was " + batchSize);
    }
    Objects.requireNonNull(ticker, "ticker");
    if (intentPartitions < 0) {
      throw new IllegalArgumentException(
          "intentPartitions must be 0 (unchecked) or more, was " + intentPartitions);
    }
    if (punctuationBudget.isNegative() || punctuationBudget.isZero()) {
      throw new IllegalArgumentException(
          "punctuationBudget must be positive, was " + punctuationBudget);
    }
    if (punctuationBudget.compareTo(pendingCheckInterval) >= 0) {
      throw new IllegalArgumentException(
          "punctuationBudget ("
              + punctuationBudget
              + ") must be shorter than"
              + " pendingCheckInterval ("
              + pendingCheckInterval
              + "), or the punctuations would leave no time to process records");
    }
  }

  public static final Duration DEFAULT_PENDING_CHECK_INTERVAL = Duration.ofSeconds(1);
  public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofSeconds(60);
  public static final Duration DEFAULT_PUNCTUATION_BUDGET = Duration.ofMillis(200);
  public static final int DEFAULT_BATCH_SIZE = 1000;

  /**
   * Defaults: 64 KiB arguments, replies to tool-results[.suffix], punctuations every 1 s of wall
   * clock and 60 s of stream time, each working at most 200 ms in scans of 1,000 entries.
   */
  public static LedgerConfig of(ToolPolicies policies, String schemaRegistryUrl) {
    return new LedgerConfig(
        policies,
        schemaRegistryUrl,
        DEFAULT_MAX_ARGUMENTS_BYTES,
        DEFAULT_REPLY_TOPICS,
        DEFAULT_PENDING_CHECK_INTERVAL,
        DEFAULT_PURGE_INTERVAL,
        DEFAULT_BATCH_SIZE,
        DEFAULT_PUNCTUATION_BUDGET,
        System::nanoTime,
        0,
        true,
        false,
        LedgerObserver.NONE,
        BypassApprovals.UNVERIFIED,
        false);
  }

  public LedgerConfig withMaxArgumentsBytes(int bytes) {
    return with(c -> c.maxArgumentsBytes = bytes);
  }

  /**
   * Punctuations every {@code wallClock} (timeouts, then expiry) and every {@code streamTime}
   * (expiry), each working at most {@code budget}.
   */
  public LedgerConfig withPunctuations(Duration wallClock, Duration streamTime, Duration budget) {
    return with(
        c -> {
          c.pendingCheckInterval = wallClock;
          c.purgeInterval = streamTime;
          c.punctuationBudget = budget;
        });
  }

  /**
   * Checks that intents sit in the partition the Java default partitioner gives their key, out of
   * {@code partitions}.
   */
  public LedgerConfig withIntentPartitions(int partitions) {
    return with(c -> c.intentPartitions = partitions);
  }

  public LedgerConfig withPolicies(ToolPolicies tools) {
    return with(c -> c.policies = tools);
  }

  /** Off only to measure what checking each intent's arguments hash costs. */
  public LedgerConfig withArgumentsHashCheck(boolean verify) {
    return with(c -> c.verifyArgumentsHash = verify);
  }

  /** Kafka Streams' record cache in front of the ledger stores: on by default. */
  public LedgerConfig withStoreCaching(boolean cached) {
    return with(c -> c.storeCaching = cached);
  }

  public LedgerConfig withBatchSize(int entries) {
    return with(c -> c.batchSize = entries);
  }

  public LedgerConfig withTicker(LongSupplier nanoTime) {
    return with(c -> c.ticker = nanoTime);
  }

  public LedgerConfig withObserver(LedgerObserver listener) {
    return with(c -> c.observer = listener);
  }

  /** Accepts bypass approvals only when one of {@code signers} signed them. */
  public LedgerConfig withBypassApprovals(BypassApprovals signers) {
    return with(c -> c.bypassApprovals = signers);
  }

  /**
   * Reads the applied policy from {@value Topics#POLICY} (which must exist, co-partitioned with
   * tool-intents) and applies every new version live.
   */
  public LedgerConfig withLivePolicy(boolean live) {
    return with(c -> c.livePolicy = live);
  }

  /** This config with {@code change} applied to a copy of its values, validated as any other. */
  private LedgerConfig with(Consumer<Values> change) {
    Values c = new Values(this);
    change.accept(c);
    return new LedgerConfig(
        c.policies,
        c.schemaRegistryUrl,
        c.maxArgumentsBytes,
        c.replyTopics,
        c.pendingCheckInterval,
        c.purgeInterval,
        c.batchSize,
        c.punctuationBudget,
        c.ticker,
        c.intentPartitions,
        c.verifyArgumentsHash,
        c.storeCaching,
        c.observer,
        c.bypassApprovals,
        c.livePolicy);
  }

  /** A mutable copy of a config's values, for {@link #with}. */
  private static final class Values {
    ToolPolicies policies;
    String schemaRegistryUrl;
    int maxArgumentsBytes;
    Pattern replyTopics;
    Duration pendingCheckInterval;
    Duration purgeInterval;
    int batchSize;
    Duration punctuationBudget;
    LongSupplier ticker;
    int intentPartitions;
    boolean verifyArgumentsHash;
    boolean storeCaching;
    LedgerObserver observer;
    BypassApprovals bypassApprovals;
    boolean livePolicy;

    Values(LedgerConfig config) {
      policies = config.policies;
      schemaRegistryUrl = config.schemaRegistryUrl;
      maxArgumentsBytes = config.maxArgumentsBytes;
      replyTopics = config.replyTopics;
      pendingCheckInterval = config.pendingCheckInterval;
      purgeInterval = config.purgeInterval;
      batchSize = config.batchSize;
      punctuationBudget = config.punctuationBudget;
      ticker = config.ticker;
      intentPartitions = config.intentPartitions;
      verifyArgumentsHash = config.verifyArgumentsHash;
      storeCaching = config.storeCaching;
      observer = config.observer;
      bypassApprovals = config.bypassApprovals;
      livePolicy = config.livePolicy;
    }
  }
}
