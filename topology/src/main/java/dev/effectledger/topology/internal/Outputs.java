package dev.effectledger.topology.internal;

import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import dev.effectledger.topology.LedgerObserver;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * Everything the ledger emits, one method per output: a dispatch, a reply, an audit event, a
 * dead-letter record. Output records start with fresh headers so nothing a producer put on an
 * intent leaks to another topic.
 */
final class Outputs {

  static final String DISPATCH_SINK = "dispatch-sink";
  static final String RESULTS_SINK = "results-sink";
  static final String AUDIT_SINK = "audit-sink";
  static final String DLQ_SINK = "intents-dlq-sink";
  static final String INTENTS_SINK = "intents-sink";

  /** Header naming the topic a reply goes to; read by the results sink's topic extractor. */
  static final String REPLY_TOPIC_HEADER = Topics.REPLY_TOPIC_HEADER;

  private final ProcessorContext<Object, Object> context;
  private final LedgerObserver observer;

  /** The request id of the intent being answered, copied onto its replies; null otherwise. */
  private byte[] answering;

  Outputs(ProcessorContext<Object, Object> context, LedgerObserver observer) {
    this.context = context;
    this.observer = observer;
  }

  /**
   * Sends an intent on to the task owning {@code key}, as it came (value and request id), on {@code
   * route}; a null route hands it back as if its client had sent it.
   */
  void reroute(Record<byte[], byte[]> intent, String key, AliasRoute route) {
    Headers headers = new RecordHeaders();
    org.apache.kafka.common.header.Header requestId =
        intent.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    if (requestId != null) {
      headers.add(requestId);
    }
    Traces.inject(Context.current(), headers); // the decision goes on at the decider
    if (route != null) {
      headers.add(AliasRoute.HEADER, route.header());
    }
    context.forward(
        new Record<>(
            key.getBytes(StandardCharsets.UTF_8), intent.value(), intent.timestamp(), headers),
        INTENTS_SINK);
  }

  void dispatch(Dispatch dispatch, long timestamp) {
    Headers headers = new RecordHeaders();
    // the decision's span; a re-dispatch on a timer has none current: the entry's (its traceId)
    Traces.inject(Traces.currentOr(dispatch.getTraceId()), headers);
    context.forward(
        new Record<>(dispatch.getIdempotencyKey(), dispatch, timestamp, headers), DISPATCH_SINK);
  }

  /**
   * Until {@link #answered()}, every reply answers the intent whose {@link
   * Topics#REQUEST_ID_HEADER} is {@code requestId} (null or longer than 128 bytes: none is copied).
   */
  void answering(byte[] requestId) {
    this.answering = requestId != null && requestId.length <= 128 ? requestId : null;
  }

  void answered() {
    this.answering = null;
  }

  /** The request id of the intent being answered, as text; null when none. */
  String answeringId() {
    return answering == null ? null : new String(answering, StandardCharsets.UTF_8);
  }

  void reply(ToolResult result, String replyTopic, long timestamp) {
    context.forward(
        new Record<>(result.getIdempotencyKey(), result, timestamp, replyHeaders(replyTopic)),
        RESULTS_SINK);
  }

  /**
   * A final answer of a key's life, sent while no intent is being answered (an outcome settling
   * it): it carries the request id of the intent that started the life ({@code
   * LedgerEntry.requestId}, null: none), as the executor's answers do, so the calls that joined the
   * action read it as a replay.
   */
  void lifeAnswer(ToolResult result, String replyTopic, long timestamp, String lifeRequestId) {
    Headers headers = replyHeaders(replyTopic);
    if (answering == null && lifeRequestId != null) {
      headers.add(Topics.REQUEST_ID_HEADER, lifeRequestId.getBytes(StandardCharsets.UTF_8));
    }
    context.forward(
        new Record<>(result.getIdempotencyKey(), result, timestamp, headers), RESULTS_SINK);
  }

  /**
   * A release's reply: it answers the calls whose intent is at or below {@code intentsRead} on the
   * key's intents partition ({@link Topics#INTENTS_THROUGH_HEADER}).
   */
  void releaseReply(ToolResult result, String replyTopic, long timestamp, long intentsRead) {
    Headers headers = replyHeaders(replyTopic);
    headers.add(
        Topics.INTENTS_THROUGH_HEADER,
        Long.toString(intentsRead).getBytes(StandardCharsets.US_ASCII));
    context.forward(
        new Record<>(result.getIdempotencyKey(), result, timestamp, headers), RESULTS_SINK);
  }

  private Headers replyHeaders(String replyTopic) {
    Headers headers =
        new RecordHeaders().add(REPLY_TOPIC_HEADER, replyTopic.getBytes(StandardCharsets.UTF_8));
    Traces.inject(Context.current(), headers); // back on the reply
    if (answering != null) {
      headers.add(Topics.REQUEST_ID_HEADER, answering);
    }
    return headers;
  }

  void audit(
      String key,
      String tenant,
      String tool,
      AuditType type,
      LedgerState state,
      int attempt,
      String code,
      long timestamp) {
    audit(key, null, tenant, tool, type, state, attempt, code, timestamp);
  }

  void audit(
      String key,
      String effectKey,
      String tenant,
      String tool,
      AuditType type,
      LedgerState state,
      int attempt,
      String code,
      long timestamp) {
    audit(key, effectKey, null, tenant, tool, type, state, attempt, code, timestamp);
  }

  void audit(
      String key,
      String effectKey,
      String effectId,
      String tenant,
      String tool,
      AuditType type,
      LedgerState state,
      int attempt,
      String code,
      long timestamp) {
    audit(
        AuditEvent.newBuilder()
            .setIdempotencyKey(key)
            .setTenant(tenant)
            .setTool(tool)
            .setType(type)
            .setState(state)
            .setAttempt(attempt)
            .setAt(Instant.ofEpochMilli(timestamp))
            .setCode(code)
            .setEffectKey(effectKey)
            .setEffectId(effectId)
            .build(),
        timestamp);
  }

  /** Publishes {@code event} to tool-audit at record time {@code timestamp}. */
  /**
   * The audit event of {@code entry}: its key, effect key and id, tool, attempt and life, in {@code
   * state}, with the code and the person who decided. An entry that leaves the store is audited
   * with state null and without its effect key and id.
   */
  void auditEntry(
      LedgerEntry entry, AuditType type, LedgerState state, String code, String actor, long now) {
    if ((type == AuditType.DEDUP_HIT
            || type == AuditType.IN_FLIGHT
            || type == AuditType.REFUSED_IN_FLIGHT)
        && Span.current().isRecording()) {
      // answered from the key's first life: a link to the decision that dispatched its effect
      SpanContext original = Traces.spanContext(entry.getTraceId());
      if (original.isValid()) {
        Span.current().addLink(original);
      }
    }
    audit(
        AuditEvent.newBuilder()
            .setIdempotencyKey(entry.getIdempotencyKey())
            .setEffectKey(state == null ? null : entry.getEffectKey())
            .setEffectId(state == null ? null : entry.getEffectId())
            .setTenant(entry.getTenant())
            .setTool(entry.getTool())
            .setType(type)
            .setState(state)
            .setAttempt(entry.getAttempts())
            .setCode(code)
            .setIncarnation(entry.getIncarnation())
            .setActor(actor)
            .setAt(Instant.ofEpochMilli(now))
            .build(),
        now);
  }

  /** A read tool's intent: straight to its lane, dispatched at {@code wallNow}, and audited. */
  void passThrough(ToolIntent intent, String lane, String replyTopic, long wallNow, long now) {
    dispatch(
        Dispatch.newBuilder()
            .setIdempotencyKey(intent.getIdempotencyKey())
            .setEffectKey(intent.getIdempotencyKey())
            .setTenant(intent.getTenant())
            .setRunId(intent.getRunId())
            .setStepId(intent.getStepId())
            .setTool(intent.getTool())
            .setLane(lane)
            .setArguments(intent.getArguments())
            .setAttempt(1)
            .setDispatchedAt(Instant.ofEpochMilli(wallNow))
            .setReplyTopic(replyTopic)
            .setTraceId(intent.getTraceId())
            .build(),
        now);
    audit(
        intent.getIdempotencyKey(),
        intent.getTenant(),
        intent.getTool(),
        AuditType.PASS_THROUGH,
        null,
        1,
        null,
        now);
  }

  void audit(AuditEvent event, long timestamp) {
    observer.decided(event.getTool(), event.getType());
    Span current = Span.current();
    if (current.isRecording()) {
      String decision = decision(event.getType(), event.getState());
      if (decision != null) {
        current.setAttribute(Traces.DECISION, decision);
      }
    }
    context.forward(
        new Record<>(event.getIdempotencyKey(), event, timestamp, new RecordHeaders()), AUDIT_SINK);
  }

  /**
   * The raw record, with headers naming why and where it came from; a value too large to produce is
   * cut, with its size and digest ({@link DeadLetters}), and so is a key.
   */
  void deadLetter(byte[] key, byte[] value, ErrorCode code, String message, long timestamp) {
    RecordMetadata source = context.recordMetadata().orElse(null);
    Headers headers =
        DeadLetters.headers(
            code.name(),
            message,
            source == null ? null : source.topic(),
            source == null ? -1 : source.partition(),
            source == null ? -1 : source.offset());
    byte[] boundedKey =
        key == null || key.length <= DeadLetters.MAX_VALUE_BYTES
            ? key
            : Arrays.copyOf(key, DeadLetters.MAX_VALUE_BYTES);
    context.forward(
        new Record<>(boundedKey, DeadLetters.bounded(value, headers), timestamp, headers),
        DLQ_SINK);
  }

  /**
   * The {@code effectledger.decision} an audited decision sets on the span it is made in (see
   * {@link Traces#DECISION}); null for events that decide nothing about a call (expiry, a late
   * outcome).
   */
  static String decision(AuditType type, LedgerState state) {
    return switch (type) {
      case DISPATCHED, REDISPATCHED, BYPASSED -> "dispatched";
      case DEDUP_HIT -> state == LedgerState.UNKNOWN ? "held" : "replayed";
      case IN_FLIGHT, REFUSED_IN_FLIGHT -> "in_flight";
      case CONFLICT -> "conflict";
      case REJECTED -> "refused";
      case PASS_THROUGH -> "passed_through";
      case HELD_UNKNOWN -> "held";
      case RELEASED -> "released";
      case COMPLETED -> "completed";
      case FAILED -> "failed";
      default -> null;
    };
  }
}
