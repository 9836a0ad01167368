package dev.effectledger.policy;

/** What the ledger answers to a duplicate of an intent that is still PENDING. */
public enum InFlightPolicy {
  /** Reply IN_FLIGHT; the caller keeps waiting for the original's result. */
  COALESCE,
  /** Reply REJECTED with DUPLICATE_IN_FLIGHT (retriable). */
  REFUSE
}
