package dev.effectledger.topology;

import dev.effectledger.policy.ToolPolicies;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What the ledger topology needs besides Kafka settings.
 *
 * @param policies per-tool policy
 * @param schemaRegistryUrl {@code http(s)://...} or {@code mock://<scope>}
 * @param maxArgumentsBytes intents whose arguments exceed this many UTF-8 bytes are dead-lettered
 * @param replyTopics reply topics an intent may name; others are rejected
 * @param pendingCheckInterval wall-clock period of the pending-timeout check
 * @param purgeInterval stream-time period of the expiry purge
 * @param maxPerPunctuation most entries one punctuation handles, so a backlog cannot stall a task
 * @param observer hears every decision, for metrics
 */
public record LedgerConfig(
    ToolPolicies policies,
    String schemaRegistryUrl,
    int maxArgumentsBytes,
    Pattern replyTopics,
    Duration pendingCheckInterval,
    Duration purgeInterval,
    int maxPerPunctuation,
    LedgerObserver observer) {

  public static final int DEFAULT_MAX_ARGUMENTS_BYTES = 64 * 1024;
  public static final Pattern DEFAULT_REPLY_TOPICS = Pattern.compile("tool-results(\\.[A-Za-z0-9._-]{1,200})?");

  public LedgerConfig {
    Objects.requireNonNull(policies, "policies");
    Objects.requireNonNull(schemaRegistryUrl, "schemaRegistryUrl");
    Objects.requireNonNull(replyTopics, "replyTopics");
    Objects.requireNonNull(observer, "observer");
    if (maxArgumentsBytes < 2) {
      throw new IllegalArgumentException("maxArgumentsBytes must be at least 2, was " + maxArgumentsBytes);
    }
    if (pendingCheckInterval.isNegative() || pendingCheckInterval.isZero()) {
      throw new IllegalArgumentException("pendingCheckInterval must be positive, was " + pendingCheckInterval);
    }
    if (purgeInterval.isNegative() || purgeInterval.isZero()) {
      throw new IllegalArgumentException("purgeInterval must be positive, was " + purgeInterval);
    }
    if (maxPerPunctuation < 1) {
      throw new IllegalArgumentException("maxPerPunctuation must be at least 1, was " + maxPerPunctuation);
    }
  }

  /** Defaults: 64 KiB arguments, replies to tool-results[.suffix], checks every 1 s and 60 s. */
  public static LedgerConfig of(ToolPolicies policies, String schemaRegistryUrl) {
    return new LedgerConfig(
        policies, schemaRegistryUrl, DEFAULT_MAX_ARGUMENTS_BYTES, DEFAULT_REPLY_TOPICS,
        Duration.ofSeconds(1), Duration.ofSeconds(60), 1000, LedgerObserver.NONE);
  }

  public LedgerConfig withMaxArgumentsBytes(int bytes) {
    return new LedgerConfig(policies, schemaRegistryUrl, bytes, replyTopics, pendingCheckInterval, purgeInterval, maxPerPunctuation, observer);
  }

  public LedgerConfig withMaxPerPunctuation(int max) {
    return new LedgerConfig(policies, schemaRegistryUrl, maxArgumentsBytes, replyTopics, pendingCheckInterval, purgeInterval, max, observer);
  }

  public LedgerConfig withObserver(LedgerObserver listener) {
    return new LedgerConfig(policies, schemaRegistryUrl, maxArgumentsBytes, replyTopics, pendingCheckInterval, purgeInterval, maxPerPunctuation, listener);
  }
}
