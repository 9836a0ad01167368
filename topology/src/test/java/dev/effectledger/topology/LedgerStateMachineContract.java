package dev.effectledger.topology;

import static dev.effectledger.topology.LedgerDriver.T0;
import static dev.effectledger.topology.LedgerDriver.intent;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.test.TestRecord;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One test per row of the ledger state machine in docs/architecture.md (the table names each test),
 * asserting dispatches, replies, audit events and the store. Subclasses run it under each
 * processing guarantee.
 */
abstract class LedgerStateMachineContract {

  static final String CHARGE = "charge_card"; // irreversible, hold, coalesce, bypass allowed
  static final String TICKET = "create_ticket"; // write-idempotent, redispatch, max 2 attempts
  static final String EMAIL = "send_email"; // write-non-idempotent, refuse in flight, no bypass
  static final String LOOKUP = "lookup"; // read

  static final ToolPolicies POLICIES =
      ToolPolicies.of(
          ToolPolicy.builder(CHARGE, ToolClass.IRREVERSIBLE)
              .window(Duration.ofDays(30))
              .pendingTimeout(Duration.ofMinutes(2))
              .onInFlight(InFlightPolicy.COALESCE)
              .onAmbiguous(AmbiguityPolicy.HOLD)
              .lane("payments")
              .connector("http")
              .maxAttempts(3)
              .bypassAllowed(true)
              .build(),
          ToolPolicy.builder(TICKET, ToolClass.WRITE_IDEMPOTENT)
              .window(Duration.ofHours(1))
              .pendingTimeout(Duration.ofMinutes(1))
              .onInFlight(InFlightPolicy.COALESCE)
              .onAmbiguous(AmbiguityPolicy.REDISPATCH)
              .lane("tickets")
              .connector("http")
              .maxAttempts(2)
              .bypassAllowed(false)
              .build(),
          ToolPolicy.builder(EMAIL, ToolClass.WRITE_NON_IDEMPOTENT)
              .window(Duration.ofDays(7))
              .pendingTimeout(Duration.ofMinutes(5))
              .onInFlight(InFlightPolicy.REFUSE)
              .onAmbiguous(AmbiguityPolicy.HOLD)
              .lane("messaging")
              .connector("http")
              .maxAttempts(3)
              .bypassAllowed(false)
              .build(),
          ToolPolicy.builder(LOOKUP, ToolClass.READ)
              .window(Duration.ZERO)
              .pendingTimeout(Duration.ofMinutes(1))
              .onInFlight(InFlightPolicy.COALESCE)
              .onAmbiguous(AmbiguityPolicy.REDISPATCH)
              .lane("reads")
              .connector("http")
              .maxAttempts(1)
              .bypassAllowed(false)
              .build());

  static final String ARGS = "{\"amount\":1000,\"currency\":\"EUR\",\"to\":\"cus_1\"}";

  @TempDir Path stateDir;
  final List<String> doubleEffects = new CopyOnWriteArrayList<>();
  LedgerDriver ledger;
  TestOutputTopic<String, Dispatch> payments;
  TestOutputTopic<String, Dispatch> tickets;

  abstract String processingGuarantee();

  @BeforeEach
  void start() {
    LedgerObserver observer =
        new LedgerObserver() {
          @Override
          public void doubleEffect(String tool) {
            doubleEffects.add(tool);
          }
        };
    ledger =
        new LedgerDriver(
            url -> LedgerConfig.of(POLICIES, url).withObserver(observer),
            processingGuarantee(),
            stateDir);
    payments = ledger.dispatches("payments");
    tickets = ledger.dispatches("tickets");
  }

  @AfterEach
  void stop() {
    ledger.close();
  }

  private Dispatch chargeDispatched(String key) {
    ledger.send(intent(key, CHARGE, ARGS), T0);
    return payments.readValue();
  }

  private Instant at(Duration offset) {
    return T0.plus(offset);
  }

  @Test
  void shouldDispatchAndRecordPendingOnFirstIntent() {
    ledger.send(intent("k1", CHARGE, ARGS).setTraceId("trace-9"), T0);

    Dispatch dispatch = payments.readValue();
    assertThat(dispatch.getIdempotencyKey()).isEqualTo("k1");
    assertThat(dispatch.getEffectKey()).isEqualTo("k1");
    assertThat(dispatch.getAttempt()).isEqualTo(1);
    assertThat(dispatch.getArguments()).isEqualTo(ARGS);
    assertThat(dispatch.getTraceId()).isEqualTo("trace-9");
    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED);
    LedgerEntry entry = ledger.entry("acme", "k1");
    assertThat(entry.getState()).isEqualTo(LedgerState.PENDING);
    assertThat(entry.getAttempts()).isEqualTo(1);
    assertThat(entry.getFirstSeenAt()).isEqualTo(T0);
  }

  @Test
  void shouldReplyInFlightToDuplicateWhilePendingWhenCoalescing() {
    chargeDispatched("k1");
    ledger.audit.readValuesToList();

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(1)));

    assertThat(payments.isEmpty()).isTrue();
    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
    assertThat(reply.getAttempts()).isEqualTo(1);
    assertThat(ledger.auditTypes()).containsExactly(AuditType.IN_FLIGHT);
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.PENDING);
  }

  @Test
  void shouldRefuseDuplicateWhilePendingWhenPolicyRefuses() {
    ledger.send(intent("e1", EMAIL, ARGS), T0);
    ledger.send(intent("e1", EMAIL, ARGS), at(Duration.ofSeconds(1)));

    assertThat(ledger.dispatches("messaging").readValuesToList()).hasSize(1);
    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.REJECTED);
    assertThat(reply.getError().getCode()).isEqualTo("DUPLICATE_IN_FLIGHT");
    assertThat(reply.getError().getRetriable()).isTrue();
    assertThat(ledger.auditTypes())
        .containsExactly(AuditType.DISPATCHED, AuditType.REFUSED_IN_FLIGHT);
  }

  @Test
  void shouldCopyAnIntentsRequestIdOntoItsRepliesAndTheLifesFirstOntoItsFinalAnswers() {
    // A gateway waits on many calls of one key; the request id tells which call a refusal,
    // notice or replay answers. A final result answers every call, and names the call whose intent
    // started the key's life: every other call waiting reads it as a replay (it joined the action).
    ledger.intents.pipeInput(withRequestId(intent("e1", EMAIL, ARGS).build(), "call-1", T0));
    Dispatch dispatch = ledger.dispatches("messaging").readValue();
    assertThat(dispatch.getRequestId())
        .as("the dispatch names the intent that started the life, for the executor's answers")
        .isEqualTo("call-1");
    ledger.intents.pipeInput(
        withRequestId(intent("e1", EMAIL, ARGS).build(), "call-2", at(Duration.ofSeconds(1))));
    ledger.intents.pipeInput(
        withRequestId(
            intent("e1", EMAIL, "{\"other\":1}").build(), "call-3", at(Duration.ofSeconds(1))));

    var refused = ledger.results.readRecord();
    assertThat(refused.value().getError().getCode()).isEqualTo("DUPLICATE_IN_FLIGHT");
    assertThat(requestId(refused.headers())).isEqualTo("call-2");
    var conflict = ledger.results.readRecord();
    assertThat(conflict.value().getError().getCode()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(requestId(conflict.headers())).isEqualTo("call-3");

    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(2)));
    var finals = ledger.results.readRecordsToList();
    assertThat(finals).isNotEmpty();
    assertThat(finals)
        .allSatisfy(
            r -> {
              assertThat(r.value().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
              assertThat(requestId(r.headers())).isEqualTo("call-1");
            });
    assertThat(ledger.entry("acme", "e1").getRequestId())
        .as("a settled entry keeps no request id: every later answer is a replay")
        .isNull();

    ledger.intents.pipeInput(
        withRequestId(intent("e1", EMAIL, ARGS).build(), "call-4", at(Duration.ofSeconds(3))));
    var replay = ledger.results.readRecord();
    assertThat(replay.value().getReplayed()).isTrue();
    assertThat(requestId(replay.headers())).isEqualTo("call-4");
  }

  @Test
  void shouldNameTheRequestThatStartedEachLifeOnItsDispatch() {
    ledger.intents.pipeInput(withRequestId(intent("k1", CHARGE, ARGS).build(), "life-1", T0));
    Dispatch first = payments.readValue();
    ledger.outcome(first, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2))); // released
    ledger.intents.pipeInput(
        withRequestId(intent("k1", CHARGE, ARGS).build(), "life-2", at(Duration.ofSeconds(3))));
    Dispatch next = payments.readValue();

    assertThat(first.getRequestId()).isEqualTo("life-1");
    assertThat(next.getIncarnation()).isNotEqualTo(first.getIncarnation());
    assertThat(next.getRequestId()).as("a new life, started by another call").isEqualTo("life-2");
    assertThat(ledger.entry("acme", "k1").getRequestId()).isEqualTo("life-2");
  }

  private static TestRecord<String, dev.effectledger.schema.ToolIntent> withRequestId(
      ToolIntent intent, String requestId, Instant at) {
    var headers = new RecordHeaders();
    headers.add(Topics.REQUEST_ID_HEADER, requestId.getBytes(StandardCharsets.UTF_8));
    return new TestRecord<>(intent.getIdempotencyKey(), intent, headers, at);
  }

  private static String requestId(Headers headers) {
    var header = headers.lastHeader(Topics.REQUEST_ID_HEADER);
    return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
  }

  @Test
  void shouldStoreResultAndReplyOnSuccess() {
    Dispatch dispatch = chargeDispatched("k1");

    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_1\"}", at(Duration.ofSeconds(2)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(reply.getResultJson()).isEqualTo("{\"charge\":\"ch_1\"}");
    assertThat(reply.getReplayed()).isFalse();
    assertThat(reply.getEffectId()).isEqualTo("fx-k1");
    assertThat(reply.getCompletedAt()).isEqualTo(at(Duration.ofSeconds(2)));
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.COMPLETED);
    LedgerEntry entry = ledger.entry("acme", "k1");
    assertThat(entry.getState()).isEqualTo(LedgerState.SUCCEEDED);
    assertThat(entry.getResultJson()).isEqualTo("{\"charge\":\"ch_1\"}");
    assertThat(entry.getArguments()).as("arguments are not kept once settled").isEmpty();
  }

  @Test
  void shouldStoreFailureAndReplyNonRetriableOnFailedOutcome() {
    Dispatch dispatch = chargeDispatched("k1");

    ledger.outcome(dispatch, OutcomeStatus.FAILED, null, at(Duration.ofSeconds(2)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.FAILED);
    assertThat(reply.getError().getRetriable()).isFalse();
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.FAILED);
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.FAILED);
  }

  @Test
  void shouldReleaseKeyWhenRetriesExhaustedWithoutEffect() {
    Dispatch dispatch = chargeDispatched("k1");

    ledger.outcome(dispatch, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.FAILED);
    assertThat(reply.getError().getCode()).isEqualTo("RETRIES_EXHAUSTED");
    assertThat(reply.getError().getRetriable()).isTrue();
    assertThat(ledger.entry("acme", "k1")).as("a transient failure is never cached").isNull();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.RELEASED);

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(3)));
    assertThat(payments.readValue().getAttempt()).isEqualTo(1);
  }

  /**
   * A release's reply names the last intent the task had read (a client that published after it
   * must not take it as its answer: its intent starts the key's next life); no other reply does.
   */
  @Test
  void shouldNameTheIntentsAReleaseAnswersOnItsReply() {
    Dispatch dispatch = chargeDispatched("k1"); // the intent at offset 0
    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(1))); // 1, attached
    ledger.send(intent("k2", CHARGE, ARGS), at(Duration.ofSeconds(1))); // 2, another key
    TestRecord<String, ToolResult> notice = ledger.results.readRecord();
    assertThat(notice.value().getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
    assertThat(notice.headers().lastHeader(Topics.INTENTS_THROUGH_HEADER)).isNull();

    ledger.outcome(dispatch, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2)));

    TestRecord<String, ToolResult> released = ledger.results.readRecord();
    assertThat(released.value().getError().getCode()).isEqualTo("RETRIES_EXHAUSTED");
    assertThat(LedgerDriver.header(released.headers(), Topics.INTENTS_THROUGH_HEADER))
        .as("every intent up to the last one read came before the release")
        .isEqualTo("2");

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(3))); // 3: the next life
    Dispatch next = payments.readValuesToList().get(1);
    assertThat(next.getIdempotencyKey()).isEqualTo("k1");
    ledger.outcome(next, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(4)));
    TestRecord<String, ToolResult> settled = ledger.results.readRecord();
    assertThat(settled.value().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(settled.headers().lastHeader(Topics.INTENTS_THROUGH_HEADER)).isNull();
  }

  @Test
  void shouldHoldAsUnknownOnAmbiguousOutcomeWhenPolicyHolds() {
    Dispatch dispatch = chargeDispatched("k1");

    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(2)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(reply.getError().getCode()).isEqualTo("AMBIGUOUS_OUTCOME");
    assertThat(payments.isEmpty())
        .as("an irreversible effect is never re-dispatched blind")
        .isTrue();
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.HELD_UNKNOWN);
  }

  static final String PARTIAL_REPORT =
      "{\"done\":[{\"step\":1}],\"failed\":{\"step\":2},\"notDone\":[],"
          + "\"correctiveAction\":\"refund step 1\"}";

  /** A multi-write tool's executor reports that some of its writes took effect. */
  private Outcome partialOutcome(Dispatch dispatch, Duration after) {
    Outcome outcome =
        LedgerDriver.outcomeOf(dispatch, OutcomeStatus.FAILED, PARTIAL_REPORT, null, at(after));
    outcome.setError(
        dev.effectledger.schema.ErrorInfo.newBuilder()
            .setCode("PARTIAL_SUCCESS")
            .setMessage("steps 1-1 of 2 took effect; step 2 did not (HTTP_422); 0 not sent")
            .setRetriable(false)
            .setCorrectiveAction("refund step 1")
            .build());
    return outcome;
  }

  @Test
  void shouldHoldAPartialSuccessForAnOperatorNeverRetryingIt() {
    Dispatch dispatch = chargeDispatched("k1");

    ledger.outcomes.pipeInput(
        "k1", partialOutcome(dispatch, Duration.ofSeconds(2)), at(Duration.ofSeconds(2)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(reply.getError().getCode()).isEqualTo("PARTIAL_SUCCESS");
    assertThat(reply.getError().getCorrectiveAction()).isEqualTo("refund step 1");
    assertThat(reply.getResultJson()).isEqualTo(PARTIAL_REPORT);
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
    assertThat(ledger.audit.readValuesToList())
        .extracting(AuditEvent::getType, AuditEvent::getCode)
        .containsExactly(
            tuple(AuditType.DISPATCHED, null), tuple(AuditType.HELD_UNKNOWN, "PARTIAL_SUCCESS"));

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(10));
    assertThat(payments.isEmpty()).as("never re-dispatched by a timeout").isTrue();
    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofMinutes(11)));
    assertThat(payments.isEmpty()).as("nor by a retry").isTrue();
    ToolResult replay = ledger.results.readValue();
    assertThat(replay.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(replay.getReplayed()).isTrue();
    assertThat(replay.getError().getCode()).isEqualTo("PARTIAL_SUCCESS");
    assertThat(replay.getResultJson()).isEqualTo(PARTIAL_REPORT);
  }

  @Test
  void shouldSettleAHeldPartialSuccessAsAppliedOrReleasedByAnOperator() {
    Dispatch first = chargeDispatched("k1");
    ledger.outcomes.pipeInput(
        "k1", partialOutcome(first, Duration.ofSeconds(2)), at(Duration.ofSeconds(2)));
    Dispatch second = chargeDispatched("k2");
    ledger.outcomes.pipeInput(
        "k2", partialOutcome(second, Duration.ofSeconds(2)), at(Duration.ofSeconds(2)));
    ledger.results.readValuesToList();

    // A second partial report of the same attempt changes nothing.
    ledger.outcomes.pipeInput(
        "k1", partialOutcome(first, Duration.ofSeconds(3)), at(Duration.ofSeconds(3)));
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
    // The operator did the corrective action and marks k1 applied; k2 as not applied.
    ledger.outcome(first, OutcomeStatus.SUCCEEDED, "{\"fixed\":true}", at(Duration.ofSeconds(4)));
    ledger.outcome(second, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(4)));

    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
    assertThat(ledger.entry("acme", "k2")).as("released: its next intent runs it again").isNull();
    ledger.send(intent("k2", CHARGE, ARGS), at(Duration.ofSeconds(5)));
    assertThat(payments.readValue().getIdempotencyKey()).isEqualTo("k2");
  }

  @Test
  void shouldIndexHeldKeysAndCountInFlightAndHeldPerTool() {
    Dispatch first = chargeDispatched("k1");
    Dispatch second = chargeDispatched("k2");
    chargeDispatched("k3");
    // Written before the task's first rebuild step: the rebuild counts them, once.
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(1));
    assertThat(ledger.live.counting()).isFalse();
    assertThat(ledger.live.counts()).containsOnlyKeys(CHARGE);
    assertThat(ledger.live.counts().get(CHARGE)).containsExactly(3, 0);

    ledger.outcome(first, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(2)));
    ledger.outcome(second, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(2)));
    assertThat(ledger.heldKeys()).containsExactly("acme/k1", "acme/k2");
    assertThat(ledger.live.counts().get(CHARGE)).containsExactly(1, 2);

    // An operator settles k1 as applied and k2 as not applied: both leave the index.
    ledger.outcomes.pipeInput(
        "k1",
        operatorOutcome(first, OutcomeStatus.SUCCEEDED, "alice", at(Duration.ofSeconds(3))),
        at(Duration.ofSeconds(3)));
    ledger.outcomes.pipeInput(
        "k2",
        operatorOutcome(second, OutcomeStatus.RETRYABLE, "bob", at(Duration.ofSeconds(3))),
        at(Duration.ofSeconds(3)));

    assertThat(ledger.heldKeys()).isEmpty();
    assertThat(ledger.live.counts().get(CHARGE)).containsExactly(1, 0);
    assertThat(ledger.entry("acme", "k1").getEffectId()).isEqualTo("ch_manual");
    assertThat(ledger.entry("acme", "k2")).isNull();
    assertThat(ledger.audit.readValuesToList())
        .filteredOn(e -> e.getActor() != null)
        .extracting(
            AuditEvent::getIdempotencyKey,
            AuditEvent::getType,
            AuditEvent::getCode,
            AuditEvent::getActor)
        .containsExactly(
            tuple("k1", AuditType.COMPLETED, null, "alice"),
            tuple("k2", AuditType.RELEASED, "OPERATOR_RELEASED", "bob"));
  }

  /** What the console publishes when an operator settles a held key. */
  private static Outcome operatorOutcome(
      Dispatch held, OutcomeStatus status, String operator, Instant at) {
    Outcome outcome =
        LedgerDriver.outcomeOf(
            held,
            status,
            status == OutcomeStatus.SUCCEEDED ? "{\"effectId\":\"ch_manual\"}" : null,
            status == OutcomeStatus.SUCCEEDED ? "ch_manual" : null,
            at);
    outcome.setActor(operator);
    if (status == OutcomeStatus.RETRYABLE) {
      outcome.setError(
          dev.effectledger.schema.ErrorInfo.newBuilder()
              .setCode("OPERATOR_RELEASED")
              .setMessage("an operator found no effect")
              .setRetriable(true)
              .setCorrectiveAction("Send the intent again; it will run once.")
              .build());
    }
    return outcome;
  }

  @Test
  void shouldRedispatchWithSameKeyOnAmbiguousOutcomeWhenPolicyRedispatches() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch first = tickets.readValue();

    ledger.outcome(first, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(2)));

    Dispatch second = tickets.readValue();
    assertThat(second.getEffectKey()).isEqualTo(first.getEffectKey());
    assertThat(second.getAttempt()).isEqualTo(2);
    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.entry("acme", "t1").getState()).isEqualTo(LedgerState.PENDING);
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.REDISPATCHED);
  }

  @Test
  void shouldRedispatchWithSameKeyWhenPendingTimeoutPasses() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch first = tickets.readValue();

    ledger.driver.advanceWallClockTime(Duration.ofSeconds(30));
    assertThat(tickets.isEmpty()).as("not before the timeout").isTrue();
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(31));

    Dispatch second = tickets.readValue();
    assertThat(second.getEffectKey()).isEqualTo(first.getEffectKey());
    assertThat(second.getAttempt()).isEqualTo(2);
    assertThat(ledger.entry("acme", "t1").getAttempts()).isEqualTo(2);
  }

  @Test
  void shouldHoldAsUnknownWhenPendingTimeoutPassesForIrreversibleTool() {
    chargeDispatched("k1");

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(2).plusSeconds(1));

    assertThat(payments.isEmpty()).isTrue();
    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(reply.getError().getCode()).isEqualTo("PENDING_TIMEOUT");
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
  }

  @Test
  void shouldDoNothingWhenThePendingTimeoutOfAnEntryCompletedBeforeItPasses() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"id\":\"ch_1\"}", at(Duration.ofSeconds(5)));
    ledger.results.readValuesToList();
    ledger.audit.readValuesToList();

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(2).plusSeconds(1));

    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.audit.isEmpty()).isTrue();
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
  }

  @Test
  void shouldTimeOutAReusedKeyFromItsNewDispatchNotFromTheReleasedOne() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    ledger.outcome(tickets.readValue(), OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(1)));
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(30));
    ledger.send(intent("t1", TICKET, ARGS), at(Duration.ofSeconds(30)));
    assertThat(tickets.readValue().getAttempt()).isEqualTo(1);

    // The released dispatch's timeout (60 s) passes; the new one's (90 s) has not.
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(31));
    assertThat(tickets.isEmpty()).isTrue();
    assertThat(ledger.entry("acme", "t1").getAttempts()).isEqualTo(1);

    ledger.driver.advanceWallClockTime(Duration.ofSeconds(30));
    assertThat(tickets.readValue().getAttempt()).isEqualTo(2);
  }

  @Test
  void shouldHoldOnceMaxAttemptsAreSpent() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));

    assertThat(tickets.readValuesToList()).extracting(Dispatch::getAttempt).containsExactly(1, 2);
    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(ledger.entry("acme", "t1").getState()).isEqualTo(LedgerState.UNKNOWN);
  }

  @Test
  void shouldReplayStoredResultForDuplicateAfterSuccess() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_1\"}", at(Duration.ofSeconds(2)));
    ledger.results.readValue();
    ledger.audit.readValuesToList();

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofHours(1)));

    assertThat(payments.isEmpty()).isTrue();
    ToolResult replay = ledger.results.readValue();
    assertThat(replay.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(replay.getReplayed()).isTrue();
    assertThat(replay.getResultJson()).isEqualTo("{\"charge\":\"ch_1\"}");
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DEDUP_HIT);
  }

  @Test
  void shouldReplayStoredFailureForDuplicateAfterFailure() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.FAILED, null, at(Duration.ofSeconds(2)));
    ledger.results.readValue();

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofMinutes(5)));

    ToolResult replay = ledger.results.readValue();
    assertThat(replay.getStatus()).isEqualTo(ResultStatus.FAILED);
    assertThat(replay.getReplayed()).isTrue();
    assertThat(payments.isEmpty()).isTrue();
  }

  @Test
  void shouldRefuseKeyReusedWithOtherArgumentsWithoutRevealingResult() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_1\"}", at(Duration.ofSeconds(2)));
    ledger.results.readValue();
    ledger.audit.readValuesToList();

    ledger.send(intent("k1", CHARGE, "{\"amount\":999999}"), at(Duration.ofSeconds(3)));

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.REJECTED);
    assertThat(reply.getError().getCode()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(reply.getResultJson()).isNull();
    assertThat(reply.getEffectId()).isNull();
    assertThat(reply.getCompletedAt()).isNull();
    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.CONFLICT);
    assertThat(ledger.entry("acme", "k1").getResultJson()).isEqualTo("{\"charge\":\"ch_1\"}");
  }

  @Test
  void shouldRefuseKeyReusedWhilePending() {
    chargeDispatched("k1");

    ledger.send(intent("k1", CHARGE, "{\"amount\":1}"), at(Duration.ofSeconds(1)));

    assertThat(ledger.results.readValue().getError().getCode()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.PENDING);
  }

  @Test
  void shouldOnlyAuditLateOrDuplicateOutcomeOfSettledEntry() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_1\"}", at(Duration.ofSeconds(2)));
    ledger.results.readValue();
    ledger.audit.readValuesToList();

    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_2\"}", at(Duration.ofSeconds(3)));
    ledger.outcome(dispatch, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(4)));

    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.LATE_OUTCOME, AuditType.LATE_OUTCOME);
    assertThat(ledger.entry("acme", "k1").getResultJson()).isEqualTo("{\"charge\":\"ch_1\"}");
  }

  @Test
  void shouldAuditAndCountASecondEffectIdForASucceededKeyAsADoubleEffect() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", "ch_1", at(Duration.ofSeconds(2)));
    ledger.results.readValue();
    ledger.audit.readValuesToList();

    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", "ch_1", at(Duration.ofSeconds(3)));
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", "ch_2", at(Duration.ofSeconds(4)));

    List<AuditEvent> events = ledger.audit.readValuesToList();
    assertThat(events)
        .extracting(e -> e.getType(), e -> e.getCode(), e -> e.getEffectId())
        .containsExactly(
            Tuple.tuple(AuditType.LATE_OUTCOME, "SUCCEEDED", "ch_1"),
            Tuple.tuple(AuditType.LATE_OUTCOME, "DOUBLE_EFFECT", "ch_2"));
    assertThat(doubleEffects).containsExactly(CHARGE);
    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.entry("acme", "k1").getEffectId())
        .as("the first effect stays the answer")
        .isEqualTo("ch_1");
  }

  @Test
  void shouldNotTakeALateSuccessOfTheEffectKeyABypassReplacedForADoubleEffect() {
    Dispatch first = chargeDispatched("k1");
    ledger.outcome(first, OutcomeStatus.SUCCEEDED, "{}", "ch_1", at(Duration.ofSeconds(2)));
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-42 approved by ops"),
        at(Duration.ofSeconds(3)));
    Dispatch bypass = payments.readValue();
    ledger.outcome(bypass, OutcomeStatus.SUCCEEDED, "{}", "ch_2", at(Duration.ofSeconds(4)));
    ledger.audit.readValuesToList();

    ledger.outcome(first, OutcomeStatus.SUCCEEDED, "{}", "ch_1", at(Duration.ofSeconds(5)));

    assertThat(ledger.audit.readValuesToList())
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.getType()).isEqualTo(AuditType.LATE_OUTCOME);
              assertThat(e.getCode()).isEqualTo("SUCCEEDED");
            });
    assertThat(doubleEffects).isEmpty();
  }

  @Test
  void shouldIgnoreRetryableOutcomeOfAnEarlierAttempt() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch first = tickets.readValue();
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));
    tickets.readValue();

    ledger.outcome(first, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(70)));

    LedgerEntry entry = ledger.entry("acme", "t1");
    assertThat(entry.getState()).as("attempt 2 is still in flight").isEqualTo(LedgerState.PENDING);
    assertThat(ledger.results.isEmpty()).isTrue();
  }

  @Test
  void shouldAcceptSuccessOfAnEarlierAttempt() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch first = tickets.readValue();
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));

    ledger.outcome(first, OutcomeStatus.SUCCEEDED, "{\"id\":1}", at(Duration.ofSeconds(70)));

    assertThat(ledger.entry("acme", "t1").getState()).isEqualTo(LedgerState.SUCCEEDED);
  }

  @Test
  void shouldPurgeSettledEntryWhenWindowPassesCountedFromCompletion() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    ledger.outcome(tickets.readValue(), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(10)));
    ledger.audit.readValuesToList();

    // Stream time moves with records of any key: to 1 h after the intent, not yet after completion.
    ledger.send(intent("other", TICKET, ARGS), at(Duration.ofMinutes(65)));
    assertThat(ledger.entry("acme", "t1")).isNotNull();

    ledger.send(intent("other2", TICKET, ARGS), at(Duration.ofMinutes(72)));
    assertThat(ledger.entry("acme", "t1")).isNull();
    assertThat(ledger.audit.readValuesToList())
        .filteredOn(e -> e.getIdempotencyKey().equals("t1"))
        .extracting(e -> e.getType())
        .containsExactly(AuditType.EXPIRED);
  }

  @Test
  void shouldPurgeEntryCompletedByLateOutcomeAfterLaterExpiriesWerePurged() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch lateOne = tickets.readValue();
    ledger.send(intent("t2", TICKET, ARGS), at(Duration.ofMinutes(1)));
    ledger.outcome(tickets.readValue(), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(2)));
    ledger.send(intent("other", TICKET, ARGS), at(Duration.ofMinutes(70)));
    assertThat(ledger.entry("acme", "t2")).as("purged: its window ended at 62 min").isNull();

    // t1's outcome arrives late, stamped 5 min: its window ends at 65 min, before the purge that
    // ran at 70.
    ledger.outcome(lateOne, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(5)));
    assertThat(ledger.entry("acme", "t1").getState()).isEqualTo(LedgerState.SUCCEEDED);
    ledger.send(intent("other2", TICKET, ARGS), at(Duration.ofMinutes(80)));

    assertThat(ledger.entry("acme", "t1")).isNull();
  }

  /**
   * A ticker that moves a second each time it is read: every punctuation's budget runs out after
   * one scan.
   */
  private static LongSupplier aSecondPerRead() {
    long[] now = {0};
    return () -> now[0] += 1_000_000_000L;
  }

  private void restartWith(UnaryOperator<LedgerConfig> config, String dir) {
    ledger.close();
    ledger =
        new LedgerDriver(
            url -> config.apply(LedgerConfig.of(POLICIES, url)),
            processingGuarantee(),
            stateDir.resolve(dir));
    tickets = ledger.dispatches("tickets");
    payments = ledger.dispatches("payments");
  }

  private List<String> settledTickets(int n, Instant at) {
    List<String> keys = IntStream.rangeClosed(1, n).mapToObj(i -> "t" + i).toList();
    keys.forEach(key -> ledger.send(intent(key, TICKET, ARGS), T0));
    tickets.readValuesToList().forEach(d -> ledger.outcome(d, OutcomeStatus.SUCCEEDED, "{}", at));
    return keys;
  }

  @Test
  void shouldPurgeEveryDueEntryInOnePunctuationScanAfterScanWhileTheBudgetLasts() {
    restartWith(c -> c.withBatchSize(2), "batches-of-two");
    List<String> keys = settledTickets(7, at(Duration.ofMinutes(1)));

    ledger.send(intent("tick", TICKET, ARGS), at(Duration.ofMinutes(62)));

    assertThat(remaining(keys)).as("seven entries, four scans of two, one punctuation").isEmpty();
  }

  @Test
  void shouldPurgeOnTheWallClockPunctuationWithoutWaitingForTheStreamTimeOne() {
    restartWith(
        c ->
            c.withPunctuations(Duration.ofSeconds(1), Duration.ofDays(365), Duration.ofMillis(200)),
        "wall-clock-purge");
    List<String> keys = settledTickets(3, at(Duration.ofMinutes(1)));
    ledger.send(intent("tick", TICKET, ARGS), at(Duration.ofMinutes(62)));
    assertThat(remaining(keys)).as("the stream-time punctuation is a year away").hasSize(3);

    ledger.driver.advanceWallClockTime(Duration.ofSeconds(1));

    assertThat(remaining(keys)).isEmpty();
  }

  @Test
  void shouldTimeOutEveryDuePendingEntryInOnePunctuationScanAfterScan() {
    restartWith(c -> c.withBatchSize(2), "timeouts-in-batches");
    List<String> keys = IntStream.rangeClosed(1, 5).mapToObj(i -> "c" + i).toList();
    keys.forEach(key -> ledger.send(intent(key, CHARGE, ARGS), T0));
    payments.readValuesToList();

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(2).plusSeconds(1));

    assertThat(keys)
        .allSatisfy(
            k -> assertThat(ledger.entry("acme", k).getState()).isEqualTo(LedgerState.UNKNOWN));
  }

  @Test
  void shouldPurgeEntriesSharingOneDeadlineAcrossPunctuationsWithoutSkippingAny() {
    ledger.close();
    ledger =
        new LedgerDriver(
            url -> LedgerConfig.of(POLICIES, url).withBatchSize(2).withTicker(aSecondPerRead()),
            processingGuarantee(),
            stateDir.resolve("two-per-punctuation"));
    tickets = ledger.dispatches("tickets");
    List<String> keys = List.of("k1", "k2", "k3", "k4", "k5");
    for (String key : keys) {
      ledger.send(intent(key, TICKET, ARGS), T0);
    }
    ledger.send(intent("k1x", TICKET, ARGS), T0);
    List<Dispatch> dispatched = tickets.readValuesToList();
    for (Dispatch d : dispatched.subList(0, keys.size())) {
      ledger.outcome(d, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(1)));
    }

    // Every window ends at 61 min; each later record moves stream time a purge interval on.
    ledger.send(intent("tick1", TICKET, ARGS), at(Duration.ofMinutes(62)));
    assertThat(remaining(keys)).containsExactly("k3", "k4", "k5");

    // k1x completes late with the same deadline; its index key sorts before the next scan's start.
    ledger.outcome(
        dispatched.get(keys.size()), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(1)));
    ledger.send(intent("tick2", TICKET, ARGS), at(Duration.ofMinutes(63)));
    assertThat(remaining(keys)).containsExactly("k4", "k5");
    assertThat(ledger.entry("acme", "k1x"))
        .as("purged before k4: its index key is smaller")
        .isNull();

    ledger.send(intent("tick3", TICKET, ARGS), at(Duration.ofMinutes(64)));
    assertThat(remaining(keys)).isEmpty();
    assertThat(ledger.audit.readValuesToList())
        .filteredOn(e -> e.getType() == AuditType.EXPIRED)
        .extracting(e -> e.getIdempotencyKey())
        .containsExactly("k1", "k2", "k1x", "k3", "k4", "k5");
  }

  private List<String> remaining(List<String> keys) {
    return keys.stream().filter(k -> ledger.entry("acme", k) != null).toList();
  }

  @Test
  void shouldTreatIntentAfterWindowAsNewAction() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    ledger.outcome(tickets.readValue(), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(1)));

    ledger.send(intent("t1", TICKET, ARGS), at(Duration.ofMinutes(61)));

    assertThat(tickets.readValue().getAttempt()).isEqualTo(1);
    assertThat(ledger.entry("acme", "t1").getState()).isEqualTo(LedgerState.PENDING);
  }

  @Test
  void shouldNeverPurgePendingOrUnknownEntries() {
    chargeDispatched("pending");
    Dispatch held = chargeDispatched("held");
    ledger.outcome(held, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));

    ledger.send(intent("late", TICKET, ARGS), at(Duration.ofDays(400)));

    assertThat(ledger.entry("acme", "pending").getState()).isEqualTo(LedgerState.PENDING);
    assertThat(ledger.entry("acme", "held").getState()).isEqualTo(LedgerState.UNKNOWN);
  }

  @Test
  void shouldReplayUnknownToDuplicateAndSettleOnReconciledOutcome() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.results.readValue();

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(2)));
    ToolResult replay = ledger.results.readValue();
    assertThat(replay.getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(replay.getReplayed()).isTrue();

    ledger.outcome(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"charge\":\"ch_1\"}", at(Duration.ofSeconds(3)));
    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
  }

  @Test
  void shouldReleaseHeldKeyWhenReconciliationFindsNoEffect() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.results.readValue();

    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(2)));
    assertThat(ledger.entry("acme", "k1").getState())
        .as("ambiguity is no evidence")
        .isEqualTo(LedgerState.UNKNOWN);

    ledger.outcome(dispatch, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(3)));
    assertThat(ledger.entry("acme", "k1")).isNull();
    assertThat(ledger.results.readValue().getError().getRetriable()).isTrue();
  }

  /**
   * The double effect a single-broker chaos run found (2026-11-23): the reconciler released a held
   * key, the agent sent it again, and a second resolution of the first life, made from a view of
   * tool-audit that had not caught up, released the second life while its effect was in flight; the
   * agent sent again and a third life charged a second time.
   */
  @Test
  void shouldNotLetARetryableOutcomeOfAnEarlierLifeReleaseTheKeysNextLife() {
    Dispatch first = chargeDispatched("k1");
    ledger.outcome(first, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.outcome(first, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2)));
    assertThat(ledger.entry("acme", "k1")).as("released: no effect happened").isNull();
    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(3)));
    Dispatch second = payments.readValue();
    assertThat(second.getAttempt()).isEqualTo(first.getAttempt());
    assertThat(second.getIncarnation()).isNotNull().isNotEqualTo(first.getIncarnation());
    ledger.results.readValuesToList();
    ledger.audit.readValuesToList();

    ledger.outcome(first, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(4)));
    ledger.outcome(first, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(5)));

    assertThat(ledger.entry("acme", "k1").getState())
        .as("the second life's effect is in flight")
        .isEqualTo(LedgerState.PENDING);
    assertThat(ledger.results.isEmpty()).as("no release, no hold told to the agent").isTrue();
    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.LATE_OUTCOME, AuditType.LATE_OUTCOME);

    ledger.outcome(second, OutcomeStatus.SUCCEEDED, "{\"id\":1}", at(Duration.ofSeconds(6)));
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
  }

  /**
   * Issue 52's second defect: a released life's dispatch acted after all (on a lane whose
   * downstream honours keys, a queued dispatch runs under the effect key the next life reuses). Its
   * success was answered but not recorded, so the next intent started another life.
   */
  @Test
  void shouldReinstateALateSuccessOfAReleasedLifeAndReplayItToTheNextIntent() {
    Dispatch first = chargeDispatched("k1");
    assertThat(first.getArgumentsHash()).as("dispatches carry the hash").isNotNull();
    ledger.outcome(first, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.outcome(first, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2)));
    assertThat(ledger.entry("acme", "k1")).as("released").isNull();
    ledger.results.readValuesToList();
    ledger.audit.readValuesToList();

    ledger.outcome(first, OutcomeStatus.SUCCEEDED, "{\"id\":1}", at(Duration.ofSeconds(3)));

    LedgerEntry back = ledger.entry("acme", "k1");
    assertThat(back.getState()).isEqualTo(LedgerState.SUCCEEDED);
    assertThat(back.getEffectId()).isEqualTo("fx-k1");
    assertThat(back.getIncarnation()).isEqualTo(first.getIncarnation());
    assertThat(ledger.audit.readValue().getCode()).isEqualTo("REINSTATED");
    assertThat(ledger.results.isEmpty()).as("nobody waits on the released life").isTrue();

    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(4)));
    ToolResult replay = ledger.results.readValue();
    assertThat(replay.getReplayed()).isTrue();
    assertThat(replay.getEffectId()).isEqualTo("fx-k1");
    assertThat(payments.isEmpty()).as("not run again").isTrue();
    ledger.send(intent("k1", CHARGE, "{\"amount\":999}"), at(Duration.ofSeconds(5)));
    assertThat(ledger.results.readValue().getError().getCode())
        .as("the key stays owned by its arguments")
        .isEqualTo("IDEMPOTENCY_KEY_REUSED");
  }

  @Test
  void shouldOnlyAuditASupersededDispatchWhateverItsAttempt() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.results.readValuesToList();
    ledger.audit.readValuesToList();
    Outcome superseded =
        LedgerDriver.outcomeOf(
            dispatch, OutcomeStatus.AMBIGUOUS, null, null, at(Duration.ofSeconds(2)));
    superseded.setError(ErrorCode.SUPERSEDED.toError("not run: its life was released"));

    ledger.outcomes.pipeInput("k1", superseded, at(Duration.ofSeconds(2)));

    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
    assertThat(ledger.results.isEmpty()).isTrue();
    AuditEvent audited = ledger.audit.readValue();
    assertThat(audited.getType()).isEqualTo(AuditType.LATE_OUTCOME);
    assertThat(audited.getCode()).isEqualTo("SUPERSEDED");
  }

  @Test
  void shouldMatchAnOutcomeThatNamesNoLifeByAttemptAlone() {
    Dispatch dispatch = chargeDispatched("k1");
    Outcome fromAnEarlierRelease =
        LedgerDriver.outcomeOf(
            dispatch, OutcomeStatus.RETRYABLE, null, null, at(Duration.ofSeconds(1)));
    fromAnEarlierRelease.setIncarnation(null);

    ledger.outcomes.pipeInput("k1", fromAnEarlierRelease, at(Duration.ofSeconds(1)));

    assertThat(ledger.entry("acme", "k1")).as("released").isNull();
    assertThat(ledger.results.readValue().getError().getRetriable()).isTrue();
  }

  @Test
  void shouldNameTheKeysLifeInItsDispatchesAndAuditEvents() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));

    Long life = ledger.entry("acme", "k1").getIncarnation();
    assertThat(life).isNotNull();
    assertThat(dispatch.getIncarnation()).isEqualTo(life);
    ledger.outcome(dispatch, OutcomeStatus.RETRYABLE, null, at(Duration.ofSeconds(2)));
    assertThat(ledger.audit.readValuesToList())
        .extracting(AuditEvent::getType, AuditEvent::getIncarnation)
        .containsExactly(
            tuple(AuditType.DISPATCHED, life),
            tuple(AuditType.HELD_UNKNOWN, life),
            tuple(AuditType.RELEASED, life));
  }

  @Test
  void shouldNameTheEffectKeyInAuditEvents() {
    chargeDispatched("k1");

    assertThat(ledger.audit.readValue().getEffectKey()).isEqualTo("k1");
  }

  @Test
  void shouldPassReadToolsStraightThroughWithoutEntry() {
    ledger.send(intent("r1", LOOKUP, "{\"id\":1}"), T0);
    ledger.send(intent("r1", LOOKUP, "{\"id\":1}"), T0);

    var reads = ledger.dispatches("reads").readValuesToList();
    assertThat(reads).hasSize(2);
    assertThat(ledger.entry("acme", "r1")).isNull();

    ledger.outcome(
        reads.get(0), OutcomeStatus.SUCCEEDED, "{\"name\":\"Ada\"}", at(Duration.ofSeconds(1)));
    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(reply.getResultJson()).isEqualTo("{\"name\":\"Ada\"}");
    assertThat(ledger.entry("acme", "r1")).isNull();
  }

  @Test
  void shouldScopeKeysByTenant() {
    ledger.send(intent("k1", CHARGE, ARGS), T0);
    ledger.send(intent("k1", CHARGE, "{\"other\":true}").setTenant("globex"), T0);

    assertThat(payments.readValuesToList())
        .extracting(Dispatch::getTenant)
        .containsExactly("acme", "globex");
    assertThat(ledger.entry("acme", "k1")).isNotNull();
    assertThat(ledger.entry("globex", "k1")).isNotNull();
    assertThat(ledger.results.isEmpty()).as("no conflict across tenants").isTrue();
  }

  @Test
  void shouldRejectUnknownTool() {
    ledger.send(intent("k1", "drop_database", ARGS), T0);

    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getStatus()).isEqualTo(ResultStatus.REJECTED);
    assertThat(reply.getError().getCode()).isEqualTo("UNKNOWN_TOOL");
    assertThat(ledger.store().approximateNumEntries()).isZero();
  }

  @Test
  void shouldRunApprovedBypassUnderFreshEffectKeyOnce() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));

    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-42 approved by ops"),
        at(Duration.ofSeconds(2)));
    Dispatch bypass = payments.readValue();
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-42 approved by ops"),
        at(Duration.ofSeconds(3)));

    assertThat(bypass.getEffectKey()).startsWith("k1~bypass-").isNotEqualTo("k1");
    assertThat(bypass.getAttempt()).isEqualTo(2);
    assertThat(payments.isEmpty()).as("the same approval does not run twice").isTrue();
  }

  @Test
  void shouldRefuseAnApprovalUsedAlreadyAfterALaterBypassOfTheKey() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-A"), at(Duration.ofSeconds(2)));
    ledger.outcome(payments.readValue(), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(3)));
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-B"), at(Duration.ofSeconds(4)));
    ledger.outcome(payments.readValue(), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(5)));
    ledger.results.readValuesToList();

    // ticket-A again, after ticket-B's bypass: it ran once; it runs no more.
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-A"), at(Duration.ofSeconds(6)));

    assertThat(payments.isEmpty()).as("a used approval never runs the key again").isTrue();
    ToolResult refused = ledger.results.readValue();
    assertThat(refused.getStatus()).isEqualTo(ResultStatus.REJECTED);
    assertThat(refused.getError().getCode()).isEqualTo("BYPASS_APPROVAL_INVALID");
    assertThat(refused.getError().getMessage()).contains("used already");
    assertThat(ledger.entry("acme", "k1").getBypassesUsed()).hasSize(2);
    // ticket-B, the latest, is answered from its run as any duplicate is
    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-B"), at(Duration.ofSeconds(7)));
    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
  }

  private static final KeyPair OPS = BypassApprovals.generate();
  private static final KeyPair INTRUDER = BypassApprovals.generate();

  /** A ledger that accepts approvals signed by "ops" only. */
  private void signedApprovalsOnly() {
    restartWith(
        c ->
            c.withBypassApprovals(
                BypassApprovals.verifiedBy(
                    java.util.Map.of("ops", BypassApprovals.encode(OPS.getPublic())))),
        "signed");
  }

  private static String approval(String signer, KeyPair pair, String key, Instant expiresAt) {
    return BypassApprovals.sign(
        new BypassApprovals.Approval(
            signer,
            "acme",
            key,
            "alice",
            "INC-42: the customer asked to be charged again",
            expiresAt),
        pair.getPrivate());
  }

  @Test
  void shouldRunASignedBypassApprovalOnceAndAuditItsOperator() {
    signedApprovalsOnly();
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));
    ledger.audit.readValuesToList();
    String approved = approval("ops", OPS, "k1", at(Duration.ofHours(1)));

    ledger.send(intent("k1", CHARGE, ARGS).setBypassApproval(approved), at(Duration.ofSeconds(2)));
    Dispatch bypass = payments.readValue();
    ledger.send(intent("k1", CHARGE, ARGS).setBypassApproval(approved), at(Duration.ofSeconds(3)));

    assertThat(bypass.getEffectKey()).startsWith("k1~bypass-");
    assertThat(payments.isEmpty()).as("the same approval does not run twice").isTrue();
    assertThat(ledger.audit.readValuesToList())
        .filteredOn(e -> e.getType() == AuditType.BYPASSED)
        .singleElement()
        .satisfies(e -> assertThat(e.getActor()).isEqualTo("alice"));
  }

  @Test
  void shouldRefuseABypassApprovalThatIsUnsignedForgedExpiredOrForAnotherKey() {
    signedApprovalsOnly();
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));
    ledger.results.readValuesToList();
    ledger.audit.readValuesToList();
    String valid = approval("ops", OPS, "k1", at(Duration.ofHours(1)));
    String[] parts = valid.split("\\.");
    String otherPayload =
        java.util.Base64.getUrlEncoder()
            .withoutPadding()
            .encodeToString(
                new String(
                        java.util.Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8)
                    .replace("alice", "mallory")
                    .getBytes(StandardCharsets.UTF_8));
    java.util.Map<String, String> refused = new java.util.LinkedHashMap<>();
    refused.put("ticket-42 approved by ops", "not signed");
    refused.put(parts[0] + "." + otherPayload + "." + parts[2], "altered or forged");
    refused.put(approval("ops", INTRUDER, "k1", at(Duration.ofHours(1))), "altered or forged");
    refused.put(
        approval("intruder", INTRUDER, "k1", at(Duration.ofHours(1))),
        "not one this ledger trusts");
    refused.put(approval("ops", OPS, "k2", at(Duration.ofHours(1))), "for another key (acme/k2)");
    refused.put(approval("ops", OPS, "k1", at(Duration.ofSeconds(2))), "expired");

    int second = 2;
    for (java.util.Map.Entry<String, String> bad : refused.entrySet()) {
      ledger.send(
          intent("k1", CHARGE, ARGS).setBypassApproval(bad.getKey()),
          at(Duration.ofSeconds(second++)));
      ToolResult reply = ledger.results.readValue();
      assertThat(reply.getStatus()).as(bad.getValue()).isEqualTo(ResultStatus.REJECTED);
      assertThat(reply.getError().getCode()).isEqualTo("BYPASS_APPROVAL_INVALID");
      assertThat(reply.getError().getMessage()).contains(bad.getValue());
    }

    assertThat(payments.isEmpty()).as("nothing ran").isTrue();
    assertThat(ledger.audit.readValuesToList())
        .hasSize(refused.size())
        .allSatisfy(
            e -> {
              assertThat(e.getType()).isEqualTo(AuditType.REJECTED);
              assertThat(e.getCode()).isEqualTo("BYPASS_APPROVAL_INVALID");
            });
    assertThat(ledger.store().get("acme/k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
  }

  /**
   * A bypass of a held key would start a new life while the held one's dispatch may still wait on
   * its lane, unfenced: both could act (issue 52). The key is released through a fence instead.
   */
  @Test
  void shouldRefuseABypassOfAKeyHeldWhileItsDispatchMayStillRun() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.AMBIGUOUS, null, at(Duration.ofSeconds(1)));
    ledger.results.readValue();

    ledger.send(
        intent("k1", CHARGE, ARGS).setBypassApproval("ticket-42 approved by ops"),
        at(Duration.ofSeconds(2)));

    ToolResult refused = ledger.results.readValue();
    assertThat(refused.getError().getCode()).isEqualTo("BYPASS_NOT_ALLOWED");
    assertThat(refused.getError().getMessage()).contains("settle it first");
    assertThat(payments.isEmpty()).isTrue();
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.UNKNOWN);
  }

  @Test
  void shouldRefuseBypassWhenPolicyForbidsIt() {
    ledger.send(intent("e1", EMAIL, ARGS), T0);
    Dispatch dispatch = ledger.dispatches("messaging").readValue();
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));
    ledger.results.readValue();

    ledger.send(intent("e1", EMAIL, ARGS).setBypassApproval("please"), at(Duration.ofSeconds(2)));

    assertThat(ledger.results.readValue().getError().getCode()).isEqualTo("BYPASS_NOT_ALLOWED");
    assertThat(ledger.dispatches("messaging").isEmpty()).isTrue();
  }

  @Test
  void shouldLeaveTheFinalReplyToTheExecutorThatAnsweredInItsOutcomesTransaction() {
    Dispatch dispatch = chargeDispatched("k1");
    assertThat(dispatch.getReplyTopics()).containsExactly("tool-results");
    assertThat(dispatch.getFirstSeenAt()).isEqualTo(T0);

    ledger.answered(
        dispatch, OutcomeStatus.SUCCEEDED, "{\"id\":\"ch_1\"}", at(Duration.ofSeconds(2)));

    assertThat(ledger.results.isEmpty()).as("no second final reply").isTrue();
    assertThat(ledger.auditTypes()).containsExactly(AuditType.DISPATCHED, AuditType.COMPLETED);
    assertThat(ledger.entry("acme", "k1").getState()).isEqualTo(LedgerState.SUCCEEDED);
    ledger.send(intent("k1", CHARGE, ARGS), at(Duration.ofSeconds(3)));
    assertThat(ledger.results.readValue().getReplayed()).isTrue();
  }

  @Test
  void shouldBuildTheSameReplyAsTheExecutorFromTheSameOutcome() {
    Dispatch dispatch = chargeDispatched("k1");
    ToolResult executors =
        Replies.settled(
            dispatch,
            LedgerDriver.outcomeOf(
                dispatch,
                OutcomeStatus.FAILED,
                "{\"declined\":true}",
                null,
                at(Duration.ofSeconds(2))));

    ledger.outcome(
        dispatch, OutcomeStatus.FAILED, "{\"declined\":true}", at(Duration.ofSeconds(2)));

    assertThat(ledger.results.readValue()).isEqualTo(executors);
  }

  @Test
  void shouldGiveTheFinalReplyToADuplicateThatArrivedAfterTheExecutorAnswered() {
    // The executor committed its outcome and its reply; a duplicate reaches the ledger before the
    // outcome does, is told IN_FLIGHT, and its client waits on: the ledger answers it on settling.
    Dispatch dispatch = chargeDispatched("k2");
    ledger.send(intent("k2", CHARGE, ARGS), at(Duration.ofSeconds(1)));
    ledger.send(
        intent("k2", CHARGE, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));
    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
    assertThat(ledger.results("tool-results.gateway-2").readValue().getStatus())
        .isEqualTo(ResultStatus.IN_FLIGHT);

    ToolResult answered =
        ledger.answered(
            dispatch, OutcomeStatus.SUCCEEDED, "{\"id\":\"ch_2\"}", at(Duration.ofSeconds(2)));

    ToolResult replay = ToolResult.newBuilder(answered).setReplayed(true).build();
    assertThat(ledger.results.readValuesToList())
        .as("the duplicate on the first intent's topic")
        .containsExactly(replay);
    assertThat(ledger.results("tool-results.gateway-2").readValuesToList())
        .as("the duplicate on another topic")
        .containsExactly(replay);
    assertThat(ledger.entry("acme", "k2").getWaiters()).isEmpty();
  }

  @Test
  void shouldAnswerEveryWaitingTopicWhenAnExecutorOfAnEarlierReleaseSettlesTheKey() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.send(
        intent("k1", CHARGE, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));
    ledger.results("tool-results.gateway-2").readValue();

    // No repliedTo: it answered nobody.
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(2)));

    ToolResult original = ledger.results.readValue();
    assertThat(original.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(original.getReplayed()).isFalse();
    assertThat(ledger.results("tool-results.gateway-2").readValue())
        .isEqualTo(ToolResult.newBuilder(original).setReplayed(true).build());
  }

  @Test
  void shouldAskTheNextAttemptsExecutorToAnswerTheDuplicatesThatWaitedForThePreviousOne() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    tickets.readValue();
    ledger.send(
        intent("t1", TICKET, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));

    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));

    Dispatch second = tickets.readValue();
    assertThat(second.getReplyTopics()).containsExactly("tool-results", "tool-results.gateway-2");
    ledger.answered(second, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(70)));
    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.results("tool-results.gateway-2").readValuesToList())
        .as("only the IN_FLIGHT notice: the second attempt's executor answered it")
        .extracting(ToolResult::getStatus)
        .containsExactly(ResultStatus.IN_FLIGHT);
  }

  @Test
  void shouldAnswerTheTopicsTheSettlingExecutorDidNotKnowWhenAnOlderAttemptSettles() {
    ledger.send(intent("t1", TICKET, ARGS), T0);
    Dispatch first = tickets.readValue();
    ledger.send(
        intent("t1", TICKET, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));
    ledger.results("tool-results.gateway-2").readValue();
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(61));
    tickets.readValue();

    // Attempt 1 succeeds late; its executor answered only the first intent's topic.
    ToolResult answered =
        ledger.answered(first, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(70)));

    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.results("tool-results.gateway-2").readValue().getStatus())
        .isEqualTo(answered.getStatus());
  }

  @Test
  void shouldHoldWithAReplyToEveryWaitingTopic() {
    chargeDispatched("k1");
    ledger.send(
        intent("k1", CHARGE, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));
    ledger.results("tool-results.gateway-2").readValue();

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(2).plusSeconds(1));

    assertThat(ledger.results.readValue().getStatus()).isEqualTo(ResultStatus.UNKNOWN);
    assertThat(ledger.results("tool-results.gateway-2").readValue().getStatus())
        .isEqualTo(ResultStatus.UNKNOWN);
  }

  @Test
  void shouldAnswerADuplicateRefusedInFlightWhenTheKeySettles() {
    ledger.send(intent("e1", EMAIL, ARGS), T0);
    Dispatch dispatch = ledger.dispatches("messaging").readValue();
    ledger.send(
        intent("e1", EMAIL, ARGS).setReplyTopic("tool-results.gateway-2"),
        at(Duration.ofSeconds(1)));
    assertThat(ledger.results("tool-results.gateway-2").readValue().getError().getCode())
        .isEqualTo("DUPLICATE_IN_FLIGHT");

    ToolResult answered =
        ledger.answered(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(2)));

    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.results("tool-results.gateway-2").readValuesToList())
        .containsExactly(ToolResult.newBuilder(answered).setReplayed(true).build());
  }

  @Test
  void shouldSendRepliesToTheIntentsReplyTopic() {
    Dispatch dispatch = chargeDispatched("k1");
    ledger.outcome(dispatch, OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofSeconds(1)));
    ledger.results.readValue();

    ledger.send(
        intent("k1", CHARGE, ARGS).setReplyTopic("tool-results.agent-7"),
        at(Duration.ofSeconds(2)));

    assertThat(ledger.results.isEmpty()).isTrue();
    assertThat(ledger.results("tool-results.agent-7").readValue().getReplayed()).isTrue();
  }

  @Test
  void shouldAnswerAKeyWithAStoredEntryFromItWhateverTheToolsClassIsNow() {
    // Written when the tool was still a write tool; it has since been reclassified as read.
    ledger.send(intent("r9", LOOKUP, "{\"id\":9}"), T0);
    ledger.dispatches("reads").readValuesToList();
    LedgerEntry stored =
        LedgerEntry.newBuilder()
            .setIdempotencyKey("r9")
            .setTenant("acme")
            .setRunId("run-1")
            .setStepId("step-r9")
            .setTool(LOOKUP)
            .setEffectKey("r9")
            .setArgumentsHash(intent("r9", LOOKUP, "{\"id\":9}").getArgumentsHash())
            .setArguments("")
            .setState(LedgerState.SUCCEEDED)
            .setAttempts(1)
            .setFirstSeenAt(T0)
            .setLastDispatchedAt(T0)
            .setCompletedAt(T0)
            .setResultJson("{\"charged\":true}")
            .setEffectId("fx-r9")
            .build();
    ledger.store().put("acme/r9", stored);
    ledger.results.readValuesToList();

    ledger.send(intent("r9", LOOKUP, "{\"id\":9}"), at(Duration.ofSeconds(5)));

    assertThat(ledger.dispatches("reads").isEmpty()).as("not passed through again").isTrue();
    ToolResult reply = ledger.results.readValue();
    assertThat(reply.getReplayed()).isTrue();
    assertThat(reply.getResultJson()).isEqualTo("{\"charged\":true}");
  }

  @Test
  void shouldKeepEntriesOfAToolTheFileDoesNotNameUnderTheSafestTermsNotTheUnknownToolDefault() {
    ToolPolicy lenient =
        ToolPolicy.builder("*", ToolClass.WRITE_IDEMPOTENT)
            .window(Duration.ofHours(1))
            .pendingTimeout(Duration.ofMinutes(1))
            .onInFlight(InFlightPolicy.COALESCE)
            .onAmbiguous(AmbiguityPolicy.REDISPATCH)
            .lane("tickets")
            .connector("http")
            .maxAttempts(3)
            .bypassAllowed(false)
            .build();
    restartWith(
        c -> c.withPolicies(new ToolPolicies(POLICIES.tools(), Optional.of(lenient))),
        "unlisted-tool");
    ledger.send(intent("u1", "refund_card", ARGS), T0);
    ledger.send(intent("u2", "refund_card", ARGS), T0);
    List<Dispatch> dispatched = tickets.readValuesToList();
    ledger.outcome(dispatched.get(1), OutcomeStatus.SUCCEEDED, "{}", at(Duration.ofMinutes(1)));

    ledger.driver.advanceWallClockTime(Duration.ofMinutes(5).plusSeconds(1));
    ledger.send(intent("tick", TICKET, ARGS), at(Duration.ofHours(3)));

    assertThat(tickets.readValuesToList())
        .extracting(Dispatch::getIdempotencyKey)
        .as("u1 not re-dispatched")
        .containsExactly("tick");
    assertThat(ledger.entry("acme", "u1").getState())
        .as("held after the default pending timeout")
        .isEqualTo(LedgerState.UNKNOWN);
    assertThat(ledger.entry("acme", "u2"))
        .as("kept past the unknown-tool window of 1 h: 30 days")
        .isNotNull();
  }
}
