package dev.effectledger.connectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A released life's queued dispatch never runs (issue 52), on real parts: a ledger, an executor of
 * a lane whose downstream ignores keys, the reconciler, in a fixed order the test sets, each path
 * once. Before release fences, both tests saw the action take effect twice.
 *
 * <ul>
 *   <li>The lane's executor is down longer than the tool's pending timeout; the key is held; the
 *       reconciler finds no effect and releases it; the executor comes back and reads the queued
 *       dispatch of the released life. It must not run it: the agent's next intent runs the action,
 *       once.
 *   <li>The reconciler's lookup is taken before the queued dispatch runs and its verdict is
 *       published after (the downstream acted, then answered 500, so the key stayed held): the late
 *       "no effect" must not release a key whose effect happened.
 * </ul>
 */
@Tag("integration")
class StaleDispatchIT {

  private static final String REGISTRY = "mock://stale-dispatch-it";

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  /** The state directories of every ledger the tests start, one under it for each. */
  @TempDir static Path stateDirs;

  @BeforeAll
  static void createTopics() {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 2);
    }
    topics.put(Topics.dispatch("payments"), 2);
    kafka.createTopics(topics);
  }

  /**
   * A pending timeout of 2 s stands in for the shipped 5 minutes, and the reconciler's min age is
   * zero rather than a minute: the test sets the order of events itself, so only their order
   * matters, not how long the outage lasts.
   */
  private static ToolPolicies policies(CountingDownstream payments) {
    return new ToolPolicyLoader()
        .parse(
            """
            tools:
              pay:
                class: irreversible
                pendingTimeout: 2s
                lane: payments
                connector: http
                retry: {maxAttempts: 1}
                settings: {url: "%1$s", timeout: 2s, lookupUrl: "%1$s?key={key}", effectIdPointer: /id}
            """
                .formatted(payments.url()),
            "stale-dispatch-tools.yaml");
  }

  @Test
  @Timeout(180)
  void shouldNotRunAQueuedDispatchOfALifeTheReconcilerReleased() throws Exception {
    try (CountingDownstream payments =
            CountingDownstream.start(Duration.ofSeconds(1)).honoursKeys(false);
        Parts parts = new Parts(policies(payments), "stale-1")) {
      String key = "charge-released-while-queued";
      parts.outage(); // the lane's executor is down
      parts.send(key);
      parts.awaitReply(key, ResultStatus.UNKNOWN); // pending timeout: held

      try (Reconciler reconciler = parts.reconciler(parts.connectors())) {
        assertThat(reconciler.reconcileOnce().total().heldNoEffect()).isEqualTo(1);
      }
      parts.awaitReply(key, ResultStatus.FAILED); // released: the intent may be sent again

      parts.startExecutor(); // the queued dispatch of the released life is read now
      await("an outcome of the released life's queued dispatch of " + key)
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(parts.outcomes.byKey.getOrDefault(key, List.of()))
                      .as("outcomes of %s", key)
                      .isNotEmpty());
      parts.send(key); // the agent sends again: the key's next life
      ToolResult result = parts.awaitReply(key, ResultStatus.SUCCEEDED);

      assertThat(payments.effects(key)).as("effects of the action").isEqualTo(1);
      assertThat(parts.outcomes.byKey.get(key))
          .as("the released life's dispatch answered without running")
          .anyMatch(o -> o.getError() != null && "SUPERSEDED".equals(o.getError().getCode()));
      assertThat(result.getEffectId()).as("the answer names the one effect").isEqualTo("ch_1");
    }
  }

  @Test
  @Timeout(180)
  void shouldNotReleaseOnALookupTakenBeforeTheQueuedDispatchRan() throws Exception {
    try (CountingDownstream payments =
            CountingDownstream.start(Duration.ofSeconds(1)).honoursKeys(false);
        Parts parts = new Parts(policies(payments), "stale-2")) {
      String key = "charge-looked-up-before-it-ran";
      payments.inject(key, Fault.ERROR_AFTER_EFFECT); // acts, then answers 500
      parts.outage();
      parts.send(key);
      parts.awaitReply(key, ResultStatus.UNKNOWN);

      CountDownLatch lookedUp = new CountDownLatch(1);
      CountDownLatch publish = new CountDownLatch(1);
      Map<String, Connector> slowLookups = new HashMap<>(parts.connectors());
      Connector real = slowLookups.get("pay");
      slowLookups.put(
          "pay",
          new Connector() {
            @Override
            public Capabilities capabilities() {
              return real.capabilities();
            }

            @Override
            public EffectOutcome execute(EffectRequest request) {
              return real.execute(request);
            }

            @Override
            public Lookup lookup(String effectKey) {
              Lookup found = real.lookup(effectKey);
              lookedUp.countDown();
              try {
                publish.await(60, TimeUnit.SECONDS); // the verdict waits while the dispatch runs
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return found;
            }
          });
      try (Reconciler reconciler = parts.reconciler(slowLookups)) {
        CompletableFuture<Reconciler.Report> pass =
            CompletableFuture.supplyAsync(reconciler::reconcileOnce);
        assertThat(lookedUp.await(60, TimeUnit.SECONDS)).as("the reconciler looked up").isTrue();

        parts.startExecutor(); // the queued dispatch is read while the verdict waits
        await("an outcome of the queued dispatch of " + key + " while the verdict waits")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () ->
                    assertThat(parts.outcomes.byKey.getOrDefault(key, List.of()))
                        .as("outcomes of %s", key)
                        .isNotEmpty());
        publish.countDown();
        pass.get(60, TimeUnit.SECONDS);
      }
      // whatever the late verdict did, the agent sends again while the key is released, and the
      // reconciler looks at it while it is held (the fault answers 500 after acting, once)
      parts.send(key);
      int[] acted = {parts.results.byKey.get(key).size()};
      // Each new reply is acted on as an agent and an operator would: an UNKNOWN one reconciled,
      // a retriable FAILED one sent again; until the key's last reply is SUCCEEDED.
      await("a SUCCEEDED reply to " + key + " (each UNKNOWN reconciled, each release re-sent)")
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(200))
          .untilAsserted(
              () -> {
                List<ToolResult> replies = parts.results.byKey.get(key);
                if (replies.size() != acted[0]) {
                  acted[0] = replies.size();
                  ToolResult reply = replies.get(acted[0] - 1);
                  if (reply.getStatus() == ResultStatus.UNKNOWN) {
                    try (Reconciler again = parts.reconciler(parts.connectors())) {
                      again.reconcileOnce();
                    }
                  } else if (reply.getStatus() == ResultStatus.FAILED
                      && reply.getError().getRetriable()) {
                    parts.send(key);
                  }
                }
                assertThat(lastReply(parts, key).getStatus())
                    .as(
                        "last reply to %s; replies %s, outcomes %s",
                        key, parts.results.byKey.get(key), parts.outcomes.byKey.get(key))
                    .isEqualTo(ResultStatus.SUCCEEDED);
              });
      ToolResult last = lastReply(parts, key);

      assertThat(payments.effects(key)).as("effects of the action").isEqualTo(1);
      assertThat(last.getStatus())
          .as(
              "replies %s, outcomes %s",
              parts.results.byKey.get(key), parts.outcomes.byKey.get(key))
          .isEqualTo(ResultStatus.SUCCEEDED);
    }
  }

  private static ToolResult lastReply(Parts parts, String key) {
    List<ToolResult> replies = parts.results.byKey.get(key);
    return replies.get(replies.size() - 1);
  }

  /** The ledger, an executor started and stopped at will, and the topics a test reads. */
  private static final class Parts implements AutoCloseable {
    final ToolPolicies policies;
    final KafkaStreams ledger;
    final TopicCollector<ToolResult> results;
    final TopicCollector<Outcome> outcomes;
    final KafkaProducer<String, ToolIntent> intents;
    final Map<String, Integer> seen = new HashMap<>();
    EffectExecutor executor;

    Parts(ToolPolicies policies, String name) throws Exception {
      this.policies = policies;
      Properties streamsProps = new Properties();
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
      streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDirs.resolve(name).toString());
      streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
      ledger = LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), streamsProps);
      results =
          new TopicCollector<>(
              kafka.bootstrapServers(),
              Topics.RESULTS,
              new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolResult.class));
      outcomes = Fixtures.outcomes(kafka.bootstrapServers(), REGISTRY);
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      intents =
          new KafkaProducer<>(
              props,
              new StringSerializer(),
              new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), ToolIntent.class));
      ledger.start();
      await("the ledger is RUNNING")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(ledger.state())
                      .as("the ledger's state")
                      .isEqualTo(KafkaStreams.State.RUNNING));
    }

    Map<String, Connector> connectors() {
      return Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC());
    }

    /** An executor of the lane ran (it made the lane's journal) and is gone now. */
    void outage() {
      startExecutor();
      executor.close();
      executor = null;
    }

    void startExecutor() {
      executor =
          EffectExecutor.start(
              ExecutorConfig.of(
                  Fixtures.kafka(kafka.bootstrapServers()), List.of("payments"), REGISTRY),
              connectors(),
              policies);
    }

    Reconciler reconciler(Map<String, Connector> connectors) {
      return new Reconciler(
          Fixtures.kafka(kafka.bootstrapServers()),
          REGISTRY,
          connectors,
          Reconciler.lanesOf(policies),
          Duration.ZERO,
          Clock.systemUTC());
    }

    void send(String key) throws Exception {
      String args = "{\"amount\":1200,\"to\":\"cus_1\"}";
      intents
          .send(
              new ProducerRecord<>(
                  Topics.INTENTS,
                  key,
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(key)
                      .setTenant("acme")
                      .setRunId("run-1")
                      .setStepId("step-1")
                      .setTool("pay")
                      .setArguments(args)
                      .setArgumentsHash(ArgumentsHash.of(args, List.of()))
                      .setRequestedAt(Instant.now())
                      .build()))
          .get(30, TimeUnit.SECONDS);
    }

    /** Waits for a reply to {@code key} with {@code status} after those already seen. */
    ToolResult awaitReply(String key, ResultStatus status) {
      ToolResult reply = awaitNextReply(key);
      assertThat(reply.getStatus()).as("reply to %s", key).isEqualTo(status);
      return reply;
    }

    ToolResult awaitNextReply(String key) {
      int before = seen.getOrDefault(key, 0);
      await("reply number " + (before + 1) + " to " + key)
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(results.byKey.getOrDefault(key, List.of()))
                      .as("replies to %s", key)
                      .hasSizeGreaterThan(before));
      seen.put(key, before + 1);
      return results.byKey.get(key).get(before);
    }

    @Override
    public void close() {
      if (executor != null) {
        executor.close();
      }
      intents.close();
      results.close();
      outcomes.close();
      ledger.close(Duration.ofSeconds(30));
    }
  }
}
