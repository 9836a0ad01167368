package dev.effectledger.connectors.reconcile;

/**
 * One tool's reconciliation figures.
 *
 * @param confirmed completed entries whose effect the downstream confirmed
 * @param missingEffect completed entries the downstream has no effect for
 * @param heldFoundEffect UNKNOWN entries whose effect was found: completed as SUCCEEDED
 * @param heldNoEffect UNKNOWN entries with no effect downstream: released for a retry
 * @param heldUnresolved UNKNOWN entries the downstream could not answer for (no lookup,
 *     unavailable)
 * @param effectWithoutEntry effects the downstream lists whose key the ledger's audit never saw;
 *     counted only for connectors that can list their effects ({@code Connector#effectKeys})
 */
public record ToolReport(
    int confirmed,
    int missingEffect,
    int heldFoundEffect,
    int heldNoEffect,
    int heldUnresolved,
    int effectWithoutEntry) {

  static final ToolReport EMPTY = new ToolReport(0, 0, 0, 0, 0, 0);

  ToolReport(
      int confirmed, int missingEffect, int heldFoundEffect, int heldNoEffect, int heldUnresolved) {
    this(confirmed, missingEffect, heldFoundEffect, heldNoEffect, heldUnresolved, 0);
  }

  ToolReport plus(ToolReport other) {
    return new ToolReport(
        confirmed + other.confirmed,
        missingEffect + other.missingEffect,
        heldFoundEffect + other.heldFoundEffect,
        heldNoEffect + other.heldNoEffect,
        heldUnresolved + other.heldUnresolved,
        effectWithoutEntry + other.effectWithoutEntry);
  }
}
