package dev.effectledger.policy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The ledger's policy for one tool, as read from tools.yaml.
 *
 * @param name tool name as intents carry it
 * @param toolClass what kind of effect the tool has
 * @param window dedup horizon, counted from completion; zero for {@link ToolClass#READ}
 * @param pendingTimeout how long a dispatch may stay silent before it is re-dispatched or held
 * @param onInFlight answer to a duplicate while PENDING
 * @param onAmbiguous what an ambiguous outcome or a pending timeout leads to
 * @param lane dispatch lane; records go to {@code tool-dispatch.<lane>}
 * @param connector connector that executors run for this tool
 * @param maxAttempts dispatch attempts allowed for one key, at least 1
 * @param bypassAllowed whether an operator approval may mint a fresh execution of a completed key
 * @param retry how executors retry one dispatch
 * @param settings the connector's own settings, read by the connector
 * @param key arguments the idempotency key and the arguments hash leave out, and those required
 * @param downstreamKeyWindow how long the downstream keeps the keys it is sent (Stripe: 24 h), or
 *     null when not declared; see {@link RetryHorizon}
 * @param reconcileWithin how soon a key held as UNKNOWN is settled (the reconcile schedule plus its
 *     minimum age), or null when not declared; see {@link RetryHorizon}
 */
public record ToolPolicy(
    String name,
    ToolClass toolClass,
    Duration window,
    Duration pendingTimeout,
    InFlightPolicy onInFlight,
    AmbiguityPolicy onAmbiguous,
    String lane,
    String connector,
    int maxAttempts,
    boolean bypassAllowed,
    RetryPolicy retry,
    JsonNode settings,
    ArgumentRules key,
    Duration downstreamKeyWindow,
    Duration reconcileWithin) {

  /** Characters Kafka allows in a topic name. */
  public static final Pattern LANE = Pattern.compile("[A-Za-z0-9._-]{1,200}");

  /**
   * Lanes whose dispatch topic is another topic's name: {@code tool-dispatch.dlq} is the executors'
   * dead letters.
   */
  public static final Set<String> RESERVED_LANES = Set.of("dlq");

  /** The longest window: ten years. */
  public static final Duration MAX_WINDOW = Duration.ofDays(3650);

  /** The longest pending timeout: a year. */
  public static final Duration MAX_PENDING_TIMEOUT = Duration.ofDays(365);

  public ToolPolicy {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(toolClass, "toolClass");
    Objects.requireNonNull(window, "window");
    Objects.requireNonNull(pendingTimeout, "pendingTimeout");
    Objects.requireNonNull(onInFlight, "onInFlight");
    Objects.requireNonNull(onAmbiguous, "onAmbiguous");
    Objects.requireNonNull(lane, "lane");
    Objects.requireNonNull(connector, "connector");
    Objects.requireNonNull(retry, "retry");
    key = key == null ? ArgumentRules.NONE : key;
    settings = settings == null ? JsonNodeFactory.instance.objectNode() : settings.deepCopy();
    if (toolClass != ToolClass.READ && (window.isNegative() || window.isZero())) {
      throw new IllegalArgumentException(
          "tool " + name + ": window must be positive, was " + window);
    }
    if (pendingTimeout.isNegative() || pendingTimeout.isZero()) {
      throw new IllegalArgumentException(
          "tool " + name + ": pendingTimeout must be positive, was " + pendingTimeout);
    }
    if (!LANE.matcher(lane).matches() || RESERVED_LANES.contains(lane)) {
      throw new IllegalArgumentException(
          "tool " + name + ": lane '" + lane + "' is not a legal topic suffix or is reserved");
    }
    if (window.compareTo(MAX_WINDOW) > 0 || pendingTimeout.compareTo(MAX_PENDING_TIMEOUT) > 0) {
      throw new IllegalArgumentException(
          "tool "
              + name
              + ": window "
              + window
              + " or pendingTimeout "
              + pendingTimeout
              + " is out of range (at most "
              + MAX_WINDOW
              + " and "
              + MAX_PENDING_TIMEOUT
              + ")");
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException(
          "tool " + name + ": maxAttempts must be at least 1, was " + maxAttempts);
    }
    if (toolClass == ToolClass.IRREVERSIBLE && onAmbiguous == AmbiguityPolicy.REDISPATCH) {
      throw new IllegalArgumentException(
          "tool " + name + ": class irreversible conflicts with onAmbiguous redispatch; use hold");
    }
  }

  /**
   * A policy for {@code name} of class {@code toolClass}, with the defaults tools.yaml has: the
   * class's window and ambiguity answer, a 5-minute pending timeout, coalesce in flight, lane
   * {@code default}, connector {@code http}, 3 attempts, no bypass, the default retry, no settings,
   * no key rules.
   */
  public static Builder builder(String name, ToolClass toolClass) {
    return new Builder(name, toolClass);
  }

  /** A builder holding this policy's values, to change some of them. */
  public Builder toBuilder() {
    return new Builder(name, toolClass)
        .window(window)
        .pendingTimeout(pendingTimeout)
        .onInFlight(onInFlight)
        .onAmbiguous(onAmbiguous)
        .lane(lane)
        .connector(connector)
        .maxAttempts(maxAttempts)
        .bypassAllowed(bypassAllowed)
        .retry(retry)
        .settings(settings)
        .key(key)
        .downstreamKeyWindow(downstreamKeyWindow)
        .reconcileWithin(reconcileWithin);
  }

  /** This policy with other connector settings. */
  public ToolPolicy withSettings(String connectorName, JsonNode connectorSettings) {
    return toBuilder().connector(connectorName).settings(connectorSettings).build();
  }

  /** This policy with other key rules. */
  public ToolPolicy withKey(ArgumentRules rules) {
    return toBuilder().key(rules).build();
  }

  /** This policy with another retry policy. */
  public ToolPolicy withRetry(RetryPolicy retryPolicy) {
    return toBuilder().retry(retryPolicy).build();
  }

  /** True when intents of this tool go through the ledger (every class but read). */
  public boolean isLedgered() {
    return toolClass != ToolClass.READ;
  }

  /** Whether a silent or ambiguous dispatch at {@code attempt} may be sent once more. */
  public boolean mayRedispatchAfter(int attempt) {
    return onAmbiguous == AmbiguityPolicy.REDISPATCH && attempt < maxAttempts;
  }

  /** This policy under another tool name, for the unknown-tool default. */
  public ToolPolicy named(String toolName) {
    return toBuilder().name(toolName).build();
  }

  /** Builds a {@link ToolPolicy}; {@link #build()} validates as the record does. */
  public static final class Builder {
    private String name;
    private final ToolClass toolClass;
    private Duration window;
    private Duration pendingTimeout = ToolPolicyLoader.DEFAULT_PENDING_TIMEOUT;
    private InFlightPolicy onInFlight = InFlightPolicy.COALESCE;
    private AmbiguityPolicy onAmbiguous;
    private String lane = ToolPolicyLoader.DEFAULT_LANE;
    private String connector = "http";
    private int maxAttempts = ToolPolicyLoader.DEFAULT_MAX_ATTEMPTS;
    private boolean bypassAllowed;
    private RetryPolicy retry = RetryPolicy.DEFAULT;
    private JsonNode settings;
    private ArgumentRules key = ArgumentRules.NONE;
    private Duration downstreamKeyWindow;
    private Duration reconcileWithin;

    /** How long the downstream keeps the keys it is sent (null: not declared). */
    public Builder downstreamKeyWindow(Duration value) {
      this.downstreamKeyWindow = value;
      return this;
    }

    /** How soon a key held as UNKNOWN is settled by reconciliation (null: not declared). */
    public Builder reconcileWithin(Duration value) {
      this.reconcileWithin = value;
      return this;
    }

    private Builder(String name, ToolClass toolClass) {
      this.name = Objects.requireNonNull(name, "name");
      this.toolClass = Objects.requireNonNull(toolClass, "toolClass");
      this.window = toolClass.defaultWindow();
      this.onAmbiguous = toolClass.defaultOnAmbiguous();
    }

    Builder name(String toolName) {
      this.name = Objects.requireNonNull(toolName, "name");
      return this;
    }

    public Builder window(Duration value) {
      this.window = value;
      return this;
    }

    public Builder pendingTimeout(Duration value) {
      this.pendingTimeout = value;
      return this;
    }

    public Builder onInFlight(InFlightPolicy value) {
      this.onInFlight = value;
      return this;
    }

    public Builder onAmbiguous(AmbiguityPolicy value) {
      this.onAmbiguous = value;
      return this;
    }

    public Builder lane(String value) {
      this.lane = value;
      return this;
    }

    public Builder connector(String value) {
      this.connector = value;
      return this;
    }

    public Builder maxAttempts(int value) {
      this.maxAttempts = value;
      return this;
    }

    public Builder bypassAllowed(boolean value) {
      this.bypassAllowed = value;
      return this;
    }

    public Builder retry(RetryPolicy value) {
      this.retry = value;
      return this;
    }

    public Builder settings(JsonNode value) {
      this.settings = value;
      return this;
    }

    public Builder key(ArgumentRules value) {
      this.key = value;
      return this;
    }

    /** The policy; throws {@link IllegalArgumentException} naming the tool and the bad value. */
    public ToolPolicy build() {
      return new ToolPolicy(
          name,
          toolClass,
          window,
          pendingTimeout,
          onInFlight,
          onAmbiguous,
          lane,
          connector,
          maxAttempts,
          bypassAllowed,
          retry,
          settings,
          key,
          downstreamKeyWindow,
          reconcileWithin);
    }
  }
}
