package dev.effectledger.schema;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * Builds replies, for the ledger and for the executor that answers a settled key in its outcome's
 * transaction: one format, built here. A reply never carries arguments; only a matching key sees a
 * stored result.
 */
public final class Replies {

  private Replies() {}

  /** The entry's current answer: its result, its error, or that it is in flight. */
  public static ToolResult of(LedgerEntry entry, boolean replayed) {
    ResultStatus status =
        switch (entry.getState()) {
          case PENDING -> ResultStatus.IN_FLIGHT;
          case SUCCEEDED -> ResultStatus.SUCCEEDED;
          case FAILED -> ResultStatus.FAILED;
          case UNKNOWN -> ResultStatus.UNKNOWN;
        };
    return ToolResult.newBuilder()
        .setIdempotencyKey(entry.getIdempotencyKey())
        .setTenant(entry.getTenant())
        .setTool(entry.getTool())
        .setStatus(status)
        .setResultJson(entry.getResultJson())
        .setError(entry.getError())
        .setReplayed(replayed)
        .setAttempts(entry.getAttempts())
        .setFirstSeenAt(entry.getFirstSeenAt())
        .setCompletedAt(entry.getCompletedAt())
        .setEffectId(entry.getEffectId())
        .build();
  }

  /**
   * The final answer of the key of {@code dispatch} settled by {@code outcome} (SUCCEEDED or
   * FAILED), as the executor publishes it in the outcome's transaction: the reply the ledger would
   * build from its entry once the outcome completed it ({@link #of}, with {@link #storedResult} and
   * {@link #settledError}), its completion time the outcome's.
   */
  public static ToolResult settled(Dispatch dispatch, Outcome outcome) {
    boolean succeeded = outcome.getStatus() == OutcomeStatus.SUCCEEDED;
    return ToolResult.newBuilder()
        .setIdempotencyKey(dispatch.getIdempotencyKey())
        .setTenant(dispatch.getTenant())
        .setTool(dispatch.getTool())
        .setStatus(
            succeeded
                ? ResultStatus.SUCCEEDED
                : isPartial(outcome) ? ResultStatus.UNKNOWN : ResultStatus.FAILED)
        .setResultJson(storedResult(outcome.getResultJson()))
        .setError(settledError(outcome))
        .setReplayed(false)
        .setAttempts(dispatch.getAttempt())
        .setFirstSeenAt(
            dispatch.getFirstSeenAt() == null
                ? dispatch.getDispatchedAt()
                : dispatch.getFirstSeenAt())
        .setCompletedAt(outcome.getCompletedAt())
        .setEffectId(outcome.getEffectId())
        .build();
  }

  /**
   * The error a settling outcome stores: none for a success, the executor's own for a partial
   * success, {@code EFFECT_FAILED} naming the executor's for a failure.
   */
  public static ErrorInfo settledError(Outcome outcome) {
    if (outcome.getStatus() == OutcomeStatus.SUCCEEDED) {
      return null;
    }
    if (isPartial(outcome)) {
      return outcome.getError();
    }
    return ErrorCode.EFFECT_FAILED.toError(detail(outcome, "the downstream refused the request"));
  }

  /**
   * A multi-write tool's partial outcome: status FAILED (what a ledger of an earlier release, which
   * does not know it, takes as final and never retries) with error code {@code PARTIAL_SUCCESS}
   * and, as its result, the report of which writes happened. The ledger holds the key as UNKNOWN
   * for an operator; its replies say UNKNOWN with that error and report.
   */
  public static boolean isPartial(Outcome outcome) {
    return outcome.getStatus() == OutcomeStatus.FAILED
        && outcome.getError() != null
        && ErrorCode.PARTIAL_SUCCESS.name().equals(outcome.getError().getCode());
  }

  /**
   * The result a settling outcome stores and replies with. One too large (the reply and the
   * changelog record must stay under a producer's {@code max.request.size}) becomes a marker naming
   * its size and SHA-256. Executors cut results before they publish; this guards outcomes from
   * other producers.
   */
  public static String storedResult(String resultJson) {
    if (resultJson == null || resultJson.length() <= DeadLetters.MAX_VALUE_BYTES / 4) {
      return resultJson; // at most 4 UTF-8 bytes a char: certainly small enough
    }
    byte[] bytes = resultJson.getBytes(StandardCharsets.UTF_8);
    return bytes.length <= DeadLetters.MAX_VALUE_BYTES
        ? resultJson
        : "{\"effectledger\":\"RESULT_TOO_LARGE\",\"bytes\":"
            + bytes.length
            + ",\"sha256\":\""
            + DeadLetters.sha256(bytes)
            + "\"}";
  }

  /** A refusal that reveals nothing stored under the key. */
  public static ToolResult rejected(
      String key, String tenant, String tool, ErrorInfo error, long firstSeenAt) {
    return ToolResult.newBuilder()
        .setIdempotencyKey(key)
        .setTenant(tenant)
        .setTool(tool)
        .setStatus(ResultStatus.REJECTED)
        .setError(error)
        .setFirstSeenAt(Instant.ofEpochMilli(firstSeenAt))
        .build();
  }

  /** Retries ran out and the effect provably did not happen; the key was released. */
  public static ToolResult released(LedgerEntry entry, Outcome outcome) {
    return ToolResult.newBuilder(of(entry, false))
        .setStatus(ResultStatus.FAILED)
        .setError(
            ErrorCode.RETRIES_EXHAUSTED.toError(
                detail(outcome, "retries exhausted without effect")))
        .setCompletedAt(outcome.getCompletedAt())
        .build();
  }

  /** The answer to a read tool's outcome, which has no ledger entry. */
  public static ToolResult passThrough(Outcome outcome, long firstSeenAt) {
    boolean succeeded = outcome.getStatus() == OutcomeStatus.SUCCEEDED;
    ErrorInfo error =
        succeeded
            ? null
            : outcome.getStatus() == OutcomeStatus.FAILED
                ? ErrorCode.EFFECT_FAILED.toError(detail(outcome, "the read failed"))
                : ErrorCode.RETRIES_EXHAUSTED.toError(detail(outcome, "the read did not complete"));
    return ToolResult.newBuilder()
        .setIdempotencyKey(outcome.getIdempotencyKey())
        .setTenant(outcome.getTenant())
        .setTool(outcome.getTool())
        .setStatus(succeeded ? ResultStatus.SUCCEEDED : ResultStatus.FAILED)
        .setResultJson(outcome.getResultJson())
        .setError(error)
        .setAttempts(outcome.getAttempt())
        .setFirstSeenAt(Instant.ofEpochMilli(firstSeenAt))
        .setCompletedAt(outcome.getCompletedAt())
        .setEffectId(outcome.getEffectId())
        .build();
  }

  /** The executor's own error message when it sent one, else {@code fallback}. */
  public static String detail(Outcome outcome, String fallback) {
    return outcome.getError() == null
        ? fallback
        : outcome.getError().getCode() + ": " + outcome.getError().getMessage();
  }
}
