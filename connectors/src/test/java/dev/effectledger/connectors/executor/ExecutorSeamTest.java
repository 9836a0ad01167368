package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.executor.sim.GatedConnector;
import dev.effectledger.connectors.executor.sim.LogConsumer;
import dev.effectledger.connectors.executor.sim.LogProducer;
import dev.effectledger.connectors.executor.sim.SimulatedCluster;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The executor's hardest paths with its Kafka clients replaced by mocks over a {@link
 * SimulatedCluster} (a consumer after a crash or a rewind reads exactly what was committed): the
 * invariant that a dispatch whose effect may have happened is never performed again on a downstream
 * that ignores keys, through out-of-order completion, a crash, an aborted transaction, a revocation
 * and a fenced producer.
 */
class ExecutorSeamTest {

  private static final String LANE = "payments";
  private static final TopicPartition DISPATCH = new TopicPartition("tool-dispatch." + LANE, 0);
  private static final String REGISTRY = "mock://executor-seams";
  private static final ToolPolicies POLICIES =
      ToolPolicies.of(
          ToolPolicy.builder("charge", ToolClass.IRREVERSIBLE)
              .window(Duration.ofDays(30))
              .pendingTimeout(Duration.ofMinutes(5))
              .onInFlight(InFlightPolicy.COALESCE)
              .onAmbiguous(AmbiguityPolicy.HOLD)
              .lane(LANE)
              .connector("http")
              .maxAttempts(3)
              .bypassAllowed(false)
              .build());

  private final SimulatedCluster cluster = new SimulatedCluster();
  private final GatedConnector downstream = new GatedConnector();
  private final RegistryAvroSerde<Dispatch> dispatches =
      new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), Dispatch.class);
  private final RegistryAvroSerde<Outcome> outcomes =
      new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), Outcome.class);
  private final List<EffectExecutor> started = new ArrayList<>();

  @AfterEach
  void stopAll() {
    started.forEach(EffectExecutor::halt);
  }

  /**
   * An executor over the cluster, given the dispatch partition by a rebalance on its first poll.
   */
  private EffectExecutor executor(
      LogProducer producer, Duration shutdownDeadline, LogConsumer consumer) {
    return executor(producer, consumer, c -> c.withShutdownDeadline(shutdownDeadline));
  }

  private EffectExecutor executor(
      LogProducer producer, LogConsumer consumer, UnaryOperator<ExecutorConfig> settings) {
    ExecutorConfig config =
        settings.apply(
            ExecutorConfig.of(new Properties(), List.of(LANE), REGISTRY).withConcurrency(16));
    LogConsumer journal = new LogConsumer(cluster);
    EffectExecutor executor =
        EffectExecutor.start(
            config,
            Map.of("charge", downstream),
            POLICIES,
            Clock.systemUTC(),
            d -> {},
            new Clients(
                consumer,
                producer,
                lanes ->
                    new JournalReader(
                        journal,
                        partitions ->
                            partitions.stream().collect(Collectors.toMap(tp -> tp, cluster::end)),
                        Duration.ofSeconds(10),
                        () -> {})),
            "executor-under-test");
    consumer.schedulePollTask(() -> consumer.assignFromGroup(List.of(DISPATCH)));
    started.add(executor);
    return executor;
  }

  private EffectExecutor executor(LogProducer producer) {
    return executor(producer, Duration.ofSeconds(30), new LogConsumer(cluster));
  }

  /** An executor whose commit interval is 30 s and whose minimum commit interval is {@code min}. */
  private EffectExecutor executorCommittingEvery30sAtMost(Duration min) {
    return executor(
        new LogProducer(cluster),
        new LogConsumer(cluster),
        c -> c.withCommitInterval(Duration.ofSeconds(30)).withMinCommitInterval(min));
  }

  private List<String> dispatchKeys(int n) {
    List<String> keys = IntStream.range(0, n).mapToObj(i -> "k" + i).toList();
    keys.forEach(key -> dispatch(key, null));
    return keys;
  }

  /** Attempt 1 of {@code key}'s life {@code incarnation} (null: a ledger that names none). */
  private void dispatch(String key, Long incarnation) {
    {
      Dispatch d =
          Dispatch.newBuilder()
              .setIdempotencyKey(key)
              .setEffectKey(key)
              .setTenant("acme")
              .setRunId("run")
              .setStepId(key)
              .setTool("charge")
              .setLane(LANE)
              .setArguments("{}")
              .setAttempt(1)
              .setIncarnation(incarnation)
              .setDispatchedAt(Instant.now())
              .build();
      cluster.append(
          DISPATCH.topic(), 0, key.getBytes(), dispatches.serialize(DISPATCH.topic(), d));
    }
  }

  private List<Outcome> outcomes(String key) {
    return cluster.records("tool-outcomes").stream()
        .filter(r -> new String(r.key()).equals(key))
        .map(r -> outcomes.deserialize("tool-outcomes", r.value()))
        .toList();
  }

  private void awaitOutcomes(List<String> keys) {
    await("an outcome for each of " + keys)
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> assertOutcomeForEach(keys));
  }

  private void assertOutcomeForEach(List<String> keys) {
    assertThat(keys.stream().filter(k -> outcomes(k).isEmpty()).toList())
        .as("keys without an outcome on tool-outcomes")
        .isEmpty();
  }

  private void awaitNoLiveMarker() {
    await("no live marker left on tool-attempts." + LANE)
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(cluster.compacted("tool-attempts." + LANE))
                    .as("live markers on tool-attempts.%s", LANE)
                    .isEmpty());
  }

  @Test
  void shouldNeverPerformAgainAnEffectAnsweredAboveTheWatermarkWhenTheExecutorCrashes() {
    List<String> keys = dispatchKeys(10);
    downstream.hold("k0");
    EffectExecutor first = executor(new LogProducer(cluster));
    awaitOutcomes(keys.subList(1, 10));
    assertThat(cluster.committed(Set.of(DISPATCH)))
        .as("the low watermark is the held dispatch")
        .containsEntry(DISPATCH, new OffsetAndMetadata(0));
    first.halt();

    executor(new LogProducer(cluster));
    awaitOutcomes(List.of("k0"));
    awaitNoLiveMarker();

    assertThat(keys)
        .allSatisfy(k -> assertThat(downstream.calls(k)).as("calls of %s", k).isEqualTo(1));
    assertThat(keys.subList(1, 10))
        .allSatisfy(k -> assertThat(outcomes(k)).as("outcomes of %s", k).hasSize(1));
    assertThat(outcomes("k0"))
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.getStatus()).isEqualTo(OutcomeStatus.AMBIGUOUS);
              assertThat(o.getError().getCode()).isEqualTo("STARTED_BEFORE_REDELIVERY");
            });
    assertThat(cluster.committed(Set.of(DISPATCH)).get(DISPATCH).offset()).isEqualTo(10);
  }

  /**
   * The outcome's transaction commits its records (outcomes, journal) but loses the offsets that
   * passed the dispatches, and the executor is told it committed: the markers must stay until the
   * group's offsets, read back, have passed them, so a successor that reads the dispatches again
   * skips them rather than run them a second time.
   */
  @Test
  void shouldNotRunADispatchAgainWhenItsOutcomeCommittedButItsOffsetsWereLost() {
    List<String> keys = dispatchKeys(10);
    LogProducer split = new LogProducer(cluster);
    split.splitCommitsWith("tool-outcomes", Integer.MAX_VALUE);
    EffectExecutor first = executor(split);
    awaitOutcomes(keys);
    await("one live marker per key, through more than one journal sweep")
        .during(Duration.ofMillis(1500)) // more than one journal sweep
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(cluster.compacted("tool-attempts." + LANE))
                    .as("live markers on tool-attempts.%s", LANE)
                    .hasSize(keys.size()));
    first.halt();
    assertThat(cluster.committed(Set.of(DISPATCH)))
        .containsEntry(DISPATCH, new OffsetAndMetadata(0));

    executor(new LogProducer(cluster));
    await("the successor commits past every dispatch and clears every marker")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              assertThat(cluster.committed(Set.of(DISPATCH)).get(DISPATCH).offset())
                  .as("committed offset of %s", DISPATCH)
                  .isEqualTo(keys.size());
              assertThat(cluster.compacted("tool-attempts." + LANE))
                  .as("live markers on tool-attempts.%s", LANE)
                  .isEmpty();
            });

    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.calls(k)).as("calls of %s", k).isEqualTo(1);
              assertThat(outcomes(k)).as("outcomes of %s", k).hasSize(1);
            });
  }

  /**
   * The start markers' transaction is reported committed, but its commit marker never reaches the
   * journal partition (the coordinator skipped it); the producer's next transaction there aborts,
   * taking the start markers with it, and the executor dies. An executor that had run the effects
   * on the word of the commit alone would leave a successor no marker: it would run them again.
   */
  @Test
  void shouldNotRunAnEffectBeforeItsStartMarkerIsReadableAsCommitted() {
    List<String> keys = dispatchKeys(10);
    LogProducer producer = new LogProducer(cluster);
    producer.skipMarkersOn("tool-attempts." + LANE, 1);
    producer.failCommitsWith("tool-outcomes", 1);
    producer.dieAfterAbort();
    EffectExecutor first = executor(producer);
    await("the first executor stops, its producer dead after an abort")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(first.isRunning())
                    .as("first executor running (failure: %s)", first.failure())
                    .isFalse());

    executor(new LogProducer(cluster));
    awaitOutcomes(keys);

    // the first executor's outcomes aborted: the successor found each effect by a lookup
    assertOneCallAndOneOutcomeEach(keys, Outcome::getEffectId, "fx_found");
  }

  /** Each key called once downstream, with one outcome whose {@code field} is {@code expected}. */
  private void assertOneCallAndOneOutcomeEach(
      List<String> keys, Function<Outcome, Object> field, Object expected) {
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.calls(k)).as("calls of %s", k).isEqualTo(1);
              assertThat(outcomes(k))
                  .as("outcomes of %s", k)
                  .singleElement()
                  .extracting(field)
                  .isEqualTo(expected);
            });
  }

  /**
   * A key the ledger released (the reconciler found no effect, or an operator decided) and that is
   * sent again is dispatched as attempt 1 of its next life. Its earlier life's marker outlives that
   * life's dispatch for about a second (tombstoned once the offsets read back pass it); the next
   * life must run, not be answered from a lookup or held as if it were the earlier dispatch. Found
   * by ConsoleSecurityIT in CI (2026-11-26): an operator's release, then the agent's call, answered
   * from the earlier life's effect instead of run.
   */
  @Test
  void shouldRunTheNextLifeOfAReleasedKeyWhileTheEarlierLifesMarkerIsStillLive() {
    dispatch("k0", 100L);
    executor(new LogProducer(cluster));
    awaitOutcomes(List.of("k0"));

    dispatch("k0", 200L);

    await("a second outcome of k0 (its next life)")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> assertThat(outcomes("k0")).as("outcomes of k0").hasSize(2));
    assertThat(downstream.calls("k0")).as("the next life ran").isEqualTo(2);
    assertThat(outcomes("k0").get(1).getEffectId()).isNotEqualTo("fx_found");
  }

  @Test
  void shouldAnswerFromALookupRatherThanRunAgainWhenTheOutcomeTransactionAborts() {
    List<String> keys = dispatchKeys(10);
    LogProducer producer = new LogProducer(cluster);
    producer.failCommitsWith("tool-outcomes", 1);
    executor(producer);
    awaitOutcomes(keys);

    assertOneCallAndOneOutcomeEach(keys, Outcome::getStatus, OutcomeStatus.SUCCEEDED);
    assertThat(keys)
        .as("some outcomes came from a lookup after the abort")
        .anyMatch(k -> "fx_found".equals(outcomes(k).get(0).getEffectId()));
  }

  @Test
  void shouldLeaveTheMarkersOfEffectsAbandonedAtARevocationForTheNextOwner() {
    List<String> keys = dispatchKeys(10);
    downstream.hold("k0");
    LogConsumer consumer = new LogConsumer(cluster);
    EffectExecutor first = executor(new LogProducer(cluster), Duration.ofMillis(200), consumer);
    awaitOutcomes(keys.subList(1, 10));
    consumer.schedulePollTask(() -> consumer.rebalance(List.of()));
    await("the first executor's partitions revoked")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(consumer.assignment()).as("the first consumer's assignment").isEmpty());

    executor(new LogProducer(cluster));
    awaitOutcomes(List.of("k0"));
    downstream.release("k0");

    assertThat(first.isRunning()).isTrue();
    assertThat(keys)
        .allSatisfy(k -> assertThat(downstream.calls(k)).as("calls of %s", k).isEqualTo(1));
    assertThat(keys.subList(1, 10))
        .allSatisfy(k -> assertThat(outcomes(k)).as("outcomes of %s", k).hasSize(1));
    assertThat(outcomes("k0"))
        .singleElement()
        .extracting(Outcome::getStatus)
        .isEqualTo(OutcomeStatus.AMBIGUOUS);
  }

  @Test
  void shouldStopWithoutCommittingOnceItsProducerIsFenced() {
    List<String> keys = dispatchKeys(10);
    downstream.hold("k0");
    LogProducer producer = new LogProducer(cluster);
    EffectExecutor fenced = executor(producer);
    awaitOutcomes(keys.subList(1, 10));
    producer.fenceProducer();
    downstream.release("k0");
    await("the fenced executor stops")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(fenced.isRunning())
                    .as("fenced executor running (failure: %s)", fenced.failure())
                    .isFalse());

    assertThat(fenced.failure()).isInstanceOf(ProducerFencedException.class);
    assertThat(outcomes("k0")).as("nothing committed after the fence").isEmpty();

    executor(new LogProducer(cluster));
    awaitOutcomes(List.of("k0"));
    assertThat(keys)
        .allSatisfy(k -> assertThat(downstream.calls(k)).as("calls of %s", k).isEqualTo(1));
    assertThat(outcomes("k0"))
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.getStatus())
                  .as("found by lookup: the fenced run acted")
                  .isEqualTo(OutcomeStatus.SUCCEEDED);
              assertThat(o.getEffectId()).isEqualTo("fx_found");
            });
  }

  /**
   * Dispatches become readable in bursts, one per ledger commit: a burst whose effects have all
   * finished is committed at once, not at a point of the commit interval unrelated to it (the
   * reply's wait on the executor's hop, docs/performance.md). Before early commits an outcome here
   * waited for the 30 s interval.
   */
  @Test
  void shouldCommitABurstAsSoonAsItsEffectsHaveFinishedRatherThanAtTheCommitInterval() {
    List<String> keys = dispatchKeys(5);
    executorCommittingEvery30sAtMost(ExecutorConfig.DEFAULT_MIN_COMMIT_INTERVAL);

    await("an outcome for each of " + keys)
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertOutcomeForEach(keys));
    assertOneCallAndOneOutcomeEach(keys, Outcome::getStatus, OutcomeStatus.SUCCEEDED);
  }

  /** Early commits keep the minimum interval between two transactions. */
  @Test
  void shouldKeepTheMinimumCommitIntervalBetweenEarlyCommits() {
    executorCommittingEvery30sAtMost(Duration.ofSeconds(2));
    dispatch("k0", null);
    await("an outcome of k0")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5))
        .untilAsserted(() -> assertThat(outcomes("k0")).as("outcomes of k0").isNotEmpty());

    dispatch("k1", null);

    await("no outcome of k1 within the minimum commit interval, for 1 s")
        .during(Duration.ofMillis(1000))
        .atMost(Duration.ofMillis(1500))
        .untilAsserted(() -> assertThat(outcomes("k1")).as("outcomes of k1").isEmpty());
    await("an outcome of k1 once the minimum interval passed")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(outcomes("k1")).as("outcomes of k1").isNotEmpty());
  }

  /**
   * While an effect still runs, finished ones wait for the commit interval: with slow effects under
   * load something always runs, and committing each finished one early would be a transaction every
   * minimum interval. Once the last one finishes, the burst commits at once.
   */
  @Test
  void shouldNotCommitEarlyWhileAnEffectOfTheBurstStillRuns() {
    downstream.hold("k0");
    List<String> keys = dispatchKeys(3);
    executorCommittingEvery30sAtMost(ExecutorConfig.DEFAULT_MIN_COMMIT_INTERVAL);
    await("the effect of k2")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(downstream.effects("k2")).as("effects of k2").isEqualTo(1));

    await("no outcome of the finished k1 and k2 while k0 runs, for 1 s")
        .during(Duration.ofMillis(1000))
        .atMost(Duration.ofMillis(1500))
        .untilAsserted(
            () -> {
              assertThat(outcomes("k1")).as("outcomes of k1").isEmpty();
              assertThat(outcomes("k2")).as("outcomes of k2").isEmpty();
            });
    downstream.release("k0");

    await("an outcome for each of " + keys)
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertOutcomeForEach(keys));
    assertOneCallAndOneOutcomeEach(keys, Outcome::getStatus, OutcomeStatus.SUCCEEDED);
  }
}
