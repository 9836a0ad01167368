package dev.effectledger.policy;

import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/** What kind of effect a tool has; chooses the ledger's defaults for it. */
public enum ToolClass {
  /** No effect: passes straight to dispatch, no ledger entry, no dedup. */
  READ("read", Duration.ZERO),
  /** The downstream is idempotent on the key (a resource id): a re-dispatch cannot act twice. */
  WRITE_IDEMPOTENT("write-idempotent", Duration.ofHours(24)),
  /** A write the downstream may repeat: high value, longer window, ambiguity is held. */
  WRITE_NON_IDEMPOTENT("write-non-idempotent", Duration.ofDays(7)),
  /** Cannot be undone (money moved, message sent): longest window, never re-dispatched blind. */
  IRREVERSIBLE("irreversible", Duration.ofDays(30));

  private final String yamlName;
  private final Duration defaultWindow;

  ToolClass(String yamlName, Duration defaultWindow) {
    this.yamlName = yamlName;
    this.defaultWindow = defaultWindow;
  }

  /** The name used in tools.yaml. */
  public String yamlName() {
    return yamlName;
  }

  /** Dedup window used when the policy names none. */
  public Duration defaultWindow() {
    return defaultWindow;
  }

  /** Re-dispatching with the same key is safe by default only where the downstream dedups it. */
  public AmbiguityPolicy defaultOnAmbiguous() {
    return this == WRITE_IDEMPOTENT || this == READ
        ? AmbiguityPolicy.REDISPATCH
        : AmbiguityPolicy.HOLD;
  }

  public static Optional<ToolClass> fromYaml(String name) {
    return Arrays.stream(values()).filter(c -> c.yamlName.equals(name)).findFirst();
  }
}
