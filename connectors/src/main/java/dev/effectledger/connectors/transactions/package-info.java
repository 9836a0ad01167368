/**
 * Hanging transactions on Effect Ledger's own path, found and ended: {@link
 * dev.effectledger.connectors.transactions.HangingTransactions} (what the coordinator decided, and
 * the markers that end a transaction as it did) and {@link
 * dev.effectledger.connectors.transactions.HangingSweep} (the periodic sweep). Executors run it on
 * their lanes; the processor runs it on the ledger's partitions (docs/operations.md).
 */
package dev.effectledger.connectors.transactions;
