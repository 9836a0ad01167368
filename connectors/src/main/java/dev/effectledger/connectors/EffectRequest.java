package dev.effectledger.connectors;

import java.util.Objects;

/**
 * One effect to perform.
 *
 * @param effectKey the key to pass downstream; the same on every retry and re-dispatch
 * @param idempotencyKey the ledger key of the intent
 * @param tenant tenant of the intent
 * @param tool tool name
 * @param arguments canonical JSON arguments
 * @param attempt the ledger's dispatch attempt, starting at 1
 * @param traceId tracing id, or null
 */
public record EffectRequest(
    String effectKey,
    String idempotencyKey,
    String tenant,
    String tool,
    String arguments,
    int attempt,
    String traceId) {

  public EffectRequest {
    Objects.requireNonNull(effectKey, "effectKey");
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(tool, "tool");
    Objects.requireNonNull(arguments, "arguments");
  }
}
