package dev.effectledger.topology;

import dev.effectledger.schema.AuditType;
import java.time.Duration;

/**
 * Hears every ledger decision, for metrics. Called on stream threads inside processing: keep it
 * cheap and never throw. Under exactly_once_v2 a decision in a transaction that is later aborted
 * and re-processed is heard twice; counts are for operations, not for accounting.
 */
public interface LedgerObserver {

  LedgerObserver NONE = new LedgerObserver() {};

  /**
   * The ledger decided {@code type} for an event of {@code tool} (the same types as tool-audit).
   */
  default void decided(String tool, AuditType type) {}

  /** An outcome settled a key of {@code tool}, {@code sinceDispatch} after its latest dispatch. */
  default void settled(String tool, Duration sinceDispatch) {}

  /**
   * A key of {@code tool} that succeeded with one effect id got an outcome naming another for the
   * same effect key: the action took effect twice downstream. Never routine; audited as {@code
   * LATE_OUTCOME} with code {@code DOUBLE_EFFECT}.
   */
  default void doubleEffect(String tool) {}

  /**
   * As {@link #doubleEffect(String)}, naming the key and both effect ids, for an operator to see
   * which action acted twice (the console lists the latest). Calls {@link #doubleEffect(String)}
   * unless overridden.
   */
  default void doubleEffect(
      String tool, String tenant, String key, String firstEffectId, String secondEffectId) {
    doubleEffect(tool);
  }
}
