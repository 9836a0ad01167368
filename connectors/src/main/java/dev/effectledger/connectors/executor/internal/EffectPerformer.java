package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRecord;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.connectors.executor.ExecutorObserver;
import dev.effectledger.policy.RetryPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an executor publishes for one dispatch: it runs the effect through the tool's connector (or,
 * for a dispatch that may already have acted on a downstream that cannot take a repeat, looks the
 * effect up instead), maps the connector's answer to an {@link Outcome}, and adds the effect's own
 * records and any dead letter. It touches no Kafka client: the executor puts the records into its
 * next transaction, so this part is tested with a fake connector alone.
 */
public final class EffectPerformer {

  private static final Logger log = LoggerFactory.getLogger(EffectPerformer.class);

  /**
   * The largest result an outcome carries; a larger one is replaced by a marker, and dead-lettered
   * cut.
   */
  public static final int MAX_RESULT_BYTES = 256 * 1024;

  /** What one run of a dispatch publishes, and whether its effect provably did not happen. */
  public record Answer(List<ProducerRecord<byte[], byte[]>> records, boolean noEffect) {}

  private volatile Map<String, Connector> connectors;
  private volatile ToolPolicies policies;
  private final Invoker invoker;
  private final Serializer<Outcome> outcomes;
  private final Serializer<ToolResult> replies;
  private final Clock clock;
  private final AtomicInteger effectsRun = new AtomicInteger();
  private final ExecutorObserver observer;

  public EffectPerformer(
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Invoker invoker,
      Serializer<Outcome> outcomes,
      Serializer<ToolResult> replies,
      Clock clock) {
    this(connectors, policies, invoker, outcomes, replies, clock, ExecutorObserver.NONE);
  }

  public EffectPerformer(
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Invoker invoker,
      Serializer<Outcome> outcomes,
      Serializer<ToolResult> replies,
      Clock clock,
      ExecutorObserver observer) {
    this.observer = observer;
    this.connectors = connectors;
    this.policies = policies;
    this.invoker = invoker;
    this.outcomes = outcomes;
    this.replies = replies;
    this.clock = clock;
  }

  private static String outcomeClass(EffectOutcome outcome) {
    if (outcome instanceof EffectOutcome.Succeeded) {
      return "succeeded";
    }
    if (outcome instanceof EffectOutcome.Retryable) {
      return "retryable";
    }
    if (outcome instanceof EffectOutcome.Ambiguous) {
      return "ambiguous";
    }
    if (outcome instanceof EffectOutcome.Partial) {
      return "partial";
    }
    return "failed";
  }

  /**
   * From now on, runs dispatches with {@code next} connectors under {@code nextPolicies} (a policy
   * applied live); a dispatch already running finishes with the connector it started with.
   */
  public void use(Map<String, Connector> next, ToolPolicies nextPolicies) {
    this.connectors = Map.copyOf(next);
    this.policies = nextPolicies;
  }

  /** Effects run so far (connector calls that ended in an outcome, retries counted once). */
  public int effectsRun() {
    return effectsRun.get();
  }

  /** Runs the effect and returns what to publish for it: the outcome and any effect records. */
  public Answer perform(Dispatch dispatch) {
    // the attempt, a child of the ledger's decision that dispatched it (the dispatch's traceId)
    Context parent = Traces.extract(dispatch.getTraceId(), null);
    Span span =
        Traces.continuedAttempt(
            "effectledger attempt",
            parent,
            SpanKind.INTERNAL,
            dispatch.getTool(),
            dispatch.getIdempotencyKey(),
            dispatch.getTenant(),
            dispatch.getAttempt());
    try (Scope scope = Traces.enter(span, parent)) {
      return performTraced(dispatch);
    } finally {
      span.end();
    }
  }

  private Answer performTraced(Dispatch dispatch) {
    Connector connector = connectors.get(dispatch.getTool());
    EffectOutcome outcome;
    if (connector == null) {
      outcome =
          new EffectOutcome.Retryable(
              "NO_CONNECTOR",
              "no connector is configured for tool " + dispatch.getTool() + " on this executor");
    } else {
      RetryPolicy retry =
          policies.forTool(dispatch.getTool()).map(ToolPolicy::retry).orElse(RetryPolicy.DEFAULT);
      String tool = dispatch.getTool();
      long start = System.nanoTime();
      observer.started(tool);
      outcome =
          invoker.invoke(
              connector,
              new EffectRequest(
                  dispatch.getEffectKey(),
                  dispatch.getIdempotencyKey(),
                  dispatch.getTenant(),
                  dispatch.getTool(),
                  dispatch.getArguments(),
                  dispatch.getAttempt(),
                  Traces.currentTraceparentOr(dispatch.getTraceId())),
              retry,
              () -> observer.retried(tool));
      effectsRun.incrementAndGet();
      observer.finished(tool, outcomeClass(outcome), Duration.ofNanos(System.nanoTime() - start));
    }
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    outcome = ResultBound.boundResult(dispatch, outcome, records);
    if (outcome instanceof EffectOutcome.Succeeded s) {
      for (EffectRecord r : s.records()) {
        records.add(new ProducerRecord<>(r.topic(), r.key(), r.value()));
      }
    }
    records.addAll(outcomeRecords(dispatch, outcome));
    return new Answer(records, outcome instanceof EffectOutcome.Retryable);
  }

  /**
   * A dispatch of a life that was released before it started (a fence in the attempt journal came
   * first): never run, answered with code {@code SUPERSEDED}, which the ledger only audits. Sent as
   * AMBIGUOUS so that a ledger of an earlier release, which does not know the code, never releases
   * a key on it; the journal records it as without effect.
   */
  public Answer superseded(Dispatch dispatch) {
    EffectOutcome outcome =
        new EffectOutcome.Ambiguous(
            ErrorCode.SUPERSEDED.name(),
            "attempt "
                + dispatch.getAttempt()
                + " of life "
                + dispatch.getIncarnation()
                + " was not run: the key's life was released before it started");
    return new Answer(outcomeRecords(dispatch, outcome), true);
  }

  /**
   * A dispatch on a connector that cannot take a repeat whose effect may have happened (started by
   * an earlier run, or a re-dispatch after an attempt that may have acted): found by lookup it
   * succeeded, otherwise it is held as ambiguous. Never run.
   */
  public Answer startedBefore(Dispatch dispatch) {
    Connector connector = connectors.get(dispatch.getTool());
    Lookup lookup;
    try {
      lookup =
          connector.capabilities().supportsLookup()
              ? connector.lookup(dispatch.getEffectKey())
              : Lookup.unsupported();
    } catch (RuntimeException e) {
      lookup = Lookup.unavailable();
    }
    EffectOutcome outcome =
        lookup.status() == Lookup.Status.FOUND
            ? new EffectOutcome.Succeeded(
                lookup.resultJson() == null ? "{}" : lookup.resultJson(),
                lookup.effectId(),
                List.of())
            : dispatch.getAttempt() > 1
                ? new EffectOutcome.Ambiguous(
                    "REDISPATCH_NOT_REPEATABLE",
                    "attempt "
                        + dispatch.getAttempt()
                        + " follows an attempt"
                        + " that may have acted, and the downstream cannot take a repeat (lookup: "
                        + lookup.status()
                        + "); held for"
                        + " reconciliation instead of run")
                : new EffectOutcome.Ambiguous(
                    "STARTED_BEFORE_REDELIVERY",
                    "attempt "
                        + dispatch.getAttempt()
                        + " was started by an"
                        + " earlier run whose outcome was never committed, and the downstream cannot take a repeat (lookup: "
                        + lookup.status()
                        + "); held for reconciliation instead of run again");
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    outcome = ResultBound.boundResult(dispatch, outcome, records);
    records.addAll(outcomeRecords(dispatch, outcome));
    return new Answer(records, false);
  }

  /**
   * The dead letter of a record on a dispatch topic that is not a Dispatch: the record as it came,
   * with the reason.
   */
  public static ProducerRecord<byte[], byte[]> undecodable(
      ConsumerRecord<byte[], byte[]> record, Exception e) {
    log.warn(
        "Dead-lettering an undecodable dispatch from {}-{}@{}",
        record.topic(),
        record.partition(),
        record.offset());
    Headers headers =
        DeadLetters.headers(
            ErrorCode.UNDECODABLE_DISPATCH.name(),
            e.getMessage(),
            record.topic(),
            record.partition(),
            record.offset());
    return new ProducerRecord<>(
        Topics.DISPATCH_DLQ,
        null,
        record.key(),
        DeadLetters.bounded(record.value(), headers),
        headers);
  }

  /**
   * The outcome record and, when it settles the key (SUCCEEDED or FAILED) and the ledger asked for
   * it, the final reply on each of the dispatch's reply topics: published in the outcome's
   * transaction, so the agent's answer needs no third commit. The outcome names the topics it
   * answered; the ledger answers the rest (duplicates that arrived since the dispatch). A ledger of
   * an earlier release asks for none and answers itself. The records carry the outcome's completion
   * time, which the ledger stores as the key's.
   */
  private List<ProducerRecord<byte[], byte[]>> outcomeRecords(
      Dispatch dispatch, EffectOutcome effect) {
    Outcome outcome = toOutcome(dispatch, effect);
    boolean settles =
        outcome.getStatus() == OutcomeStatus.SUCCEEDED
            || outcome.getStatus() == OutcomeStatus.FAILED;
    List<String> replyTopics = settles ? dispatch.getReplyTopics() : List.of();
    outcome.setRepliedTo(replyTopics);
    long completedAt = outcome.getCompletedAt().toEpochMilli();
    byte[] key = utf8(dispatch.getIdempotencyKey());
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    RecordHeaders traced = new RecordHeaders();
    Traces.inject(Traces.currentOr(dispatch.getTraceId()), traced);
    if (Span.current().isRecording()) {
      Span.current().setAttribute(Traces.OUTCOME, outcome.getStatus().name());
    }
    records.add(
        new ProducerRecord<>(
            Topics.OUTCOMES,
            null,
            completedAt,
            key,
            outcomes.serialize(Topics.OUTCOMES, outcome),
            traced));
    if (!replyTopics.isEmpty()) {
      ToolResult reply = Replies.settled(dispatch, outcome);
      for (String topic : replyTopics) {
        // the request id of the intent that started the life: every other call waiting on the key
        // reads this answer as a replay (it joined the action in flight)
        RecordHeaders headers = new RecordHeaders(traced.toArray());
        if (dispatch.getRequestId() != null) {
          headers.add(
              Topics.REQUEST_ID_HEADER, dispatch.getRequestId().getBytes(StandardCharsets.UTF_8));
        }
        records.add(
            new ProducerRecord<>(
                topic, null, completedAt, key, replies.serialize(topic, reply), headers));
      }
    }
    return records;
  }

  Outcome toOutcome(Dispatch dispatch, EffectOutcome outcome) {
    Outcome.Builder out =
        Outcome.newBuilder()
            .setIdempotencyKey(dispatch.getIdempotencyKey())
            .setTenant(dispatch.getTenant())
            .setTool(dispatch.getTool())
            .setAttempt(dispatch.getAttempt())
            .setCompletedAt(clock.instant())
            .setReplyTopic(dispatch.getReplyTopic())
            .setEffectKey(dispatch.getEffectKey())
            .setIncarnation(dispatch.getIncarnation())
            .setArgumentsHash(dispatch.getArgumentsHash());
    if (outcome instanceof EffectOutcome.Succeeded s) {
      return out.setStatus(OutcomeStatus.SUCCEEDED)
          .setResultJson(s.resultJson())
          .setEffectId(s.effectId())
          .build();
    }
    if (outcome instanceof EffectOutcome.Failed f) {
      return out.setStatus(OutcomeStatus.FAILED)
          .setError(
              error(
                  f.code(),
                  f.message(),
                  false,
                  "Fix the request; the downstream will not accept it as it is."))
          .build();
    }
    if (outcome instanceof EffectOutcome.Partial p) {
      return out.setStatus(OutcomeStatus.FAILED)
          .setResultJson(p.reportJson())
          .setError(
              error(ErrorCode.PARTIAL_SUCCESS.name(), p.message(), false, p.correctiveAction()))
          .build();
    }
    if (outcome instanceof EffectOutcome.Retryable r) {
      return out.setStatus(OutcomeStatus.RETRYABLE)
          .setError(
              error(
                  r.code(),
                  r.message(),
                  true,
                  "Nothing happened downstream; send the intent again later."))
          .build();
    }
    EffectOutcome.Ambiguous a = (EffectOutcome.Ambiguous) outcome;
    return out.setStatus(OutcomeStatus.AMBIGUOUS)
        .setError(
            error(
                a.code(),
                a.message(),
                false,
                ErrorCode.SUPERSEDED.name().equals(a.code())
                    ? ErrorCode.SUPERSEDED.correctiveAction()
                    : "The effect may have happened; reconcile with the downstream by key."))
        .build();
  }

  private static ErrorInfo error(String code, String message, boolean retriable, String action) {
    return ErrorInfo.newBuilder()
        .setCode(code)
        .setMessage(message)
        .setRetriable(retriable)
        .setCorrectiveAction(action)
        .build();
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
