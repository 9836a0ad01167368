package dev.effectledger.client;

import java.util.Objects;

/**
 * Where in an agent run a tool call happens: the structural context its key is derived from. It
 * comes from the orchestrator (the durable run and its logical step), never from the model and
 * never from a fresh random id, so a retry at any layer derives the same key.
 *
 * @param tenant the tenant the run belongs to
 * @param runId the durable run (workflow execution) id, stable across crash-resume
 * @param stepId the logical step within the run, stable across replays of the run
 * @param businessScope what the effect is about (customer:42, order:A-17); empty when none
 */
public record StepContext(String tenant, String runId, String stepId, String businessScope) {

  public StepContext {
    requireText(tenant, "tenant");
    requireText(runId, "runId");
    requireText(stepId, "stepId");
    Objects.requireNonNull(businessScope, "businessScope (use \"\" for none)");
  }

  public static StepContext of(String tenant, String runId, String stepId) {
    return new StepContext(tenant, runId, stepId, "");
  }

  public StepContext withScope(String scope) {
    return new StepContext(tenant, runId, stepId, scope);
  }

  private static void requireText(String value, String name) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(name + " must be set: it is part of the idempotency key");
    }
  }
}
