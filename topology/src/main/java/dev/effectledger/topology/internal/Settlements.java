package dev.effectledger.topology.internal;

import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.topology.LedgerObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The transitions a definitive outcome makes, from an executor or a reconciler: a completion
 * (SUCCEEDED or FAILED, its window started), a partial success held for an operator, and the
 * reinstatement of a released life whose effect happened after all. Releases, holds and
 * re-dispatches, which punctuations make too, stay in {@link LedgerActions}.
 */
final class Settlements {

  private final LedgerActions actions;
  private final Ledger ledger;
  private final Outputs outputs;
  private final LedgerObserver observer;

  Settlements(LedgerActions actions, Ledger ledger, Outputs outputs, LedgerObserver observer) {
    this.actions = actions;
    this.ledger = ledger;
    this.outputs = outputs;
    this.observer = observer;
  }

  /** SUCCEEDED or FAILED: store the answer, reply, and start the window. */
  void complete(LedgerEntry entry, ToolPolicy policy, Outcome outcome, long now) {
    String storeKey = LedgerActions.storeKey(entry);
    boolean succeeded = outcome.getStatus() == OutcomeStatus.SUCCEEDED;
    LedgerState before = entry.getState();
    entry.setState(succeeded ? LedgerState.SUCCEEDED : LedgerState.FAILED);
    entry.setResultJson(Replies.storedResult(outcome.getResultJson()));
    entry.setError(Replies.settledError(outcome));
    entry.setEffectId(outcome.getEffectId());
    entry.setCompletedAt(Instant.ofEpochMilli(now));
    entry.setArguments("");
    observer.settled(
        entry.getTool(),
        Duration.ofMillis(
            Math.max(0, actions.wallClock() - entry.getLastDispatchedAt().toEpochMilli())));
    storeAndAnswer(entry, outcome, now);
    ledger.moved(storeKey, entry.getTool(), before, entry.getState());
    ledger.index(Ledger.Deadline.EXPIRY, now + policy.window().toMillis(), storeKey);
    actions.audit(
        entry, succeeded ? AuditType.COMPLETED : AuditType.FAILED, null, outcome.getActor(), now);
  }

  /**
   * A success of a life this ledger released (its entry is gone and no newer life has begun): the
   * effect happened after all, so the entry comes back as SUCCEEDED with it, its window counted
   * from now, and every later intent of the key gets that result replayed instead of running it
   * again. Audited as {@code COMPLETED} with code {@code REINSTATED}. The released life's callers
   * were answered by the release; nobody waits on this answer.
   */
  void reinstate(ToolPolicy policy, Outcome outcome, long now) {
    LedgerEntry entry =
        LedgerEntry.newBuilder()
            .setIdempotencyKey(outcome.getIdempotencyKey())
            .setTenant(outcome.getTenant())
            .setRunId("")
            .setStepId("")
            .setTool(outcome.getTool())
            .setEffectKey(
                outcome.getEffectKey() == null
                    ? outcome.getIdempotencyKey()
                    : outcome.getEffectKey())
            .setArgumentsHash(outcome.getArgumentsHash())
            .setArguments("")
            .setState(LedgerState.SUCCEEDED)
            .setAttempts(outcome.getAttempt())
            .setFirstSeenAt(Instant.ofEpochMilli(now))
            .setLastDispatchedAt(Instant.ofEpochMilli(now))
            .setCompletedAt(Instant.ofEpochMilli(now))
            .setResultJson(Replies.storedResult(outcome.getResultJson()))
            .setEffectId(outcome.getEffectId())
            .setReplyTopic(outcome.getReplyTopic())
            .setIncarnation(outcome.getIncarnation())
            .build();
    String storeKey = LedgerActions.storeKey(entry);
    ledger.put(entry);
    ledger.moved(storeKey, entry.getTool(), null, LedgerState.SUCCEEDED);
    ledger.index(Ledger.Deadline.EXPIRY, now + policy.window().toMillis(), storeKey);
    actions.audit(entry, AuditType.COMPLETED, "REINSTATED", outcome.getActor(), now);
  }

  /**
   * Stores an entry an executor's outcome settled and answers it. The dispatch's own topics the
   * executor did not answer get the original answer. Duplicates that arrived since the dispatch,
   * which no executor knew of, get it as a replay: one may have been told IN_FLIGHT after the
   * executor's answer was committed, and its client waits on; to a client that had the executor's
   * answer already it is the replay a duplicate gets.
   */
  private void storeAndAnswer(LedgerEntry entry, Outcome outcome, long now) {
    List<String> unanswered = LedgerActions.unansweredDispatched(entry, outcome);
    List<String> waiters = new ArrayList<>(entry.getWaiters());
    waiters.removeAll(unanswered);
    entry.setDispatchedTo(new ArrayList<>());
    entry.setWaiters(new ArrayList<>());
    // the life's request id names its final answers, these; every later answer is a replay, so a
    // settled entry keeps no id (some 40 bytes of each stored entry)
    String lifeRequestId = entry.getRequestId();
    entry.setRequestId(null);
    ledger.put(entry);
    ToolResult reply = Replies.of(entry, false);
    unanswered.forEach(topic -> outputs.lifeAnswer(reply, topic, now, lifeRequestId));
    ToolResult replay = Replies.of(entry, true);
    waiters.forEach(topic -> outputs.reply(replay, topic, now));
  }

  /**
   * A multi-write tool's partial outcome: held as UNKNOWN for an operator, never re-dispatched or
   * released by itself, the report of what happened kept as its result and replayed to duplicates
   * (status UNKNOWN, error PARTIAL_SUCCESS with the tool's corrective action). Answered like a
   * completion: the dispatch's topics the executor did not answer, and the duplicates since.
   */
  void holdPartial(LedgerEntry entry, Outcome outcome, long now) {
    LedgerState before = entry.getState();
    entry.setState(LedgerState.UNKNOWN);
    entry.setResultJson(Replies.storedResult(outcome.getResultJson()));
    entry.setError(Replies.settledError(outcome));
    entry.setEffectId(outcome.getEffectId());
    storeAndAnswer(entry, outcome, now);
    ledger.moved(LedgerActions.storeKey(entry), entry.getTool(), before, LedgerState.UNKNOWN);
    actions.audit(entry, AuditType.HELD_UNKNOWN, ErrorCode.PARTIAL_SUCCESS.name(), now);
  }
}
