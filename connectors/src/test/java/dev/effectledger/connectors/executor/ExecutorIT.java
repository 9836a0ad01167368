package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Fixtures;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.kafka.KafkaConnector;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The executor runtime on a real broker against a counting HTTP downstream. */
@Tag("integration")
@Timeout(180)
class ExecutorIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static int run;

  private String lane;
  private String registry;
  private CountingDownstream downstream;
  private TopicCollector<Outcome> outcomes;

  @BeforeEach
  void start(TestInfo test) {
    // Every test gets its own lane, outcomes are shared: collectors filter by this test's keys.
    lane = "lane" + (++run);
    registry = "mock://executor-it";
    if (run == 1) {
      kafka.createTopics(Map.of("tool-outcomes", 1, "tool-dispatch.dlq", 1, "effects", 1));
    }
    kafka.createTopics(Map.of("tool-dispatch." + lane, 1));
    downstream = CountingDownstream.start(Duration.ofSeconds(2));
    outcomes = Fixtures.outcomes(kafka.bootstrapServers(), registry);
  }

  @AfterEach
  void stop() {
    outcomes.close();
    downstream.close();
  }

  private ToolPolicies chargeOn(String url, boolean honoursKeys) throws Exception {
    return chargeOn(url, honoursKeys, "1s");
  }

  private ToolPolicies chargeOn(String url, boolean honoursKeys, String timeout) throws Exception {
    return ToolPolicies.of(
        ToolPolicy.builder("charge", ToolClass.WRITE_IDEMPOTENT)
            .window(Duration.ofHours(1))
            .pendingTimeout(Duration.ofMinutes(5))
            .onInFlight(InFlightPolicy.COALESCE)
            .onAmbiguous(AmbiguityPolicy.REDISPATCH)
            .lane(lane)
            .connector("http")
            .maxAttempts(3)
            .bypassAllowed(false)
            .build()
            .withSettings(
                "http",
                JSON.readTree(
                    "{\"url\":\""
                        + url
                        + "\",\"timeout\":\""
                        + timeout
                        + "\",\"honoursKeys\":"
                        + honoursKeys
                        + ",\"effectIdPointer\":\"/id\"}")));
  }

  /** Waits until the downstream ran one effect for each of {@code keys}, in all. */
  private void awaitOneEffectPerKey(List<String> keys) {
    await("the downstream runs one effect per key")
        .atMost(Duration.ofSeconds(60))
        .untilAsserted(
            () ->
                assertThat(downstream.totalEffects())
                    .as("effects the downstream ran")
                    .isEqualTo(keys.size()));
  }

  private ExecutorConfig config() {
    return ExecutorConfig.of(Fixtures.kafka(kafka.bootstrapServers()), List.of(lane), registry)
        .withGroupId("executors-" + lane);
  }

  /**
   * An executor that commits nothing for 30 s, not even a finished burst, so that a halt stands for
   * a crash between the effects and their commit.
   */
  private ExecutorConfig uncommitting() {
    return config()
        .withCommitInterval(Duration.ofSeconds(30))
        .withMinCommitInterval(Duration.ofSeconds(30));
  }

  private EffectExecutor start(ToolPolicies policies, ExecutorConfig config) {
    return EffectExecutor.start(
        config, Connectors.forLanes(policies, List.of(lane), Clock.systemUTC()), policies);
  }

  private List<String> keys(int n) {
    return IntStream.range(0, n).mapToObj(i -> lane + "-k" + i).toList();
  }

  private void dispatch(List<String> keys, String tool) {
    Fixtures.send(
        kafka.bootstrapServers(),
        registry,
        keys.stream().map(k -> Fixtures.dispatch(k, tool, lane, "{\"amount\":100}")).toList());
  }

  private void awaitOutcomes(List<String> keys) {
    await("an outcome for each of " + keys.size() + " keys")
        .atMost(Duration.ofSeconds(90))
        .untilAsserted(
            () -> assertThat(outcomes.byKey.keySet()).as("keys with an outcome").containsAll(keys));
  }

  @Test
  void shouldRunEffectsOfOnePartitionConcurrentlyAndPublishOneOutcomeEach() throws Exception {
    downstream.latency(Duration.ofMillis(200));
    List<String> keys = keys(64);
    try (EffectExecutor executor =
        start(chargeOn(downstream.url(), true), config().withConcurrency(16))) {
      dispatch(keys, "charge");
      awaitOutcomes(keys);
      await("exactly one outcome per key, for 1 s")
          .during(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () ->
                  assertThat(keys)
                      .allSatisfy(
                          k ->
                              assertThat(outcomes.byKey.get(k))
                                  .as("outcomes of %s", k)
                                  .hasSize(1)));
    }

    assertThat(downstream.maxConcurrent())
        .as("effects of one partition ran side by side")
        .isGreaterThan(4);
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.effects(k)).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .satisfies(
                      o -> {
                        assertThat(o.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
                        assertThat(o.getEffectId()).startsWith("ch_");
                      });
            });
  }

  @Test
  void shouldRerunUncommittedEffectsWithSameKeyAfterCrashWithoutSecondEffect() throws Exception {
    List<String> keys = keys(40);
    ToolPolicies policies = chargeOn(downstream.url(), true);
    EffectExecutor crashed = start(policies, uncommitting());
    dispatch(keys, "charge");
    awaitOneEffectPerKey(keys);
    crashed.halt();
    assertThat(keys)
        .as("nothing was committed before the crash")
        .noneMatch(outcomes.byKey::containsKey);

    try (EffectExecutor restarted = start(policies, config())) {
      awaitOutcomes(keys);
    }

    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k)).as("redelivered and run again").isEqualTo(2);
              assertThat(downstream.effects(k)).as("the downstream deduped the key").isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .extracting(Outcome::getStatus)
                  .isEqualTo(OutcomeStatus.SUCCEEDED);
            });
  }

  @Test
  void shouldAnswerTheAgentInTheOutcomesTransactionAndOnlyWithIt() throws Exception {
    // No ledger runs here: a reply that arrives is the executor's, published with the outcome.
    String replies = "tool-results." + lane;
    kafka.createTopics(Map.of(replies, 1));
    List<String> keys = keys(20);
    List<Dispatch> dispatches =
        keys.stream()
            .map(
                k -> {
                  Dispatch d = Fixtures.dispatch(k, "charge", lane, "{\"amount\":100}");
                  d.setReplyTopics(List.of(replies));
                  d.setFirstSeenAt(d.getDispatchedAt());
                  d.setRequestId("call-" + k);
                  return d;
                })
            .toList();
    ToolPolicies policies = chargeOn(downstream.url(), true);
    try (TopicCollector<ToolResult> answers =
        new TopicCollector<>(
            kafka.bootstrapServers(),
            replies,
            new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), ToolResult.class))) {
      EffectExecutor crashed = start(policies, uncommitting());
      Fixtures.send(kafka.bootstrapServers(), registry, dispatches);
      awaitOneEffectPerKey(keys);
      crashed.halt();
      assertThat(answers.records).as("no answer before its outcome commits").isEmpty();

      try (EffectExecutor restarted = start(policies, config())) {
        awaitOutcomes(keys);
        await("one answer per key on " + replies)
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () ->
                    assertThat(answers.byKey.keySet())
                        .as("keys answered on %s", replies)
                        .hasSize(keys.size()));
      }

      for (Dispatch d : dispatches) {
        Outcome outcome = outcomes.byKey.get(d.getIdempotencyKey()).get(0);
        assertThat(outcome.getRepliedTo()).containsExactly(replies);
        assertThat(answers.byKey.get(d.getIdempotencyKey()))
            .singleElement()
            .isEqualTo(Replies.settled(d, outcome));
      }
      // each answer names the call whose intent started the key's life: every other call waiting
      // on the key reads it as a replay
      assertThat(answers.records)
          .allSatisfy(
              r ->
                  assertThat(r.headers().lastHeader(Topics.REQUEST_ID_HEADER))
                      .extracting(h -> new String(h.value(), StandardCharsets.UTF_8))
                      .isEqualTo("call-" + r.key()));
    }
  }

  private ToolPolicies chargeOnKeyIgnoringApi(ToolClass toolClass, boolean lookup)
      throws Exception {
    return chargeOnKeyIgnoringApi(toolClass, lookup, "1s");
  }

  private ToolPolicies chargeOnKeyIgnoringApi(ToolClass toolClass, boolean lookup, String timeout)
      throws Exception {
    return ToolPolicies.of(
        ToolPolicy.builder("charge", toolClass)
            .window(Duration.ofHours(1))
            .pendingTimeout(Duration.ofMinutes(5))
            .onInFlight(InFlightPolicy.COALESCE)
            .onAmbiguous(AmbiguityPolicy.HOLD)
            .lane(lane)
            .connector("http")
            .maxAttempts(3)
            .bypassAllowed(false)
            .build()
            .withSettings(
                "http",
                JSON.readTree(
                    "{\"url\":\""
                        + downstream.url()
                        + "\",\"timeout\":\""
                        + timeout
                        + "\",\"honoursKeys\":false,"
                        + "\"effectIdPointer\":\"/id\""
                        + (lookup ? ",\"lookupUrl\":\"" + downstream.url() + "?key={key}\"" : "")
                        + "}")));
  }

  /**
   * On a real broker: every marker is answered by its outcome's transaction and tombstoned later,
   * once the sweep has read the group's offsets back past its dispatch, while the executor runs.
   */
  @Test
  void shouldTombstoneEachMarkerAfterItsAnswerOnceTheOffsetsReadBackHavePassedIt()
      throws Exception {
    downstream.honoursKeys(false);
    List<String> keys = keys(20);
    ToolPolicies policies = chargeOnKeyIgnoringApi(ToolClass.IRREVERSIBLE, true);
    try (EffectExecutor executor = start(policies, config());
        TopicCollector<String> journal =
            new TopicCollector<>(
                kafka.bootstrapServers(),
                AttemptJournal.journalTopic(lane),
                new StringDeserializer())) {
      dispatch(keys, "charge");
      awaitOutcomes(keys);
      await("every key's attempt-1 marker tombstoned in the journal")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(keys)
                      .allSatisfy(
                          k ->
                              assertThat(journal.byKey.get(AttemptJournal.marker(k, 1)))
                                  .as("journal history of the marker of %s", k)
                                  .isNotNull()
                                  .contains((String) null)));
      assertThat(executor.isRunning()).isTrue();
      assertThat(keys)
          .allSatisfy(
              k ->
                  assertThat(journal.byKey.get(AttemptJournal.marker(k, 1)))
                      .as("the marker of %s: started, answered, then removed", k)
                      .satisfiesExactly(
                          started -> assertThat(started).startsWith("started "),
                          answered -> assertThat(answered).startsWith("answered "),
                          removed -> assertThat(removed).isNull()));
    }
  }

  @Test
  void shouldNotRunAStartedEffectAgainOnAKeyIgnoringDownstreamButFindItByLookup() throws Exception {
    downstream.honoursKeys(false);
    List<String> keys = keys(40);
    ToolPolicies policies = chargeOnKeyIgnoringApi(ToolClass.IRREVERSIBLE, true);
    EffectExecutor crashed = start(policies, uncommitting());
    dispatch(keys, "charge");
    awaitOneEffectPerKey(keys);
    crashed.halt();
    assertThat(keys)
        .as("nothing was committed before the crash")
        .noneMatch(outcomes.byKey::containsKey);

    try (EffectExecutor restarted = start(policies, config())) {
      awaitOutcomes(keys);
    }

    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k))
                  .as("journalled as started: not sent again")
                  .isEqualTo(1);
              assertThat(downstream.effects(k)).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .satisfies(
                      o -> {
                        assertThat(o.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
                        assertThat(o.getEffectId()).as("found by lookup").startsWith("ch_");
                      });
            });
  }

  /**
   * Ten dispatches on one partition of a downstream that ignores keys, the first held downstream
   * (before it acts) while the nine after it answer and their outcomes commit: effects finished out
   * of order, with the partition's committed offset (the low watermark) still at the first.
   */
  private record OutOfOrder(
      ToolPolicies policies, EffectExecutor first, String held, List<String> answered) {}

  private OutOfOrder tenDispatchesTheFirstHeld(ExecutorConfig config) throws Exception {
    downstream.honoursKeys(false);
    List<String> keys = keys(10);
    downstream.holdBeforeEffect(keys.get(0));
    ToolPolicies policies = chargeOnKeyIgnoringApi(ToolClass.IRREVERSIBLE, true, "30s");
    EffectExecutor first = start(policies, config);
    dispatch(keys, "charge");
    awaitOutcomes(keys.subList(1, keys.size()));
    assertThat(outcomes.byKey)
        .as("the first dispatch is still running")
        .doesNotContainKey(keys.get(0));
    return new OutOfOrder(policies, first, keys.get(0), keys.subList(1, keys.size()));
  }

  /**
   * The next owner answers the held dispatch without running it, then the held request acts once.
   */
  private void answerTheHeldOneAndLetItAct(OutOfOrder run) {
    awaitOutcomes(List.of(run.held()));
    downstream.releaseHeld(run.held());
    await("exactly one effect of the held " + run.held() + ", for 2 s")
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () ->
                assertThat(downstream.effects(run.held()))
                    .as("effects of %s", run.held())
                    .isEqualTo(1));
  }

  private void assertNothingRanTwice(OutOfOrder run) {
    assertThat(run.answered())
        .allSatisfy(
            k -> {
              assertThat(downstream.effects(k)).as("effects of %s", k).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .as("outcomes of %s", k)
                  .singleElement()
                  .extracting(Outcome::getStatus)
                  .isEqualTo(OutcomeStatus.SUCCEEDED);
            });
    assertThat(outcomes.byKey.get(run.held()))
        .as("the started one is not run again: held, not guessed")
        .singleElement()
        .satisfies(o -> assertThat(o.getError().getCode()).isEqualTo("STARTED_BEFORE_REDELIVERY"));
    assertThat(downstream.requests(run.held())).isEqualTo(1);
  }

  /** A crash redelivers all ten; the nine answered ones must not act a second time. */
  @Test
  void shouldNotRunAgainEffectsAnsweredAboveTheWatermarkWhenTheExecutorCrashes() throws Exception {
    OutOfOrder run = tenDispatchesTheFirstHeld(config().withConcurrency(16));
    run.first().halt();

    try (EffectExecutor restarted = start(run.policies(), config().withConcurrency(16))) {
      answerTheHeldOneAndLetItAct(run);
    }

    assertNothingRanTwice(run);
  }

  /**
   * The executor is not dead: a second one started with its instance id (a supervisor restarting a
   * process it wrongly thought dead) fences its producer and takes its static membership. The first
   * must stop without committing, and the second must not repeat what the first answered.
   */
  @Test
  void shouldNotRunAgainAnsweredEffectsWhenAnExecutorWithTheSameInstanceIdFencesALiveOne()
      throws Exception {
    OutOfOrder run =
        tenDispatchesTheFirstHeld(config().withConcurrency(16).withInstanceId("executor-a"));

    try (EffectExecutor successor =
        start(run.policies(), config().withConcurrency(16).withInstanceId("executor-a"))) {
      await("the fenced first executor stops")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(run.first().isRunning())
                      .as("first executor running (failure: %s)", run.first().failure())
                      .isFalse());
      answerTheHeldOneAndLetItAct(run);
    } finally {
      run.first().halt();
    }

    assertThat(run.first().failure()).as("the fenced executor stopped on its own").isNotNull();
    assertNothingRanTwice(run);
  }

  @Test
  void shouldHoldAStartedEffectAsAmbiguousWhenTheKeyIgnoringDownstreamCannotBeAsked()
      throws Exception {
    downstream.honoursKeys(false);
    List<String> keys = keys(10);
    ToolPolicies policies = chargeOnKeyIgnoringApi(ToolClass.WRITE_NON_IDEMPOTENT, false);
    EffectExecutor crashed = start(policies, uncommitting());
    dispatch(keys, "charge");
    awaitOneEffectPerKey(keys);
    crashed.halt();

    try (EffectExecutor restarted = start(policies, config())) {
      awaitOutcomes(keys);
      // Completed effects leave no live marker: a third owner runs nothing and holds nothing.
    }
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k)).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .satisfies(
                      o -> {
                        assertThat(o.getStatus()).isEqualTo(OutcomeStatus.AMBIGUOUS);
                        assertThat(o.getError().getCode()).isEqualTo("STARTED_BEFORE_REDELIVERY");
                      });
            });

    // A re-dispatch (attempt 2) follows an attempt that may have acted: never run on this
    // downstream. The key dispatched afresh as attempt 1 (the reconciler found no effect and the
    // ledger released it) runs: the markers of answered dispatches were cleared once passed.
    Fixtures.send(
        kafka.bootstrapServers(),
        registry,
        List.of(
            Fixtures.dispatch(keys.get(0), "charge", lane, "{\"amount\":100}", 2),
            Fixtures.dispatch(keys.get(1), "charge", lane, "{\"amount\":100}", 1)));
    try (EffectExecutor third = start(policies, config())) {
      await("a second outcome for " + keys.get(0) + " and " + keys.get(1))
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> {
                assertThat(outcomes.byKey.get(keys.get(0)))
                    .as("outcomes of %s", keys.get(0))
                    .hasSize(2);
                assertThat(outcomes.byKey.get(keys.get(1)))
                    .as("outcomes of %s", keys.get(1))
                    .hasSize(2);
              });
    }
    assertThat(outcomes.byKey.get(keys.get(0)).get(1))
        .satisfies(
            o -> {
              assertThat(o.getStatus()).isEqualTo(OutcomeStatus.AMBIGUOUS);
              assertThat(o.getError().getCode()).isEqualTo("REDISPATCH_NOT_REPEATABLE");
            });
    assertThat(downstream.requests(keys.get(0))).isEqualTo(1);
    assertThat(outcomes.byKey.get(keys.get(1)).get(1).getStatus())
        .isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(downstream.requests(keys.get(1))).isEqualTo(2);
    assertThat(keys.subList(2, keys.size()))
        .allSatisfy(k -> assertThat(downstream.requests(k)).isEqualTo(1));
  }

  private void awaitOneRequestEach(List<String> keys, Duration atMost) {
    await("one request per key downstream")
        .atMost(atMost)
        .untilAsserted(() -> assertOneRequestEach(keys));
  }

  private void assertOneRequestEach(List<String> keys) {
    assertThat(keys)
        .allSatisfy(k -> assertThat(downstream.requests(k)).as("requests of %s", k).isEqualTo(1));
  }

  @Test
  void shouldFinishRunningEffectsOnGracefulClose() throws Exception {
    downstream.latency(Duration.ofMillis(500));
    List<String> keys = keys(8);
    ToolPolicies policies = chargeOn(downstream.url(), true);
    EffectExecutor executor = start(policies, config().withConcurrency(8));
    dispatch(keys, "charge");
    awaitOneRequestEach(keys, Duration.ofSeconds(60));

    executor.close();

    awaitOutcomes(keys);
    try (EffectExecutor next = start(policies, config())) {
      await("still exactly one request per key, for 3 s")
          .during(Duration.ofSeconds(3))
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(() -> assertOneRequestEach(keys));
    }
  }

  @Test
  void shouldAbandonEffectsStillRunningAtTheShutdownDeadlineForTheNextOwner() throws Exception {
    downstream.latency(Duration.ofSeconds(4));
    List<String> keys = keys(4);
    ToolPolicies policies = chargeOn(downstream.url(), true, "30s");
    EffectExecutor executor =
        start(policies, config().withConcurrency(4).withShutdownDeadline(Duration.ofMillis(200)));
    dispatch(keys, "charge");
    awaitOneRequestEach(keys, Duration.ofSeconds(60));

    executor.close();
    assertThat(keys).as("abandoned: no outcome committed").noneMatch(outcomes.byKey::containsKey);

    // The abandoned requests still act downstream; the next owner's run then finds them done.
    await("the abandoned requests act downstream, once per key")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(keys)
                    .allSatisfy(
                        k ->
                            assertThat(downstream.effects(k)).as("effects of %s", k).isEqualTo(1)));
    downstream.latency(Duration.ZERO);
    try (EffectExecutor next = start(policies, config())) {
      awaitOutcomes(keys);
    }
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k))
                  .as("run again by the next owner")
                  .isGreaterThanOrEqualTo(2);
              assertThat(downstream.effects(k)).isEqualTo(1);
            });
  }

  @Test
  void shouldDeadLetterUndecodableDispatchAndKeepRunning() throws Exception {
    try (var dlq =
            new TopicCollector<>(
                kafka.bootstrapServers(), "tool-dispatch.dlq", new ByteArrayDeserializer());
        EffectExecutor executor = start(chargeOn(downstream.url(), true), config())) {
      var props = Fixtures.kafka(kafka.bootstrapServers());
      try (var raw =
          new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
        raw.send(
            new ProducerRecord<>("tool-dispatch." + lane, lane + "-bad", new byte[] {1, 2, 3}));
      }
      List<String> keys = keys(1);
      dispatch(keys, "charge");

      awaitOutcomes(keys);
      await("the undecodable dispatch " + lane + "-bad dead-lettered")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(dlq.byKey.keySet()).as("dead-lettered keys").contains(lane + "-bad"));
      var letter =
          dlq.records.stream().filter(r -> r.key().equals(lane + "-bad")).findFirst().orElseThrow();
      assertThat(new String(letter.headers().lastHeader("effectledger.error.code").value()))
          .isEqualTo("UNDECODABLE_DISPATCH");
      assertThat(new String(letter.headers().lastHeader("effectledger.source.offset").value()))
          .isEqualTo("0");
      assertThat(executor.isRunning()).isTrue();
    }
  }

  @Test
  void shouldTurnConnectorExceptionIntoAmbiguousOutcomeAndKeepRunning() throws Exception {
    ToolPolicies policies = chargeOn(downstream.url(), true);
    Connector throwing =
        new Connector() {
          @Override
          public Capabilities capabilities() {
            return new Capabilities(false, false, false);
          }

          @Override
          public EffectOutcome execute(EffectRequest request) {
            throw new IllegalStateException("bug in connector");
          }
        };
    List<String> keys = keys(3);
    try (EffectExecutor executor =
        EffectExecutor.start(config(), Map.of("charge", throwing), policies)) {
      dispatch(keys, "charge");
      awaitOutcomes(keys);
      assertThat(executor.isRunning()).isTrue();
    }
    assertThat(keys)
        .allSatisfy(
            k ->
                assertThat(outcomes.byKey.get(k))
                    .singleElement()
                    .satisfies(
                        o -> {
                          assertThat(o.getStatus()).isEqualTo(OutcomeStatus.AMBIGUOUS);
                          assertThat(o.getError().getCode()).isEqualTo("CONNECTOR_ERROR");
                        }));
  }

  /**
   * A downstream answers 2 MB: an outcome carrying it could never be produced (1 MiB
   * max.request.size), and the executor would abort and retry it for ever. The outcome carries a
   * marker instead, the result goes to the dead-letter topic cut, and the lane keeps running.
   */
  @Test
  void shouldPublishAMarkerForAResultTooLargeToProduceAndDeadLetterItCut() throws Exception {
    String huge = "{\"blob\":\"" + "y".repeat(2_000_000) + "\"}";
    Connector verbose =
        new Connector() {
          @Override
          public Capabilities capabilities() {
            return new Capabilities(true, false, false);
          }

          @Override
          public EffectOutcome execute(EffectRequest request) {
            return new EffectOutcome.Succeeded(
                request.effectKey().endsWith("k0") ? huge : "{}", "fx-" + request.effectKey());
          }
        };
    List<String> keys = keys(2);
    try (var dlq =
            new TopicCollector<>(
                kafka.bootstrapServers(), "tool-dispatch.dlq", new ByteArrayDeserializer());
        EffectExecutor executor =
            EffectExecutor.start(
                config(), Map.of("charge", verbose), chargeOn(downstream.url(), true))) {
      dispatch(keys, "charge");
      awaitOutcomes(keys);
      await("the too-large result of " + keys.get(0) + " dead-lettered")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(dlq.byKey.keySet()).as("dead-lettered keys").contains(keys.get(0)));
      var letter =
          dlq.records.stream().filter(r -> r.key().equals(keys.get(0))).findFirst().orElseThrow();
      assertThat(new String(letter.headers().lastHeader("effectledger.error.code").value()))
          .isEqualTo("RESULT_TOO_LARGE");
      assertThat(letter.value()).hasSize(256 * 1024);
      assertThat(executor.isRunning()).isTrue();
    }
    assertThat(outcomes.byKey.get(keys.get(0)))
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
              assertThat(o.getResultJson())
                  .startsWith("{\"effectledger\":\"RESULT_TOO_LARGE\",\"bytes\":20000")
                  .contains("\"sha256\":\"");
              assertThat(o.getEffectId()).isEqualTo("fx-" + keys.get(0));
            });
    assertThat(outcomes.byKey.get(keys.get(1)))
        .singleElement()
        .extracting(Outcome::getResultJson)
        .isEqualTo("{}");
  }

  @Test
  void shouldPublishKafkaEffectExactlyOnceAcrossCrash() throws Exception {
    ToolPolicies policies =
        ToolPolicies.of(
            ToolPolicy.builder("publish", ToolClass.IRREVERSIBLE)
                .window(Duration.ofDays(30))
                .pendingTimeout(Duration.ofMinutes(5))
                .onInFlight(InFlightPolicy.COALESCE)
                .onAmbiguous(AmbiguityPolicy.HOLD)
                .lane(lane)
                .connector("kafka")
                .maxAttempts(3)
                .bypassAllowed(false)
                .build());
    List<String> keys = keys(30);
    try (var effects =
        new TopicCollector<>(kafka.bootstrapServers(), "effects", new StringDeserializer())) {
      EffectExecutor crashed =
          EffectExecutor.start(
              uncommitting(), Map.of("publish", new KafkaConnector("effects")), policies);
      dispatch(keys, "publish");
      await("the uncommitting executor runs every effect")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(crashed.effectsRun())
                      .as("effects run")
                      .isGreaterThanOrEqualTo(keys.size()));
      crashed.halt();
      try (EffectExecutor restarted =
          EffectExecutor.start(
              config(), Map.of("publish", new KafkaConnector("effects")), policies)) {
        awaitOutcomes(keys);
        await("an effect record for every key, for 2 s")
            .during(Duration.ofSeconds(2))
            .atMost(Duration.ofSeconds(20))
            .untilAsserted(
                () ->
                    assertThat(effects.byKey.keySet())
                        .as("keys with an effect record")
                        .containsAll(keys));
      }
      assertThat(keys)
          .allSatisfy(
              k -> assertThat(effects.byKey.get(k)).as("effect records for %s", k).hasSize(1));
    }
  }
}
