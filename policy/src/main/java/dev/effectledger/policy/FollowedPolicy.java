package dev.effectledger.policy;

import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.Topics;
import java.time.Duration;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tool policy a gateway serves: its own tools.yaml until the applied policy ({@code
 * effectledger tools apply}) is read from {@value Topics#POLICY}, then each newer version as it
 * comes, without a restart. The HTTP gateway and the MCP gateway follow the policy with it. An
 * executor follows it its own way ({@code EffectExecutor.followPolicy}): it may refuse a version it
 * cannot run safely and keep the one in use, and makes connectors for each version it takes.
 */
public final class FollowedPolicy implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(FollowedPolicy.class);

  private final String who;
  private volatile ToolPolicies policies;
  private volatile long version;
  private volatile PolicyFeed feed;

  private FollowedPolicy(String who, ToolPolicies seed) {
    this.who = who;
    this.policies = seed;
  }

  /** {@code seed} (the file's policies), not following tool-policy: a gateway that only lists. */
  public static FollowedPolicy fixed(String who, ToolPolicies seed) {
    return new FollowedPolicy(who, seed);
  }

  /**
   * {@code seed} until tool-policy holds an applied policy, read with {@code kafka}'s connection
   * settings on a thread named {@code threadName}; {@code who} names the follower in the log line
   * of each version applied.
   */
  public static FollowedPolicy start(
      Properties kafka, ToolPolicies seed, String who, String threadName) {
    FollowedPolicy followed = new FollowedPolicy(who, seed);
    followed.feed = PolicyFeed.start(kafka, followed::read, threadName);
    return followed;
  }

  /** The policies served now. */
  public ToolPolicies policies() {
    return policies;
  }

  /** The applied policy's version served now; 0: the file's. */
  public long version() {
    return version;
  }

  /**
   * Waits until what tool-policy held when following started has been read (at once when not
   * following).
   *
   * @return false when {@code wait} passed first
   */
  public boolean awaitCurrent(Duration wait) throws InterruptedException {
    PolicyFeed following = feed;
    return following == null || following.awaitCurrent(wait);
  }

  private void read(byte[] document) {
    AppliedPolicy applied = AppliedPolicy.fromJson(document);
    if (applied.version() > version) {
      policies = applied.policies();
      version = applied.version();
      log.info("{} applies tool policy version {}", who, applied.version());
    }
  }

  @Override
  public void close() {
    PolicyFeed following = feed;
    if (following != null) {
      following.close();
    }
  }
}
