package dev.effectledger.client;

import dev.effectledger.schema.ToolResult;

/**
 * The ledger's final reply as a {@link CallResult}: one mapping for every client (over Kafka here,
 * over the HTTP gateway in the demo's agent).
 */
public final class CallResults {

  private CallResults() {}

  /**
   * {@code reply} must be final (not IN_FLIGHT): the reply listener completes calls with final
   * replies only.
   */
  public static CallResult of(ToolResult reply) {
    String key = reply.getIdempotencyKey();
    return switch (reply.getStatus()) {
      case SUCCEEDED ->
          new CallResult.Succeeded(
              key,
              reply.getResultJson(),
              reply.getEffectId(),
              reply.getReplayed(),
              reply.getAttempts());
      case FAILED -> new CallResult.Failed(key, error(reply), reply.getReplayed());
      case UNKNOWN ->
          new CallResult.HeldUnknown(key, error(reply), reply.getReplayed(), reply.getResultJson());
      case REJECTED -> new CallResult.Rejected(key, error(reply));
      case IN_FLIGHT ->
          throw new IllegalArgumentException(
              "an in-flight notice for key " + key + " is not an answer");
    };
  }

  /**
   * The reply's error; every FAILED, UNKNOWN and REJECTED reply of the ledger carries one, a
   * foreign producer's may not.
   */
  private static CallError error(ToolResult reply) {
    return reply.getError() != null
        ? CallError.of(reply.getError())
        : new CallError(
            reply.getStatus().name(),
            "the reply named no error",
            false,
            "Report the reply's producer: the ledger"
                + " always names the error of a "
                + reply.getStatus()
                + " reply.");
  }
}
