package dev.effectledger.topology.internal;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Instant;

/** Builds replies. A reply never carries arguments; only a matching key sees a stored result. */
final class Replies {

  private Replies() {}

  /** The entry's current answer: its result, its error, or that it is in flight. */
  static ToolResult of(LedgerEntry entry, boolean replayed) {
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

  /** A refusal that reveals nothing stored under the key. */
  static ToolResult rejected(
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
  static ToolResult released(LedgerEntry entry, Outcome outcome) {
    return ToolResult.newBuilder(of(entry, false))
        .setStatus(ResultStatus.FAILED)
        .setError(
            ErrorCode.RETRIES_EXHAUSTED.toError(
                detail(outcome, "retries exhausted without effect")))
        .setCompletedAt(outcome.getCompletedAt())
        .build();
  }

  /** The answer to a read tool's outcome, which has no ledger entry. */
  static ToolResult passThrough(Outcome outcome, long firstSeenAt) {
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
  static String detail(Outcome outcome, String fallback) {
    return outcome.getError() == null
        ? fallback
        : outcome.getError().getCode() + ": " + outcome.getError().getMessage();
  }
}
