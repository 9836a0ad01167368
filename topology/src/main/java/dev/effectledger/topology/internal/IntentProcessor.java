package dev.effectledger.topology.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.ArgumentRules;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Decides what each intent does: first sight dispatches, a duplicate is answered from the ledger, a
 * reused key is refused, and anything unreadable is dead-lettered with a reply ({@link Refusals});
 * an approved bypass runs a settled key once more ({@link Bypass}). Also owns the task's
 * punctuations: pending timeouts (wall clock) and expiry (stream time).
 */
public final class IntentProcessor implements Processor<byte[], byte[], Object, Object> {

  private final LedgerConfig config;
  private final LivePolicies live;
  private final IntentDecoder decoder;
  private LedgerActions actions;
  private Refusals refusals;
  private Bypass bypass;
  private ProcessorContext<Object, Object> context;

  public IntentProcessor(
      LedgerConfig config, LivePolicies live, Deserializer<ToolIntent> deserializer) {
    this.config = config;
    this.live = live;
    this.decoder = new IntentDecoder(deserializer, config);
  }

  @Override
  public void init(ProcessorContext<Object, Object> context) {
    this.context = context;
    actions = LedgerActions.open(context, config, live);
    refusals = new Refusals(actions);
    bypass = new Bypass(config, actions, refusals);
    actions.intentRead(-1);
    actions.ledger().startRebuild();
    actions.punctuations().schedule(context, config);
  }

  @Override
  public void close() {
    live.close(context.taskId()); // the task's policy holder and counts go with it
  }

  @Override
  public void process(Record<byte[], byte[]> record) {
    int partition = context.recordMetadata().map(m -> m.partition()).orElse(-1);
    context.recordMetadata().ifPresent(m -> actions.intentRead(m.offset()));
    AliasRoute route = AliasRoute.of(record.headers());
    DecodedIntent decoded =
        decoder.decode(
            record.key(),
            record.value(),
            partition,
            actions.applied(),
            record.timestamp(),
            route != null);
    Header requestId = record.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    actions.outputs().answering(requestId == null ? null : requestId.value());
    ToolIntent traced = decoded instanceof DecodedIntent.Valid valid ? valid.intent() : null;
    Span span = Span.getInvalid();
    Scope scope = Scope.noop();
    try {
      Context parent = parentOf(record, traced);
      span = decisionSpan(parent, traced);
      scope = Traces.enter(span, parent);
      if (decoded instanceof DecodedIntent.Invalid invalid) {
        refusals.deadLetter(record, invalid);
      } else {
        DecodedIntent.Valid valid = (DecodedIntent.Valid) decoded;
        if (route == null) {
          decide(valid, record, partition, record.timestamp());
        } else {
          routed(valid, route, record, partition, record.timestamp());
        }
      }
    } finally {
      scope.close(); // never left open on the stream thread: the next record has its own parent
      span.end();
      actions.outputs().answered();
    }
  }

  /**
   * The parent of the ledger's decision on an intent: the span its record's headers name, or, from
   * a client that only sets it, its {@code traceId}'s.
   */
  private static Context parentOf(Record<byte[], byte[]> record, ToolIntent intent) {
    Context parent = Traces.extract(record.headers());
    if (!Span.fromContext(parent).getSpanContext().isValid() && intent != null) {
      parent = Traces.extract(intent.getTraceId(), null);
    }
    return parent;
  }

  /**
   * The ledger's decision on an intent (null when it could not be read), a child of {@code parent}:
   * the decision itself is set as the intent is answered ({@link
   * Outputs#audit(dev.effectledger.schema.AuditEvent, long)}).
   */
  private static Span decisionSpan(Context parent, ToolIntent intent) {
    Span span =
        Traces.tracer()
            .spanBuilder("effectledger decide")
            .setParent(parent)
            .setSpanKind(SpanKind.CONSUMER)
            .startSpan();
    if (intent != null && span.isRecording()) { // built only for a span that records
      span.updateName("effectledger decide " + intent.getTool())
          .setAttribute(Traces.TOOL, intent.getTool())
          .setAttribute(Traces.TOOL_CALL_ID, intent.getStepId())
          .setAttribute(Traces.KEY, intent.getIdempotencyKey())
          .setAttribute(Traces.TENANT, intent.getTenant())
          .setAttribute(Traces.RUN, intent.getRunId());
    }
    return span;
  }

  private void decide(
      DecodedIntent.Valid valid, Record<byte[], byte[]> record, int partition, long now) {
    ToolIntent intent = valid.intent();
    String replyTopic = valid.replyTopic();
    Optional<ToolPolicy> policy = actions.policies().forTool(intent.getTool());
    if (policy.isEmpty()) {
      refusals.refuse(
          intent,
          replyTopic,
          ErrorCode.UNKNOWN_TOOL,
          "tool '" + intent.getTool() + "' has no policy",
          now);
      return;
    }
    // A key with a live entry is answered from it whatever the tool's class is now: a tool since
    // reclassified as read, or removed and admitted by a read unknownTool, must not pass a retry of
    // a completed effect straight through.
    LedgerEntry entry =
        actions.liveEntry(LedgerStore.key(intent.getTenant(), intent.getIdempotencyKey()), now);
    if (entry != null) {
      answerKnownKey(intent, entry, intent.getArgumentsHash(), replyTopic, now);
      return;
    }
    if (!policy.get().isLedgered()) {
      actions.passThrough(intent, policy.get(), replyTopic, now);
      return;
    }
    if (valid.aliases().isEmpty()) {
      actions.start(intent, policy.get(), replyTopic, intent.getIdempotencyKey(), 1, null, now);
      return;
    }
    if (answeredByLocalAlias(valid, partition, now)) {
      return;
    }
    String decider = valid.decider();
    if (decider.equals(intent.getIdempotencyKey()) || isLocal(decider, partition)) {
      decideStart(valid, policy.get(), record, partition, now);
    } else {
      actions.outputs().reroute(record, decider, AliasRoute.decide());
    }
  }

  /**
   * A step whose tool's key rules changed within its retry horizon has a key under each honoured
   * version, and those keys can sit in different partitions, owned by different tasks. One task
   * decides whether the step starts: the one owning the key under the newest rules (the decider).
   * Intents under other keys go there ({@link AliasRoute#decide}); the decider sends the intent
   * round the tasks owning the step's other keys ({@link AliasRoute#probe}), each of which answers
   * it from an entry it holds, and starts the step only when the intent comes back unanswered
   * ({@link AliasRoute#probed}). Every hop is a record on tool-intents written in the task's
   * transaction, so a hop is neither lost nor doubled under exactly-once; all starts of a step
   * happen in the decider's task, one at a time.
   */
  private void routed(
      DecodedIntent.Valid valid,
      AliasRoute route,
      Record<byte[], byte[]> record,
      int partition,
      long now) {
    ToolIntent intent = valid.intent();
    String target = new String(record.key(), StandardCharsets.UTF_8);
    Optional<ToolPolicy> policy = actions.policies().forTool(intent.getTool());
    boolean known =
        valid.decider() != null
            && (route.kind() == AliasRoute.Kind.PROBE
                ? valid.hashOf(target) != null
                : target.equals(valid.decider()));
    if (policy.isEmpty() || !policy.get().isLedgered() || !known) {
      // The policy changed between hops (the step no longer has these keys) or the route is not
      // one the ledger wrote: decide afresh from the intent's own key, in its own partition.
      if (isLocal(intent.getIdempotencyKey(), partition)) {
        decide(valid, record, partition, now);
      } else {
        actions.outputs().reroute(record, intent.getIdempotencyKey(), null);
      }
      return;
    }
    switch (route.kind()) {
      case DECIDE -> decideStart(valid, policy.get(), record, partition, now);
      case PROBE -> {
        LedgerEntry entry = actions.liveEntry(LedgerStore.key(intent.getTenant(), target), now);
        if (entry != null) {
          answerAlias(intent, entry, valid.hashOf(target), valid.replyTopic(), now);
        } else if (!route.rest().isEmpty()) {
          actions
              .outputs()
              .reroute(
                  record,
                  route.rest().get(0),
                  AliasRoute.probe(route.rest().subList(1, route.rest().size())));
        } else {
          actions.outputs().reroute(record, valid.decider(), AliasRoute.probed());
        }
      }
      case PROBED -> {
        if (!answeredAt(valid, valid.decider(), now)
            && !answeredByLocalAlias(valid, partition, now)) {
          startAs(valid, policy.get(), valid.decider(), now);
        }
      }
    }
  }

  /** At the decider: answer from the decider's key or a local alias, else probe or start. */
  private void decideStart(
      DecodedIntent.Valid valid,
      ToolPolicy policy,
      Record<byte[], byte[]> record,
      int partition,
      long now) {
    if (answeredAt(valid, valid.decider(), now) || answeredByLocalAlias(valid, partition, now)) {
      return;
    }
    List<String> remote = new ArrayList<>();
    for (DecodedIntent.Alias alias : valid.aliases()) {
      if (!isLocal(alias.key(), partition) && !alias.key().equals(valid.decider())) {
        remote.add(alias.key());
      }
    }
    String own = valid.intent().getIdempotencyKey();
    if (!own.equals(valid.decider()) && !isLocal(own, partition)) {
      remote.add(own);
    }
    if (remote.isEmpty()) {
      startAs(valid, policy, valid.decider(), now);
    } else {
      actions
          .outputs()
          .reroute(record, remote.get(0), AliasRoute.probe(remote.subList(1, remote.size())));
    }
  }

  /** Answers the intent from the entry under {@code key} in this task; false when none. */
  private boolean answeredAt(DecodedIntent.Valid valid, String key, long now) {
    ToolIntent intent = valid.intent();
    LedgerEntry entry = actions.liveEntry(LedgerStore.key(intent.getTenant(), key), now);
    if (entry == null) {
      return false;
    }
    if (key.equals(intent.getIdempotencyKey())) {
      answerKnownKey(intent, entry, intent.getArgumentsHash(), valid.replyTopic(), now);
    } else {
      answerAlias(intent, entry, valid.hashOf(key), valid.replyTopic(), now);
    }
    return true;
  }

  private boolean answeredByLocalAlias(DecodedIntent.Valid valid, int partition, long now) {
    for (DecodedIntent.Alias alias : valid.aliases()) {
      if (isLocal(alias.key(), partition) && answeredAt(valid, alias.key(), now)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Starts the step under {@code key}: its own, or, for an intent a client derived under older
   * rules, the decider's (answered IN_FLIGHT under its own key; its retry finds the result).
   */
  private void startAs(DecodedIntent.Valid valid, ToolPolicy policy, String key, long now) {
    ToolIntent intent = valid.intent();
    if (key.equals(intent.getIdempotencyKey())) {
      actions.start(intent, policy, valid.replyTopic(), key, 1, null, now);
      return;
    }
    ToolIntent under =
        ToolIntent.newBuilder(intent)
            .setIdempotencyKey(key)
            .setArgumentsHash(valid.hashOf(key))
            .build();
    actions.start(under, policy, valid.replyTopic(), key, 1, null, now);
    LedgerEntry started = actions.ledger().get(LedgerStore.key(intent.getTenant(), key));
    ToolResult answer = Replies.of(started, false);
    answer.setIdempotencyKey(intent.getIdempotencyKey());
    actions.outputs().reply(answer, valid.replyTopic(), now);
  }

  /** Whether {@code key} belongs to this task's partition (always, when the count is unknown). */
  private boolean isLocal(String key, int partition) {
    int partitions = config.intentPartitions();
    return partitions <= 0
        || partition < 0
        || Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions
            == partition;
  }

  /**
   * A step whose key its tool's changed key rules made another: the entry the step made under the
   * other rules answers it, under the intent's own key (its client waits on that one), and no
   * second effect starts. An entry still in flight is answered IN_FLIGHT and not attached (its
   * final reply goes out under the entry's key): the client's next retry gets the result. A bypass
   * approval is taken as on the entry's own key.
   */
  private void answerAlias(
      ToolIntent intent, LedgerEntry entry, String aliasHash, String replyTopic, long now) {
    answerEntry(intent, entry, aliasHash, true, replyTopic, now);
  }

  /**
   * Whether the intent carries the arguments the entry was made with: the same hash, or, within the
   * horizon of a change of the tool's key rules, the hash its arguments have under rules the entry
   * may have been made with (a caller's own key keeps its value across the change; its hash does
   * not).
   */
  private boolean sameArguments(ToolIntent intent, LedgerEntry entry, String hash, long now) {
    if (entry.getArgumentsHash().equals(hash)) {
      return true;
    }
    ToolPolicy policy = actions.policies().forTool(intent.getTool()).orElse(null);
    if (policy == null || !policy.isLedgered()) {
      return false;
    }
    List<ArgumentRules> honoured = actions.applied().honouredRules(intent.getTool(), policy, now);
    if (honoured.size() < 2) {
      return false;
    }
    try {
      JsonNode arguments = ArgumentsHash.parse(intent.getArguments());
      return honoured.stream()
          .anyMatch(r -> ArgumentsHash.of(arguments, r.ignore()).equals(entry.getArgumentsHash()));
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private void answerKnownKey(
      ToolIntent intent, LedgerEntry entry, String argumentsHash, String replyTopic, long now) {
    answerEntry(intent, entry, argumentsHash, false, replyTopic, now);
  }

  /**
   * Answers an intent from an entry of its step: its own key's, or ({@code alias}) another key's
   * the step has under other honoured key rules, answered under the intent's own key.
   */
  private void answerEntry(
      ToolIntent intent,
      LedgerEntry entry,
      String argumentsHash,
      boolean alias,
      String replyTopic,
      long now) {
    ToolPolicy policy = actions.policyOf(intent.getTool());
    boolean same =
        alias
            ? entry.getArgumentsHash().equals(argumentsHash)
            : sameArguments(intent, entry, argumentsHash, now);
    if (!same) {
      refusals.refuse(
          intent,
          replyTopic,
          ErrorCode.IDEMPOTENCY_KEY_REUSED,
          "the key was first used with other arguments",
          now);
    } else if (Bypass.isNew(intent, entry)) {
      bypass.run(intent, entry, policy, replyTopic, now);
    } else if (alias) {
      ToolResult answer = Replies.of(entry, entry.getState() != LedgerState.PENDING);
      answer.setIdempotencyKey(intent.getIdempotencyKey());
      actions.outputs().reply(answer, replyTopic, now);
      actions.audit(
          entry,
          entry.getState() == LedgerState.PENDING ? AuditType.IN_FLIGHT : AuditType.DEDUP_HIT,
          "KEY_RULES_ALIAS",
          now);
    } else {
      answerDuplicate(entry, policy, replyTopic, now);
    }
  }

  private void answerDuplicate(LedgerEntry entry, ToolPolicy policy, String replyTopic, long now) {
    if (entry.getState() != LedgerState.PENDING) {
      actions.outputs().reply(Replies.of(entry, true), replyTopic, now);
      actions.audit(entry, AuditType.DEDUP_HIT, null, now);
    } else if (policy.onInFlight() == InFlightPolicy.COALESCE) {
      actions.outputs().reply(Replies.of(entry, false), replyTopic, now);
      actions.attach(entry, replyTopic);
      actions.audit(entry, AuditType.IN_FLIGHT, null, now);
    } else {
      // Refused, but its client waits out DUPLICATE_IN_FLIGHT for the final answer.
      actions.attach(entry, replyTopic);
      actions
          .outputs()
          .reply(
              Replies.rejected(
                  entry.getIdempotencyKey(),
                  entry.getTenant(),
                  entry.getTool(),
                  ErrorCode.DUPLICATE_IN_FLIGHT.toError(
                      "attempt " + entry.getAttempts() + " is still in flight"),
                  entry.getFirstSeenAt().toEpochMilli()),
              replyTopic,
              now);
      actions.audit(entry, AuditType.REFUSED_IN_FLIGHT, ErrorCode.DUPLICATE_IN_FLIGHT.name(), now);
    }
  }
}
