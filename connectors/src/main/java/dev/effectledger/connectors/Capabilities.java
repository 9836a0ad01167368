package dev.effectledger.connectors;

/**
 * What a connector's downstream guarantees.
 *
 * @param honoursKeys the downstream dedups requests by the key it is sent, so a repeat cannot act
 *     twice (an {@code Idempotency-Key} API)
 * @param transactional the effect and its dedup record commit atomically (a database transaction, a
 *     Kafka transaction), so a repeat cannot act twice
 * @param supportsLookup {@link Connector#lookup} can tell whether a key's effect happened
 */
public record Capabilities(boolean honoursKeys, boolean transactional, boolean supportsLookup) {

  /** True when sending the same key again cannot cause a second effect. */
  public boolean safeToRepeat() {
    return honoursKeys || transactional;
  }
}
