package dev.effectledger.topology.internal;

import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides what each intent does: first sight dispatches, a duplicate is answered from the ledger, a
 * reused key is refused, and anything unreadable is dead-lettered with a reply. Also owns the
 * task's punctuations: pending timeouts (wall clock) and expiry (stream time).
 */
public final class IntentProcessor implements Processor<byte[], byte[], Object, Object> {

  private static final Logger log = LoggerFactory.getLogger(IntentProcessor.class);

  private final LedgerConfig config;
  private final LivePolicies live;
  private final IntentDecoder decoder;
  private LedgerActions actions;
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
    actions.ledger().startRebuild();
    context.schedule(
        config.pendingCheckInterval(), PunctuationType.WALL_CLOCK_TIME, actions::onWallClock);
    context.schedule(config.purgeInterval(), PunctuationType.STREAM_TIME, actions::onStreamTime);
  }

  @Override
  public void process(Record<byte[], byte[]> record) {
    int partition = context.recordMetadata().map(m -> m.partition()).orElse(-1);
    DecodedIntent decoded =
        decoder.decode(
            record.key(), record.value(), partition, actions.applied(), record.timestamp());
    Header requestId = record.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    actions.outputs().answering(requestId == null ? null : requestId.value());
    try {
      if (decoded instanceof DecodedIntent.Invalid invalid) {
        deadLetter(record, invalid);
      } else {
        DecodedIntent.Valid valid = (DecodedIntent.Valid) decoded;
        decide(valid, record.timestamp());
      }
    } finally {
      actions.outputs().answered();
    }
  }

  private void decide(DecodedIntent.Valid valid, long now) {
    ToolIntent intent = valid.intent();
    String replyTopic = valid.replyTopic();
    Optional<ToolPolicy> policy = actions.policies().forTool(intent.getTool());
    if (policy.isEmpty()) {
      refuse(
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
    for (DecodedIntent.Alias alias : valid.aliases()) {
      LedgerEntry aliased =
          actions.liveEntry(LedgerStore.key(intent.getTenant(), alias.key()), now);
      if (aliased != null) {
        answerAlias(intent, aliased, alias, replyTopic, now);
        return;
      }
    }
    if (!policy.get().isLedgered()) {
      actions.passThrough(intent, policy.get(), replyTopic, now);
    } else {
      actions.start(intent, policy.get(), replyTopic, intent.getIdempotencyKey(), 1, now);
    }
  }

  /**
   * A step whose key its tool's changed key rules made another: the entry the step made under the
   * other rules answers it, under the intent's own key (its client waits on that one), and no
   * second effect starts. An entry still in flight is answered IN_FLIGHT and not attached (its
   * final reply goes out under the entry's key): the client's next retry gets the result. A bypass
   * approval is taken as on the entry's own key.
   */
  private void answerAlias(
      ToolIntent intent,
      LedgerEntry entry,
      DecodedIntent.Alias alias,
      String replyTopic,
      long now) {
    if (!entry.getArgumentsHash().equals(alias.argumentsHash())) {
      refuse(
          intent,
          replyTopic,
          ErrorCode.IDEMPOTENCY_KEY_REUSED,
          "the key was first used with other arguments",
          now);
    } else if (isNewBypass(intent, entry)) {
      bypass(intent, entry, actions.policyOf(intent.getTool()), replyTopic, now);
    } else {
      ToolResult answer = Replies.of(entry, entry.getState() != LedgerState.PENDING);
      answer.setIdempotencyKey(intent.getIdempotencyKey());
      actions.outputs().reply(answer, replyTopic, now);
      actions.audit(
          entry,
          entry.getState() == LedgerState.PENDING ? AuditType.IN_FLIGHT : AuditType.DEDUP_HIT,
          "KEY_RULES_ALIAS",
          now);
    }
  }

  private void answerKnownKey(
      ToolIntent intent, LedgerEntry entry, String argumentsHash, String replyTopic, long now) {
    ToolPolicy policy = actions.policyOf(intent.getTool());
    if (!entry.getArgumentsHash().equals(argumentsHash)) {
      refuse(
          intent,
          replyTopic,
          ErrorCode.IDEMPOTENCY_KEY_REUSED,
          "the key was first used with other arguments",
          now);
    } else if (isNewBypass(intent, entry)) {
      bypass(intent, entry, policy, replyTopic, now);
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

  /**
   * An approved second execution of a settled key, under a fresh effect key the downstream has not
   * seen.
   */
  private void bypass(
      ToolIntent intent, LedgerEntry entry, ToolPolicy policy, String replyTopic, long now) {
    if (!policy.bypassAllowed()) {
      refuse(
          intent,
          replyTopic,
          ErrorCode.BYPASS_NOT_ALLOWED,
          "tool '" + intent.getTool() + "' does not allow bypass",
          now);
      return;
    }
    String operator = null;
    if (config.bypassApprovals().verifying()) {
      BypassApprovals.Verdict verdict =
          config
              .bypassApprovals()
              .verify(
                  intent.getBypassApproval(),
                  intent.getTenant(),
                  intent.getIdempotencyKey(),
                  Instant.ofEpochMilli(now));
      if (verdict instanceof BypassApprovals.Verdict.Invalid invalid) {
        refuse(intent, replyTopic, ErrorCode.BYPASS_APPROVAL_INVALID, invalid.why(), now);
        return;
      }
      operator = ((BypassApprovals.Verdict.Valid) verdict).approval().operator();
    }
    actions.audit(entry, AuditType.BYPASSED, null, operator, now);
    actions.start(
        intent, policy, replyTopic, bypassEffectKey(intent), entry.getAttempts() + 1, now);
  }

  private static boolean isNewBypass(ToolIntent intent, LedgerEntry entry) {
    String approval = intent.getBypassApproval();
    return approval != null
        && !approval.isEmpty()
        && entry.getState() != LedgerState.PENDING
        && !bypassEffectKey(intent).equals(entry.getEffectKey());
  }

  private static String bypassEffectKey(ToolIntent intent) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256")
              .digest(intent.getBypassApproval().getBytes(StandardCharsets.UTF_8));
      return intent.getIdempotencyKey() + "~bypass-" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  private void refuse(
      ToolIntent intent, String replyTopic, ErrorCode code, String message, long now) {
    actions
        .outputs()
        .reply(
            Replies.rejected(
                intent.getIdempotencyKey(),
                intent.getTenant(),
                intent.getTool(),
                code.toError(message),
                now),
            replyTopic,
            now);
    actions
        .outputs()
        .audit(
            intent.getIdempotencyKey(),
            intent.getTenant(),
            intent.getTool(),
            code == ErrorCode.IDEMPOTENCY_KEY_REUSED ? AuditType.CONFLICT : AuditType.REJECTED,
            null,
            0,
            code.name(),
            now);
  }

  private void deadLetter(Record<byte[], byte[]> record, DecodedIntent.Invalid invalid) {
    log.warn("Dead-lettering an intent: {} for key {}", invalid.code(), invalid.key());
    long now = record.timestamp();
    actions
        .outputs()
        .deadLetter(record.key(), record.value(), invalid.code(), invalid.message(), now);
    if (invalid.key() != null) {
      actions
          .outputs()
          .reply(
              Replies.rejected(
                  invalid.key(),
                  invalid.tenant(),
                  invalid.tool(),
                  invalid.code().toError(invalid.message()),
                  now),
              invalid.replyTopic(),
              now);
      actions
          .outputs()
          .audit(
              invalid.key(),
              invalid.tenant(),
              invalid.tool(),
              AuditType.REJECTED,
              null,
              0,
              invalid.code().name(),
              now);
    }
  }
}
