package dev.effectledger.topology.internal;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerObserver;
import dev.effectledger.topology.LivePolicies;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.ProcessingContext;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The ledger's state transitions, each with its outputs. Shared by the intent and outcome
 * processors of one task and by the task's punctuations, so every path through a transition emits
 * the same records.
 */
final class LedgerActions {

  /** Distinct reply topics of duplicates an in-flight entry keeps for its final answer. */
  static final int MAX_WAITERS = 64;

  private final Ledger ledger;
  private final Outputs outputs;
  private final LivePolicies.Task policy;
  private final ProcessingContext context;
  private final int batchSize;
  private final long budgetNanos;
  private final LongSupplier ticker;
  private final LedgerObserver observer;

  /**
   * Under {@code exactly_once_v2} the restored entries say which intents were read before the task
   * started ({@link LivePolicies.Task#intentsReadAtLeast}); under {@code at_least_once} an entry
   * can be ahead of the committed offsets, its intent read again after a release, so they say
   * nothing.
   */
  private final boolean exactlyOnce;

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
    this.batchSize = config.batchSize();
    this.budgetNanos = config.punctuationBudget().toNanos();
    this.ticker = config.ticker();
    this.observer = config.observer();
    this.exactlyOnce =
        StreamsConfig.EXACTLY_ONCE_V2.equals(
            String.valueOf(context.appConfigs().get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)));
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
            .setTraceId(intent.getTraceId())
            .setIncarnation(intentOffset())
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
    outputs.dispatch(
        Dispatch.newBuilder()
            .setIdempotencyKey(intent.getIdempotencyKey())
            .setEffectKey(intent.getIdempotencyKey())
            .setTenant(intent.getTenant())
            .setRunId(intent.getRunId())
            .setStepId(intent.getStepId())
            .setTool(intent.getTool())
            .setLane(policy.lane())
            .setArguments(intent.getArguments())
            .setAttempt(1)
            .setDispatchedAt(Instant.ofEpochMilli(wallClock()))
            .setReplyTopic(replyTopic)
            .setTraceId(intent.getTraceId())
            .build(),
        now);
    outputs.audit(
        intent.getIdempotencyKey(),
        intent.getTenant(),
        intent.getTool(),
        AuditType.PASS_THROUGH,
        null,
        1,
        null,
        now);
  }

  /** SUCCEEDED or FAILED: store the answer, reply, and start the window. */
  void complete(LedgerEntry entry, ToolPolicy policy, Outcome outcome, long now) {
    String storeKey = storeKey(entry);
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
        Duration.ofMillis(Math.max(0, wallClock() - entry.getLastDispatchedAt().toEpochMilli())));
    storeAndAnswer(entry, outcome, now);
    ledger.moved(storeKey, entry.getTool(), before, entry.getState());
    ledger.index(Ledger.Deadline.EXPIRY, now + policy.window().toMillis(), storeKey);
    audit(entry, succeeded ? AuditType.COMPLETED : AuditType.FAILED, null, outcome.getActor(), now);
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
    String storeKey = storeKey(entry);
    ledger.put(entry);
    ledger.moved(storeKey, entry.getTool(), null, LedgerState.SUCCEEDED);
    ledger.index(Ledger.Deadline.EXPIRY, now + policy.window().toMillis(), storeKey);
    audit(entry, AuditType.COMPLETED, "REINSTATED", outcome.getActor(), now);
  }

  /**
   * Stores an entry an executor's outcome settled and answers it. The dispatch's own topics the
   * executor did not answer get the original answer. Duplicates that arrived since the dispatch,
   * which no executor knew of, get it as a replay: one may have been told IN_FLIGHT after the
   * executor's answer was committed, and its client waits on; to a client that had the executor's
   * answer already it is the replay a duplicate gets.
   */
  private void storeAndAnswer(LedgerEntry entry, Outcome outcome, long now) {
    List<String> unanswered = unansweredDispatched(entry, outcome);
    List<String> waiters = new ArrayList<>(entry.getWaiters());
    waiters.removeAll(unanswered);
    entry.setDispatchedTo(new ArrayList<>());
    entry.setWaiters(new ArrayList<>());
    ledger.put(entry);
    ToolResult reply = Replies.of(entry, false);
    unanswered.forEach(topic -> outputs.reply(reply, topic, now));
    ToolResult replay = Replies.of(entry, true);
    waiters.forEach(topic -> outputs.reply(replay, topic, now));
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
    ledger.moved(storeKey(entry), entry.getTool(), before, LedgerState.UNKNOWN);
    audit(entry, AuditType.HELD_UNKNOWN, ErrorCode.PARTIAL_SUCCESS.name(), now);
  }

  void expire(String storeKey, LedgerEntry entry, long now) {
    ledger.remove(storeKey);
    auditRemoved(entry, AuditType.EXPIRED, null, null, now);
  }

  /** The audit event of an entry that leaves the store: no state after it, the life it ended. */
  private void auditRemoved(
      LedgerEntry entry, AuditType type, String code, String actor, long now) {
    outputs.audit(
        AuditEvent.newBuilder()
            .setIdempotencyKey(entry.getIdempotencyKey())
            .setTenant(entry.getTenant())
            .setTool(entry.getTool())
            .setType(type)
            .setState(null)
            .setAttempt(entry.getAttempts())
            .setCode(code)
            .setIncarnation(entry.getIncarnation())
            .setActor(actor)
            .setAt(Instant.ofEpochMilli(now))
            .build(),
        now);
  }

  void audit(LedgerEntry entry, AuditType type, String code, long now) {
    audit(entry, type, code, null, now);
  }

  /** As {@link #audit(LedgerEntry, AuditType, String, long)}, naming the person who decided. */
  void audit(LedgerEntry entry, AuditType type, String code, String actor, long now) {
    outputs.audit(
        AuditEvent.newBuilder()
            .setIdempotencyKey(entry.getIdempotencyKey())
            .setEffectKey(entry.getEffectKey())
            .setEffectId(entry.getEffectId())
            .setTenant(entry.getTenant())
            .setTool(entry.getTool())
            .setType(type)
            .setState(entry.getState())
            .setAttempt(entry.getAttempts())
            .setCode(code)
            .setIncarnation(entry.getIncarnation())
            .setActor(actor)
            .setAt(Instant.ofEpochMilli(now))
            .build(),
        now);
  }

  /**
   * Wall-clock punctuation: go on with the index's rebuild if the task started recently,
   * re-dispatch or hold the PENDING entries whose timeout passed, then purge the settled entries
   * whose window passed in the task's stream time, within one budget. Purging here too, every
   * second rather than once per stream-time interval, is what lets expiry keep pace with a
   * sustained completion rate.
   */
  void onWallClock(long wallNow) {
    long budgetEnd = ticker.getAsLong() + budgetNanos;
    rebuildIndex(budgetEnd);
    timeoutsDue(wallNow, budgetEnd);
    purgeDue(context.currentStreamTimeMs(), budgetEnd);
  }

  /** Stream-time punctuation: purge what is due, within a budget, right after stream time moved. */
  void onStreamTime(long streamTime) {
    long budgetEnd = ticker.getAsLong() + budgetNanos;
    rebuildIndex(budgetEnd);
    purgeDue(streamTime, budgetEnd);
  }

  /** Goes on with the deadline index's rebuild after the task started, while the budget lasts. */
  private void rebuildIndex(long budgetEnd) {
    while (ledger.rebuildStep(
                this::pendingDeadline,
                this::expiresAt,
                exactlyOnce ? policy::intentsReadAtLeast : offset -> {},
                batchSize)
            == batchSize
        && ticker.getAsLong() < budgetEnd) {
      // the next batch
    }
  }

  private void timeoutsDue(long wallNow, long budgetEnd) {
    List<Ledger.Due> batch;
    do {
      batch = ledger.takeDue(Ledger.Deadline.PENDING, wallNow, batchSize);
      batch.forEach(due -> timeOut(due, wallNow));
    } while (batch.size() == batchSize && ticker.getAsLong() < budgetEnd);
  }

  private void timeOut(Ledger.Due due, long wallNow) {
    LedgerEntry entry = ledger.get(due.storeKey());
    if (entry == null || entry.getState() != LedgerState.PENDING) {
      return;
    }
    ToolPolicy policy = policyOf(entry.getTool());
    long deadline = pendingDeadline(entry, policy);
    if (deadline > wallNow) {
      ledger.index(Ledger.Deadline.PENDING, deadline, due.storeKey());
    } else if (policy.mayRedispatchAfter(entry.getAttempts())) {
      redispatch(entry, policy, wallNow);
    } else {
      hold(
          entry,
          ErrorCode.PENDING_TIMEOUT,
          "no outcome within " + policy.pendingTimeout() + " after attempt " + entry.getAttempts(),
          wallNow);
    }
  }

  private void purgeDue(long streamTime, long budgetEnd) {
    if (streamTime < 0) {
      return; // no record yet: no stream time
    }
    List<Ledger.Due> batch;
    do {
      batch = ledger.takeDue(Ledger.Deadline.EXPIRY, streamTime, batchSize);
      batch.forEach(due -> purge(due, streamTime));
    } while (batch.size() == batchSize && ticker.getAsLong() < budgetEnd);
  }

  private void purge(Ledger.Due due, long streamTime) {
    LedgerEntry entry = ledger.get(due.storeKey());
    if (entry == null || !Ledger.isFinal(entry)) {
      return;
    }
    long expiresAt = expiresAt(entry);
    if (expiresAt > streamTime) {
      ledger.index(Ledger.Deadline.EXPIRY, expiresAt, due.storeKey());
    } else {
      expire(due.storeKey(), entry, streamTime);
    }
  }

  /** Completion time plus the tool's current window. */
  long expiresAt(LedgerEntry entry) {
    return entry.getCompletedAt().toEpochMilli() + policyOf(entry.getTool()).window().toMillis();
  }

  private static long pendingDeadline(LedgerEntry entry, ToolPolicy policy) {
    return entry.getLastDispatchedAt().toEpochMilli() + policy.pendingTimeout().toMillis();
  }

  /** When a PENDING entry's latest dispatch times out, under its tool's current policy. */
  long pendingDeadline(LedgerEntry entry) {
    return pendingDeadline(entry, policyOf(entry.getTool()));
  }

  static String storeKey(LedgerEntry entry) {
    return LedgerStore.key(entry.getTenant(), entry.getIdempotencyKey());
  }

  private long wallClock() {
    return context.currentSystemTimeMs();
  }
}
