/**
 * The agent side of Effect Ledger: derive an idempotency key from the intent, publish the intent,
 * and await its result.
 *
 * <p>{@link IdempotencyKeys} derives keys as {@code docs/key-derivation.md} specifies, so Python
 * and TypeScript runtimes can derive the same keys. Canonical JSON is RFC 8785 (JCS), computed by
 * {@code io.github.erdtman:java-json-canonicalization} (through {@code
 * dev.effectledger.schema.ArgumentsHash}, which the ledger uses to check each intent's hash), the
 * reference implementation by the RFC's author; Jackson only removes the volatile fields before it.
 *
 * <p>{@link ToolCallClient} publishes {@code ToolIntent}s and completes each call from the reply
 * topic, reading only the partitions that hold its keys.
 */
package dev.effectledger.client;
