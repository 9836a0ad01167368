package dev.effectledger.topology.internal;

import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles PENDING entries from executors' outcomes. Only the outcome of the current attempt of the
 * current life of the key can release or hold it; a success or failure from any attempt settles it,
 * since the effect did happen (or was refused). Anything else is late and only audited.
 *
 * <p>A key released after a provably effect-free attempt is forgotten, and when it is sent again it
 * starts a new life whose attempts count from 1 again. A retryable outcome of the earlier life (a
 * reconciler's resolution made from a stale view of tool-audit, an executor's repeat) must not
 * release the new life while its effect is in flight: the agent would send again, a third life
 * would run, and the action would take effect twice. Outcomes therefore name the life they answer
 * ({@code incarnation}, echoed from the dispatch or the held entry's audit event); one that names
 * another life is late. An outcome or entry from a release before the field matches by attempt
 * alone.
 */
public final class OutcomeProcessor implements Processor<String, Outcome, Object, Object> {
  private static final Logger log = LoggerFactory.getLogger(OutcomeProcessor.class);

  private final LedgerConfig config;
  private final LivePolicies live;
  private LedgerActions actions;

  public OutcomeProcessor(LedgerConfig config, LivePolicies live) {
    this.config = config;
    this.live = live;
  }

  @Override
  public void init(ProcessorContext<Object, Object> context) {
    actions = LedgerActions.open(context, config, live);
  }

  @Override
  public void process(Record<String, Outcome> record) {
    Outcome outcome = record.value();
    if (outcome == null) {
      return;
    }
    // the ledger settling the key, a child of the executor's attempt (the outcome's headers)
    Context parent = Traces.extract(record.headers());
    Span span =
        Traces.continuedAttempt(
            "effectledger settle",
            parent,
            SpanKind.CONSUMER,
            outcome.getTool(),
            outcome.getIdempotencyKey(),
            outcome.getTenant(),
            outcome.getAttempt());
    if (span.isRecording()) {
      span.setAttribute(Traces.OUTCOME, outcome.getStatus().name());
    }
    try (Scope scope = Traces.enter(span, parent)) {
      settleTraced(record, outcome);
    } finally {
      span.end();
    }
  }

  private void settleTraced(Record<String, Outcome> record, Outcome outcome) {
    long now = record.timestamp();
    LedgerEntry entry =
        actions.ledger().get(LedgerStore.key(outcome.getTenant(), outcome.getIdempotencyKey()));
    if (entry == null
        && actions.policies().forTool(outcome.getTool()).map(p -> !p.isLedgered()).orElse(false)) {
      String replyTopic =
          outcome.getReplyTopic() == null ? Topics.RESULTS : outcome.getReplyTopic();
      actions.outputs().reply(Replies.passThrough(outcome, now), replyTopic, now);
      return;
    }
    ToolPolicy policy = actions.policyOf(outcome.getTool());
    if (isSuperseded(outcome)) {
      late(outcome, entry, now); // a fenced dispatch that did not run: evidence of nothing
    } else if (entry == null && isReinstatable(outcome)) {
      actions.settlements().reinstate(policy, outcome, now);
    } else if (entry != null && entry.getState() == LedgerState.PENDING) {
      settle(entry, policy, outcome, now);
    } else if (entry != null && entry.getState() == LedgerState.UNKNOWN) {
      reconcile(entry, policy, outcome, now);
    } else {
      late(outcome, entry, now);
    }
  }

  private void settle(LedgerEntry entry, ToolPolicy policy, Outcome outcome, long now) {
    boolean current = isCurrent(outcome, entry);
    if (Replies.isPartial(outcome)) {
      actions.settlements().holdPartial(entry, outcome, now);
    } else if (isDefinitive(outcome)) {
      actions.settlements().complete(entry, policy, outcome, now);
    } else if (!current) {
      late(outcome, entry, now);
    } else if (outcome.getStatus() == OutcomeStatus.RETRYABLE) {
      actions.release(entry, outcome, now);
    } else if (policy.mayRedispatchAfter(entry.getAttempts())) {
      actions.redispatch(entry, policy, now);
    } else {
      actions.hold(
          entry,
          ErrorCode.AMBIGUOUS_OUTCOME,
          Replies.detail(outcome, "the effect may have happened"),
          now);
    }
  }

  /**
   * An UNKNOWN entry leaves only on evidence: a success or failure settles it; a retryable outcome
   * for its current attempt (reconciliation found no effect) releases it. Anything else is late.
   */
  private void reconcile(LedgerEntry entry, ToolPolicy policy, Outcome outcome, long now) {
    if (Replies.isPartial(outcome)) {
      late(outcome, entry, now); // held already; a partial report changes nothing
    } else if (isDefinitive(outcome)) {
      actions.settlements().complete(entry, policy, outcome, now);
    } else if (outcome.getStatus() == OutcomeStatus.RETRYABLE && isCurrent(outcome, entry)) {
      actions.release(entry, outcome, now);
    } else {
      late(outcome, entry, now);
    }
  }

  /** The outcome answers the entry's latest attempt in its current life. */
  static boolean isCurrent(Outcome outcome, LedgerEntry entry) {
    return outcome.getAttempt() == entry.getAttempts()
        && (outcome.getIncarnation() == null
            || entry.getIncarnation() == null
            || outcome.getIncarnation().equals(entry.getIncarnation()));
  }

  /**
   * A success for a key with no entry: a life released on "no effect" whose dispatch acted after
   * all (a key-honouring lane runs a queued dispatch of a released life; the next life reuses its
   * effect key, so the downstream answers both with one effect). It names its life and carries the
   * arguments hash that owns the key; from an executor before those were echoed, it is only
   * audited.
   */
  private static boolean isReinstatable(Outcome outcome) {
    return outcome.getStatus() == OutcomeStatus.SUCCEEDED
        && outcome.getIncarnation() != null
        && outcome.getArgumentsHash() != null
        && outcome.getActor() == null;
  }

  /** An executor's answer to a dispatch of a released life that it did not run. */
  private static boolean isSuperseded(Outcome outcome) {
    return outcome.getError() != null
        && ErrorCode.SUPERSEDED.name().equals(outcome.getError().getCode());
  }

  private static boolean isDefinitive(Outcome outcome) {
    return outcome.getStatus() == OutcomeStatus.SUCCEEDED
        || outcome.getStatus() == OutcomeStatus.FAILED;
  }

  private void late(Outcome outcome, LedgerEntry entry, long now) {
    boolean doubleEffect = isSecondEffect(outcome, entry);
    if (doubleEffect) {
      log.error(
          "Key {} of tool {} succeeded with effect {} and now reports effect {} for effect key {}: the action took"
              + " effect twice downstream. Reconcile it with the downstream; check that its executors run this release.",
          outcome.getIdempotencyKey(),
          outcome.getTool(),
          entry.getEffectId(),
          outcome.getEffectId(),
          entry.getEffectKey());
      config
          .observer()
          .doubleEffect(
              outcome.getTool(),
              outcome.getTenant(),
              outcome.getIdempotencyKey(),
              entry.getEffectId(),
              outcome.getEffectId());
    }
    actions
        .outputs()
        .audit(
            outcome.getIdempotencyKey(),
            outcome.getEffectKey(),
            outcome.getEffectId(),
            outcome.getTenant(),
            outcome.getTool(),
            AuditType.LATE_OUTCOME,
            entry == null ? null : entry.getState(),
            outcome.getAttempt(),
            doubleEffect
                ? ErrorCode.DOUBLE_EFFECT.name()
                : isSuperseded(outcome) ? ErrorCode.SUPERSEDED.name() : outcome.getStatus().name(),
            now);
  }

  /**
   * A success naming another effect id than the one the key succeeded with, for the same effect key
   * (a bypass runs under another): evidence that the action acted twice, not a routine duplicate (a
   * redelivered dispatch answered by the downstream's dedup or a lookup names the same effect).
   */
  private static boolean isSecondEffect(Outcome outcome, LedgerEntry entry) {
    return entry != null
        && entry.getState() == LedgerState.SUCCEEDED
        && outcome.getStatus() == OutcomeStatus.SUCCEEDED
        && entry.getEffectId() != null
        && outcome.getEffectId() != null
        && !entry.getEffectId().equals(outcome.getEffectId())
        && (outcome.getEffectKey() == null || outcome.getEffectKey().equals(entry.getEffectKey()));
  }
}
