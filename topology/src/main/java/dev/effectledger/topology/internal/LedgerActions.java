package dev.effectledger.topology.internal;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Traces;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.ProcessingContext;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The ledger's state transitions, each with its outputs. Shared by the intent and outcome
 * processors of one task and by the task's punctuations ({@link LedgerPunctuations}), so every path
 * through a transition emits the same records.
 */
final class LedgerActions {

  /** Distinct reply topics of duplicates an in-flight entry keeps for its final answer. */
  static final int MAX_WAITERS = 64;

  private final Ledger ledger;
  private final Outputs outputs;
  private final LivePolicies.Task policy;
  private final ProcessingContext context;

  /**
   * Under {@code exactly_once_v2} the restored entries say which intents were read before the task
   * started ({@link LivePolicies.Task#intentsReadAtLeast}); under {@code at_least_once} an entry
   * can be ahead of the committed offsets, its intent read again after a release, so they say
   * nothing.
   */
  private final boolean exactlyOnce;

  private final LedgerPunctuations punctuations;
  private final Settlements settlements;

  LedgerActions(
      Ledger ledger,
      Outputs outputs,
      LedgerConfig config,
      LivePolicies.Task policy,
      ProcessingContext context) {
    this.ledger = ledger;
    this.outputs = outputs;
    this.policy = policy;
    this.context = context;
    this.exactlyOnce =
        StreamsConfig.EXACTLY_ONCE_V2.equals(
            String.valueOf(context.appConfigs().get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)));
    this.punctuations = new LedgerPunctuations(this, ledger, policy, context, config, exactlyOnce);
    this.settlements = new Settlements(this, ledger, outputs, config.observer());
  }

  /** The transitions an executor's (or reconciler's) definitive outcome makes. */
  Settlements settlements() {
    return settlements;
  }

  /** The task's punctuations: pending timeouts, the index's rebuild, and purging. */
  LedgerPunctuations punctuations() {
    return punctuations;
  }

  /**
   * The actions of the task {@code context} runs, over its ledger stores, under the task's policy
   * (the one its policy store kept, when the ledger reads policies live).
   */
  static LedgerActions open(
      ProcessorContext<Object, Object> context, LedgerConfig config, LivePolicies live) {
    KeyValueStore<String, LedgerEntry> entries = context.getStateStore(LedgerStore.NAME);
    KeyValueStore<Bytes, byte[]> deadlines = context.getStateStore(LedgerStore.DEADLINES);
    LivePolicies.Task policy = live.task(context.taskId());
    if (config.livePolicy()) {
      PolicyProcessor.restore(context, policy);
    }
    return new LedgerActions(
        new Ledger(entries, deadlines, policy.counts(), policy.cursors()),
        new Outputs(context, config.observer()),
        config,
        policy,
        context);
  }

  /**
   * The task reads the intent at {@code offset} of its intents partition; {@code -1} when its
   * processors start.
   */
  void intentRead(long offset) {
    policy.intentRead(offset);
  }

  /** The policy the task applies now. */
  AppliedPolicy applied() {
    return policy.current();
  }

  ToolPolicies policies() {
    return policy.current().policies();
  }

  Ledger ledger() {
    return ledger;
  }

  Outputs outputs() {
    return outputs;
  }

  /**
   * The policy under which a stored entry of {@code tool} lives. A write tool the file names gets
   * its policy. Any other tool (removed from the file, only ever admitted by {@code unknownTool},
   * or reclassified as read since its entries were written) keeps its entries under the safest
   * terms, never the unknown-tool default's or a read class's: those may have no window or a short
   * one, which would purge a completed effect early, or re-dispatch a pending one. The safest
   * terms: the longest window (30 days, or the unknown-tool window when longer), and a silent
   * dispatch is held, never re-dispatched.
   */
  ToolPolicy policyOf(String tool) {
    return policy.current().policies().forEntryOf(tool);
  }

  /** The entry under {@code storeKey}, or null when absent or past its window at {@code now}. */
  LedgerEntry liveEntry(String storeKey, long now) {
    LedgerEntry entry = ledger.get(storeKey);
    if (entry != null && Ledger.isFinal(entry) && expiresAt(entry) <= now) {
      expire(storeKey, entry, now);
      return null;
    }
    return entry;
  }

  /** Bypasses a key's entry remembers, oldest first; older ones drop off. */
  static final int MAX_BYPASSES_REMEMBERED = 32;

  /**
   * Starts a life of the intent's key: a first sight ({@code previous} null) or a bypass of a
   * settled entry ({@code previous}), which remembers the bypasses run so far and this one.
   */
  void start(
      ToolIntent intent,
      ToolPolicy policy,
      String replyTopic,
      String effectKey,
      int attempt,
      LedgerEntry previous,
      long now) {
    LedgerEntry entry =
        LedgerEntry.newBuilder()
            .setIdempotencyKey(intent.getIdempotencyKey())
            .setTenant(intent.getTenant())
            .setRunId(intent.getRunId())
            .setStepId(intent.getStepId())
            .setTool(intent.getTool())
            .setEffectKey(effectKey)
            .setArgumentsHash(intent.getArgumentsHash())
            .setArguments(intent.getArguments())
            .setState(LedgerState.PENDING)
            .setAttempts(attempt - 1)
            .setFirstSeenAt(Instant.ofEpochMilli(now))
            .setLastDispatchedAt(Instant.ofEpochMilli(wallClock()))
            .setReplyTopic(replyTopic)
            // the decision's span: every dispatch of this life is its child, a replay links to it
            .setTraceId(Traces.currentTraceparentOr(intent.getTraceId()))
            .setIncarnation(intentOffset())
            .setRequestId(outputs.answeringId())
            .build();
    if (previous != null) {
      List<String> used = new ArrayList<>(previous.getBypassesUsed());
      used.add(effectKey);
      entry.setBypassesUsed(
          new ArrayList<>(
              used.subList(Math.max(0, used.size() - MAX_BYPASSES_REMEMBERED), used.size())));
    }
    dispatch(entry, policy, AuditType.DISPATCHED, now);
    ledger.moved(
        storeKey(entry),
        entry.getTool(),
        previous == null ? null : previous.getState(),
        LedgerState.PENDING);
  }

  /**
   * The offset of the intent being processed: a new life of a key is started only by an intent, and
   * no two intents of one key share an offset, so it names the life (see {@code
   * LedgerEntry.incarnation}).
   */
  private Long intentOffset() {
    return context.recordMetadata().map(m -> m.offset()).orElse(null);
  }

  /** Sends the entry's next attempt with the same effect key. */
  void redispatch(LedgerEntry entry, ToolPolicy policy, long now) {
    dispatch(entry, policy, AuditType.REDISPATCHED, now);
  }

  private void dispatch(LedgerEntry entry, ToolPolicy policy, AuditType audit, long now) {
    long wallNow = wallClock();
    entry.setState(LedgerState.PENDING);
    entry.setAttempts(entry.getAttempts() + 1);
    entry.setLastDispatchedAt(Instant.ofEpochMilli(wallNow));
    entry.setDispatchedTo(waiting(entry));
    entry.setWaiters(new ArrayList<>());
    String storeKey = storeKey(entry);
    ledger.put(entry);
    ledger.index(Ledger.Deadline.PENDING, wallNow + policy.pendingTimeout().toMillis(), storeKey);
    outputs.dispatch(
        Dispatch.newBuilder()
            .setIdempotencyKey(entry.getIdempotencyKey())
            .setEffectKey(entry.getEffectKey())
            .setTenant(entry.getTenant())
            .setRunId(entry.getRunId())
            .setStepId(entry.getStepId())
            .setTool(entry.getTool())
            .setLane(policy.lane())
            .setArguments(entry.getArguments())
            .setAttempt(entry.getAttempts())
            .setDispatchedAt(Instant.ofEpochMilli(wallNow))
            .setReplyTopic(entry.getReplyTopic())
            .setTraceId(entry.getTraceId())
            .setReplyTopics(entry.getDispatchedTo())
            .setFirstSeenAt(entry.getFirstSeenAt())
            .setIncarnation(entry.getIncarnation())
            .setArgumentsHash(entry.getArgumentsHash())
            .setRequestId(entry.getRequestId())
            .build(),
        now);
    audit(entry, audit, null, now);
  }

  /**
   * Every reply topic waiting for the entry's final answer, once each: the first intent's, those
   * the latest dispatch named, and those of duplicates that arrived since.
   */
  static List<String> waiting(LedgerEntry entry) {
    Set<String> topics = new LinkedHashSet<>();
    topics.add(entry.getReplyTopic());
    topics.addAll(entry.getDispatchedTo());
    topics.addAll(entry.getWaiters());
    return new ArrayList<>(topics);
  }

  /**
   * The reply topics of the latest dispatch that the executor settling the entry with {@code
   * outcome} did not answer in its transaction: all of them for an executor of an earlier release,
   * a reconciler, or an older attempt's executor that knew fewer.
   */
  static List<String> unansweredDispatched(LedgerEntry entry, Outcome outcome) {
    Set<String> topics = new LinkedHashSet<>();
    if (entry.getDispatchedTo().isEmpty()) {
      topics.add(entry.getReplyTopic()); // stored by a ledger of an earlier release
    } else {
      topics.addAll(entry.getDispatchedTo());
    }
    topics.removeAll(outcome.getRepliedTo());
    return new ArrayList<>(topics);
  }

  /**
   * A duplicate from {@code replyTopic} arrived while the entry is in flight: it gets the final
   * answer when the key settles. At most {@link #MAX_WAITERS} distinct topics wait; a duplicate
   * beyond them is answered only on its own topic when it is sent again.
   */
  void attach(LedgerEntry entry, String replyTopic) {
    List<String> waiters = entry.getWaiters();
    if (!waiters.contains(replyTopic) && waiters.size() < MAX_WAITERS) {
      List<String> more = new ArrayList<>(waiters);
      more.add(replyTopic);
      entry.setWaiters(more);
      ledger.put(entry);
    }
  }

  /** A read tool: straight to its lane, no entry, no dedup. */
  void passThrough(ToolIntent intent, ToolPolicy policy, String replyTopic, long now) {
    outputs.passThrough(intent, policy.lane(), replyTopic, wallClock(), now);
  }

  /** RETRYABLE after the executor's last try: no effect happened, so forget the key. */
  void release(LedgerEntry entry, Outcome outcome, long now) {
    String storeKey = storeKey(entry);
    ledger.remove(storeKey);
    ledger.moved(storeKey, entry.getTool(), entry.getState(), null);
    ToolResult reply = Replies.released(entry, outcome);
    if (exactlyOnce && entry.getIncarnation() != null) {
      // The intent that started this life was read, by this task or before the offsets it resumed
      // from, though the index's rebuild may not have met the entry yet.
      policy.intentsReadAtLeast(entry.getIncarnation());
    }
    long intentsRead = policy.intentsRead();
    waiting(entry).forEach(topic -> outputs.releaseReply(reply, topic, now, intentsRead));
    String code =
        outcome.getActor() != null && outcome.getError() != null
            ? outcome.getError().getCode()
            : ErrorCode.RETRIES_EXHAUSTED.name();
    auditRemoved(entry, AuditType.RELEASED, code, outcome.getActor(), now);
  }

  /** The effect may have happened: UNKNOWN, never purged, until reconciled. */
  void hold(LedgerEntry entry, ErrorCode code, String message, long now) {
    LedgerState before = entry.getState();
    entry.setState(LedgerState.UNKNOWN);
    entry.setError(code.toError(message));
    ledger.put(entry);
    ledger.moved(storeKey(entry), entry.getTool(), before, LedgerState.UNKNOWN);
    ToolResult reply = Replies.of(entry, false);
    waiting(entry).forEach(topic -> outputs.reply(reply, topic, now));
    audit(entry, AuditType.HELD_UNKNOWN, code.name(), now);
  }

  void expire(String storeKey, LedgerEntry entry, long now) {
    ledger.remove(storeKey);
    auditRemoved(entry, AuditType.EXPIRED, null, null, now);
  }

  /** The audit event of an entry that leaves the store: no state after it, the life it ended. */
  private void auditRemoved(
      LedgerEntry entry, AuditType type, String code, String actor, long now) {
    outputs.auditEntry(entry, type, null, code, actor, now);
  }

  void audit(LedgerEntry entry, AuditType type, String code, long now) {
    audit(entry, type, code, null, now);
  }

  /** As {@link #audit(LedgerEntry, AuditType, String, long)}, naming the person who decided. */
  void audit(LedgerEntry entry, AuditType type, String code, String actor, long now) {
    outputs.auditEntry(entry, type, entry.getState(), code, actor, now);
  }

  /** Completion time plus the tool's current window. */
  long expiresAt(LedgerEntry entry) {
    return entry.getCompletedAt().toEpochMilli() + policyOf(entry.getTool()).window().toMillis();
  }

  /** When a PENDING entry's latest dispatch times out under {@code policy}. */
  static long pendingDeadline(LedgerEntry entry, ToolPolicy policy) {
    return entry.getLastDispatchedAt().toEpochMilli() + policy.pendingTimeout().toMillis();
  }

  /** When a PENDING entry's latest dispatch times out, under its tool's current policy. */
  long pendingDeadline(LedgerEntry entry) {
    return pendingDeadline(entry, policyOf(entry.getTool()));
  }

  static String storeKey(LedgerEntry entry) {
    return LedgerStore.key(entry.getTenant(), entry.getIdempotencyKey());
  }

  long wallClock() {
    return context.currentSystemTimeMs();
  }
}
