package dev.effectledger.policy;

/**
 * What the ledger does when an effect may have happened but nobody can tell: an AMBIGUOUS outcome,
 * or a PENDING entry whose timeout passed with no outcome.
 */
public enum AmbiguityPolicy {
  /** Dispatch again with the same key, up to maxAttempts; safe only where the downstream dedups. */
  REDISPATCH,
  /** Move to UNKNOWN and reply so; the entry waits for reconciliation and is never purged. */
  HOLD
}
