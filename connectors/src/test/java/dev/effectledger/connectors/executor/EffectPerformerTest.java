package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRecord;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.connectors.executor.internal.Invoker;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.FakeClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** The effect performer over a fake connector: no broker, no Kafka client. */
class EffectPerformerTest {

  private static final Instant NOW = Instant.parse("2026-11-23T10:00:00Z");
  private static final ToolPolicies POLICIES =
      ToolPolicies.of(
          ToolPolicy.builder("charge", ToolClass.IRREVERSIBLE)
              .window(Duration.ofDays(30))
              .pendingTimeout(Duration.ofMinutes(2))
              .onInFlight(InFlightPolicy.COALESCE)
              .onAmbiguous(AmbiguityPolicy.HOLD)
              .lane("payments")
              .connector("http")
              .maxAttempts(1)
              .bypassAllowed(false)
              .build());
  private static final Capabilities KEYLESS_WITH_LOOKUP = new Capabilities(false, false, true);

  private final RegistryAvroSerde<Outcome> outcomes =
      new RegistryAvroSerde<>(SchemaRegistries.forUrl("mock://performer"), Outcome.class);
  private final RegistryAvroSerde<ToolResult> replies =
      new RegistryAvroSerde<>(SchemaRegistries.forUrl("mock://performer"), ToolResult.class);

  /**
   * A connector answering with {@code answer}, looking effects up with {@code lookup}, recording
   * the keys it ran.
   */
  private static final class Fake implements Connector {
    final Function<EffectRequest, EffectOutcome> answer;
    final Function<String, Lookup> lookup;
    final List<String> ran = new ArrayList<>();

    Fake(Function<EffectRequest, EffectOutcome> answer, Function<String, Lookup> lookup) {
      this.answer = answer;
      this.lookup = lookup;
    }

    @Override
    public Capabilities capabilities() {
      return KEYLESS_WITH_LOOKUP;
    }

    @Override
    public EffectOutcome execute(EffectRequest request) {
      ran.add(request.effectKey());
      return answer.apply(request);
    }

    @Override
    public Lookup lookup(String effectKey) {
      return lookup.apply(effectKey);
    }
  }

  private EffectPerformer performer(Connector connector) {
    return new EffectPerformer(
        connector == null ? Map.of() : Map.of("charge", connector),
        POLICIES,
        new Invoker(duration -> {}, () -> 0.0),
        outcomes,
        replies,
        new FakeClock(NOW));
  }

  /** The ledger's name for the life of the key the dispatches belong to. */
  private static final long LIFE = 17;

  private static Dispatch dispatch(int attempt) {
    return Dispatch.newBuilder()
        .setIdempotencyKey("k1")
        .setEffectKey("k1")
        .setTenant("acme")
        .setRunId("run-1")
        .setStepId("step-1")
        .setTool("charge")
        .setLane("payments")
        .setArguments("{\"amount\":1}")
        .setAttempt(attempt)
        .setDispatchedAt(NOW)
        .setIncarnation(LIFE)
        .build();
  }

  private Outcome outcomeIn(List<ProducerRecord<byte[], byte[]>> records) {
    List<ProducerRecord<byte[], byte[]>> found =
        records.stream().filter(r -> r.topic().equals(Topics.OUTCOMES)).toList();
    assertThat(found).as("exactly one outcome per answer").hasSize(1);
    assertThat(new String(found.get(0).key(), StandardCharsets.UTF_8)).isEqualTo("k1");
    return outcomes.deserialize(Topics.OUTCOMES, found.get(0).value());
  }

  @Test
  void shouldTellTheObserverOfEachEffectItsRetriesAndItsOutcome() {
    List<String> seen = new ArrayList<>();
    ExecutorObserver observer =
        new ExecutorObserver() {
          @Override
          public void started(String tool) {
            seen.add("started " + tool);
          }

          @Override
          public void retried(String tool) {
            seen.add("retried " + tool);
          }

          @Override
          public void finished(String tool, String outcome, Duration took) {
            seen.add("finished " + tool + " " + outcome + (took.isNegative() ? " negative" : ""));
          }
        };
    java.util.concurrent.atomic.AtomicInteger calls =
        new java.util.concurrent.atomic.AtomicInteger();
    Fake connector =
        new Fake(
            r ->
                calls.incrementAndGet() == 1
                    ? new EffectOutcome.Retryable("HTTP_503", "busy")
                    : new EffectOutcome.Succeeded("{\"id\":\"ch_1\"}", "ch_1", List.of()),
            key -> Lookup.unsupported());
    EffectPerformer observed =
        new EffectPerformer(
            Map.of("charge", connector),
            POLICIES,
            new Invoker(duration -> {}, () -> 0.0),
            outcomes,
            replies,
            new FakeClock(NOW),
            observer);

    observed.perform(dispatch(1));
    new EffectPerformer(
            Map.of(),
            POLICIES,
            new Invoker(duration -> {}, () -> 0.0),
            outcomes,
            replies,
            new FakeClock(NOW),
            observer)
        .perform(dispatch(1)); // no connector: nothing was run, nothing to observe

    assertThat(seen)
        .containsExactly("started charge", "retried charge", "finished charge succeeded");
  }

  @Test
  void shouldPublishTheSuccessWithItsEffectRecordsBeforeTheOutcome() {
    EffectRecord effect =
        new EffectRecord(
            "payments-ledger",
            "k1".getBytes(StandardCharsets.UTF_8),
            "{}".getBytes(StandardCharsets.UTF_8));
    Fake connector =
        new Fake(
            r -> new EffectOutcome.Succeeded("{\"id\":\"ch_1\"}", "ch_1", List.of(effect)),
            k -> Lookup.notFound());

    EffectPerformer.Answer answer = performer(connector).perform(dispatch(1));

    assertThat(connector.ran).containsExactly("k1");
    assertThat(answer.noEffect()).isFalse();
    assertThat(answer.records())
        .extracting(ProducerRecord::topic)
        .containsExactly("payments-ledger", Topics.OUTCOMES);
    Outcome outcome = outcomeIn(answer.records());
    assertThat(outcome.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(outcome.getEffectId()).isEqualTo("ch_1");
    assertThat(outcome.getResultJson()).isEqualTo("{\"id\":\"ch_1\"}");
    assertThat(outcome.getCompletedAt()).isEqualTo(NOW);
  }

  @Test
  void shouldAnswerTheDispatchsReplyTopicsInTheOutcomesTransactionWhenItSettlesTheKey() {
    Fake connector =
        new Fake(
            r -> new EffectOutcome.Succeeded("{\"id\":\"ch_1\"}", "ch_1", List.of()), k -> null);
    Dispatch dispatch =
        Dispatch.newBuilder(dispatch(1))
            .setReplyTopics(List.of("tool-results", "tool-results.gateway-2"))
            .setFirstSeenAt(NOW.minusSeconds(1))
            .build();

    List<ProducerRecord<byte[], byte[]>> records = performer(connector).perform(dispatch).records();

    assertThat(records)
        .extracting(ProducerRecord::topic)
        .containsExactly(Topics.OUTCOMES, "tool-results", "tool-results.gateway-2");
    Outcome outcome = outcomeIn(records);
    assertThat(outcome.getRepliedTo()).containsExactly("tool-results", "tool-results.gateway-2");
    ToolResult expected = Replies.settled(dispatch, outcome);
    assertThat(records.subList(1, 3))
        .allSatisfy(
            r -> {
              assertThat(replies.deserialize(r.topic(), r.value())).isEqualTo(expected);
              assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("k1");
              assertThat(r.timestamp()).isEqualTo(NOW.toEpochMilli());
            });
    assertThat(expected.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(expected.getFirstSeenAt()).isEqualTo(NOW.minusSeconds(1));
    assertThat(records.get(0).timestamp())
        .as("the ledger stores the outcome's record time as the completion time")
        .isEqualTo(NOW.toEpochMilli());
  }

  @Test
  void shouldLeaveTheReplyToTheLedgerWhenTheOutcomeDoesNotSettleTheKeyOrTheLedgerAskedForNone() {
    Dispatch asking =
        Dispatch.newBuilder(dispatch(1)).setReplyTopics(List.of("tool-results")).build();
    Fake ambiguous =
        new Fake(r -> new EffectOutcome.Ambiguous("TIMEOUT", "no answer in 5 s"), k -> null);
    Fake succeeding =
        new Fake(r -> new EffectOutcome.Succeeded("{}", "ch_1", List.of()), k -> null);

    List<ProducerRecord<byte[], byte[]>> held = performer(ambiguous).perform(asking).records();
    List<ProducerRecord<byte[], byte[]>> fromAnOlderLedger =
        performer(succeeding).perform(dispatch(1)).records();

    assertThat(held).extracting(ProducerRecord::topic).containsExactly(Topics.OUTCOMES);
    assertThat(outcomeIn(held).getRepliedTo()).isEmpty();
    assertThat(fromAnOlderLedger)
        .extracting(ProducerRecord::topic)
        .containsExactly(Topics.OUTCOMES);
    assertThat(outcomeIn(fromAnOlderLedger).getRepliedTo()).isEmpty();
  }

  @Test
  void shouldNameTheLifeOfTheKeyItAnswersOnEveryOutcome() {
    Fake succeeding =
        new Fake(r -> new EffectOutcome.Succeeded("{}", "fx-1", List.of()), k -> Lookup.notFound());
    Fake retrying =
        new Fake(r -> new EffectOutcome.Retryable("UNAVAILABLE", "503"), k -> Lookup.notFound());

    List<Outcome> outcomes =
        List.of(
            outcomeIn(performer(succeeding).perform(dispatch(1)).records()),
            outcomeIn(performer(retrying).perform(dispatch(1)).records()),
            outcomeIn(performer(retrying).startedBefore(dispatch(1)).records()));

    assertThat(outcomes)
        .extracting(Outcome::getStatus)
        .containsExactly(OutcomeStatus.SUCCEEDED, OutcomeStatus.RETRYABLE, OutcomeStatus.AMBIGUOUS);
    assertThat(outcomes)
        .as("echoed from the dispatch: a late one cannot settle the key's next life")
        .extracting(Outcome::getIncarnation)
        .containsOnly(LIFE);
  }

  @Test
  void shouldMapEachFailureKindToItsStatusAndRetriability() {
    record Case(EffectOutcome answer, OutcomeStatus status, boolean retriable, boolean noEffect) {}
    for (Case c :
        List.of(
            new Case(
                new EffectOutcome.Failed("DECLINED", "card declined"),
                OutcomeStatus.FAILED,
                false,
                false),
            new Case(
                new EffectOutcome.Retryable("UNAVAILABLE", "503"),
                OutcomeStatus.RETRYABLE,
                true,
                true),
            new Case(
                new EffectOutcome.Ambiguous("TIMEOUT", "no answer"),
                OutcomeStatus.AMBIGUOUS,
                false,
                false))) {
      EffectPerformer.Answer answer =
          performer(new Fake(r -> c.answer(), k -> Lookup.notFound())).perform(dispatch(1));

      Outcome outcome = outcomeIn(answer.records());
      assertThat(outcome.getStatus()).isEqualTo(c.status());
      assertThat(outcome.getError().getCode()).isEqualTo(c.answer().code());
      assertThat(outcome.getError().getRetriable()).isEqualTo(c.retriable());
      assertThat(answer.noEffect())
          .as("only a retryable answer proves no effect")
          .isEqualTo(c.noEffect());
    }
  }

  @Test
  void shouldAnswerRetryableWithoutRunningAToolThatHasNoConnectorHere() {
    EffectPerformer performer = performer(null);

    EffectPerformer.Answer answer = performer.perform(dispatch(1));

    assertThat(outcomeIn(answer.records()).getError().getCode()).isEqualTo("NO_CONNECTOR");
    assertThat(answer.noEffect()).isTrue();
    assertThat(performer.effectsRun()).isZero();
  }

  @Test
  void shouldReplaceAnOversizedResultByAMarkerAndDeadLetterItCut() {
    String big = "\"" + "x".repeat(EffectPerformer.MAX_RESULT_BYTES + 10) + "\"";
    Fake connector =
        new Fake(
            r -> new EffectOutcome.Succeeded(big, "ch_big", List.of()), k -> Lookup.notFound());

    EffectPerformer.Answer answer = performer(connector).perform(dispatch(1));

    ProducerRecord<byte[], byte[]> letter =
        answer.records().stream()
            .filter(r -> r.topic().equals(Topics.DISPATCH_DLQ))
            .findFirst()
            .orElseThrow();
    assertThat(letter.value()).hasSize(DeadLetters.MAX_VALUE_BYTES);
    assertThat(
            new String(
                letter.headers().lastHeader(DeadLetters.CODE).value(), StandardCharsets.UTF_8))
        .isEqualTo("RESULT_TOO_LARGE");
    Outcome outcome = outcomeIn(answer.records());
    assertThat(outcome.getStatus())
        .as("the effect happened; the key still completes")
        .isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(outcome.getResultJson())
        .contains("RESULT_TOO_LARGE")
        .contains(DeadLetters.sha256(big.getBytes(StandardCharsets.UTF_8)));
    assertThat(outcome.getEffectId()).isEqualTo("ch_big");
  }

  @Test
  void shouldNeverRunADispatchStartedBeforeButAnswerItByLookup() {
    Fake found =
        new Fake(
            r -> new EffectOutcome.Succeeded("{}", "again", List.of()),
            k -> Lookup.found("ch_1", "{\"id\":\"ch_1\"}"));

    Outcome outcome = outcomeIn(performer(found).startedBefore(dispatch(1)).records());

    assertThat(found.ran).as("not run again").isEmpty();
    assertThat(outcome.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(outcome.getEffectId()).isEqualTo("ch_1");
  }

  @Test
  void shouldHoldADispatchStartedBeforeThatLookupCannotFindAndNameWhy() {
    Fake notFound =
        new Fake(
            r -> new EffectOutcome.Succeeded("{}", "again", List.of()), k -> Lookup.notFound());
    Fake failing =
        new Fake(
            r -> new EffectOutcome.Succeeded("{}", "again", List.of()),
            k -> {
              throw new IllegalStateException("lookup down");
            });

    Outcome redelivered = outcomeIn(performer(notFound).startedBefore(dispatch(1)).records());
    Outcome redispatched = outcomeIn(performer(notFound).startedBefore(dispatch(2)).records());
    Outcome lookupFailed = outcomeIn(performer(failing).startedBefore(dispatch(1)).records());

    assertThat(notFound.ran).isEmpty();
    assertThat(failing.ran).isEmpty();
    assertThat(List.of(redelivered, redispatched, lookupFailed))
        .extracting(Outcome::getStatus)
        .containsOnly(OutcomeStatus.AMBIGUOUS);
    assertThat(redelivered.getError().getCode()).isEqualTo("STARTED_BEFORE_REDELIVERY");
    assertThat(redispatched.getError().getCode()).isEqualTo("REDISPATCH_NOT_REPEATABLE");
    assertThat(lookupFailed.getError().getMessage()).contains("UNAVAILABLE");
  }

  @Test
  void shouldDeadLetterAnUndecodableDispatchAsItCameWithItsCoordinates() {
    ConsumerRecord<byte[], byte[]> record =
        new ConsumerRecord<>(
            Topics.dispatch("payments"),
            3,
            42L,
            "k1".getBytes(StandardCharsets.UTF_8),
            new byte[] {9, 9, 9});

    ProducerRecord<byte[], byte[]> letter =
        EffectPerformer.undecodable(record, new IllegalArgumentException("not avro"));

    assertThat(letter.topic()).isEqualTo(Topics.DISPATCH_DLQ);
    assertThat(letter.value()).containsExactly(9, 9, 9);
    assertThat(
            new String(
                letter.headers().lastHeader(DeadLetters.SOURCE_OFFSET).value(),
                StandardCharsets.UTF_8))
        .isEqualTo("42");
    assertThat(
            new String(
                letter.headers().lastHeader(DeadLetters.CODE).value(), StandardCharsets.UTF_8))
        .isEqualTo("UNDECODABLE_DISPATCH");
  }
}
