package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The four retry layers against the real ledger, a real executor and a payment API that counts
 * effects: the HTTP-client retry, the tool-wrapper retry, the model re-emitting the call, and the
 * orchestrator replaying the step after a crash with a new client. One effect per logical action.
 */
@Tag("integration")
@Timeout(120)
class RetryLayersIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final String REGISTRY = "mock://retry-layers-it";
  private static final KeyRules CHARGE_RULES =
      KeyRules.builder().ignore("/reason").require("/amount", "/to").build();
  private static final String CHARGE =
      "{\"amount\":1000,\"to\":\"cus_42\",\"reason\":\"monthly invoice\"}";

  private static CountingDownstream downstream;
  private static KafkaStreams ledger;
  private static EffectExecutor executor;
  @TempDir static Path stateDir;

  @BeforeAll
  static void startPipeline() throws Exception {
    Map<String, Integer> topics = new HashMap<>();
    for (String t : Topics.fixed()) {
      topics.put(t, 4);
    }
    topics.put(Topics.dispatch("payments"), 4);
    kafka.createTopics(topics);
    downstream = CountingDownstream.start(Duration.ofSeconds(2));
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse(
                """
        tools:
          charge_card:
            class: irreversible
            pendingTimeout: 10m
            lane: payments
            connector: http
            bypass: true
            retry: {maxAttempts: 8, base: 100ms, cap: 1s, jitter: 0}
            key: {ignore: [/reason], require: [/amount, /to]}
            settings: {url: "%1$s", timeout: 500ms, honoursKeys: true, effectIdPointer: /id}
          refund:
            class: irreversible
            pendingTimeout: 10m
            lane: payments
            connector: http
            retry: {maxAttempts: 1, base: 100ms, cap: 1s, jitter: 0}
            settings: {url: "%1$s", timeout: 500ms, honoursKeys: true, effectIdPointer: /id}
          send_email:
            class: write-non-idempotent
            pendingTimeout: 10m
            lane: payments
            connector: http
            settings: {url: "%1$s", honoursKeys: true, effectIdPointer: /id}
        """
                    .formatted(downstream.url()),
                "retry-layers.yaml");
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "retry-layers-it");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    ledger = LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), props);
    ledger.start();
    Properties kafkaProps = new Properties();
    kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
    executor =
        EffectExecutor.start(
            ExecutorConfig.of(kafkaProps, List.of("payments"), REGISTRY),
            Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC()),
            policies);
  }

  @AfterAll
  static void stopPipeline() {
    executor.close();
    ledger.close(Duration.ofSeconds(30));
    downstream.close();
  }

  private static ToolCallClient client(Duration timeout) {
    return ToolCallClient.builder()
        .bootstrapServers(kafka.bootstrapServers())
        .schemaRegistryUrl(REGISTRY)
        .keyRules("charge_card", CHARGE_RULES)
        .timeout(timeout)
        .build();
  }

  private static CallResult.Succeeded succeeded(CallResult result) {
    assertThat(result).isInstanceOf(CallResult.Succeeded.class);
    return (CallResult.Succeeded) result;
  }

  @Test
  void shouldCollapseTheFourRetryLayersIntoOneEffect() throws Exception {
    StepContext step = new StepContext("acme", "run-layers", "pay-invoice", "customer:42");
    ToolCall call = ToolCall.of(step, "charge_card", CHARGE);
    ToolCallClient first = client(Duration.ofSeconds(60));
    String key = first.keyOf(call).key();
    // Layer 1: the effect happens but the answer never reaches the HTTP client; it retries with the
    // key.
    downstream.inject(key, Fault.DROP_AFTER_EFFECT);

    // Layer 2: the tool wrapper sends the same call twice.
    CompletableFuture<CallResult> a = first.invoke(call);
    CompletableFuture<CallResult> b = first.invoke(call);
    CallResult.Succeeded original = succeeded(a.get());
    CallResult.Succeeded twin = succeeded(b.get());
    assertThat(twin.effectId()).isEqualTo(original.effectId());
    // One of the two caused the effect; the other joined it in flight (or came after it) and says
    // so: the sender of the twin can tell which answer is the effect's own.
    assertThat(List.of(original.replayed(), twin.replayed()))
        .as("replayed of the two calls sent at once")
        .containsExactlyInAnyOrder(false, true);

    // Layer 3: the model emits the same call again, formatted differently, with another reason.
    CallResult.Succeeded reemitted =
        succeeded(
            first.invokeAndWait(
                ToolCall.of(
                    step,
                    "charge_card",
                    "{ \"to\": \"cus_42\",\n  \"amount\": 1000.0, \"reason\": \"charging the invoice as asked\" }")));
    assertThat(reemitted.replayed()).isTrue();
    assertThat(reemitted.effectId()).isEqualTo(original.effectId());

    // Layer 4: the orchestrator crashes and replays the step with a new client instance.
    first.close();
    try (ToolCallClient afterCrash = client(Duration.ofSeconds(60))) {
      CallResult.Succeeded replayed = succeeded(afterCrash.invokeAndWait(call));
      assertThat(replayed.replayed()).isTrue();
      assertThat(replayed.effectId()).isEqualTo(original.effectId());

      // Genuinely different actions do run.
      CallResult.Succeeded nextStep =
          succeeded(
              afterCrash.invokeAndWait(
                  ToolCall.of(
                      new StepContext("acme", "run-layers", "pay-invoice-2", "customer:42"),
                      "charge_card",
                      CHARGE)));
      CallResult.Succeeded otherAmount =
          succeeded(
              afterCrash.invokeAndWait(
                  ToolCall.of(step, "charge_card", "{\"amount\":1001,\"to\":\"cus_42\"}")));
      assertThat(List.of(original.effectId(), nextStep.effectId(), otherAmount.effectId()))
          .doesNotHaveDuplicates();
      assertThat(downstream.effects(nextStep.key())).isEqualTo(1);
      assertThat(downstream.effects(otherAmount.key())).isEqualTo(1);
    }
    assertThat(downstream.requests(key)).as("the HTTP client retried").isGreaterThanOrEqualTo(2);
    assertThat(downstream.effects(key)).as("one effect for the logical action").isEqualTo(1);
  }

  /**
   * A call published a moment after its key was released must not take the release as its answer:
   * its intent starts the key's next life, whose effect happens. Found by the chaos run of
   * 2026-11-26: agents were told "failed, nothing happened" for charges that then went through. The
   * second client holds its intent back (linger) so that it is listening when the release's reply
   * comes but its intent is read after it.
   */
  @Test
  void shouldNotTakeTheReleaseOfTheKeysEarlierLifeAsTheAnswerOfACallPublishedAfterIt()
      throws Exception {
    StepContext step = new StepContext("acme", "run-release", "refund", "customer:9");
    ToolCall call = ToolCall.of(step, "refund", "{\"amount\":70,\"to\":\"cus_9\"}");
    try (ToolCallClient prompt = client(Duration.ofSeconds(60));
        ToolCallClient held =
            ToolCallClient.builder()
                .bootstrapServers(kafka.bootstrapServers())
                .schemaRegistryUrl(REGISTRY)
                .producerConfig("linger.ms", 5_000)
                .timeout(Duration.ofSeconds(60))
                .build()) {
      String key = prompt.keyOf(call).key();
      downstream.inject(key, Fault.UNAVAILABLE_BEFORE_EFFECT); // one attempt: released at once
      CompletableFuture<CallResult> late = held.invoke(call); // listening, intent held 5 s
      // Kept: the held client positions its reply consumer on the key's partition before it sends
      // (lingering 5 s), and nothing outside it shows that moment. Too short a pause cannot fail
      // the test falsely: the release would then simply come before it listened.
      Thread.sleep(500);

      CallResult first = prompt.invokeAndWait(call);

      assertThat(first).isInstanceOf(CallResult.Failed.class);
      assertThat(((CallResult.Failed) first).error().code()).isEqualTo("RETRIES_EXHAUSTED");
      assertThat(late).as("the release came before the held intent was sent").isNotDone();
      assertThat(succeeded(late.get(30, TimeUnit.SECONDS)).replayed())
          .as("the held intent started the key's next life and got its answer")
          .isFalse();
      assertThat(downstream.effects(key)).isEqualTo(1);
    }
  }

  @Test
  @SuppressWarnings("removal") // the deprecated call() keeps its wire answer for one release
  void shouldAnswerStillRunningOnTimeoutAndAttachWithoutMintingANewKey() throws Exception {
    StepContext step = new StepContext("acme", "run-slow", "pay", "customer:7");
    ToolCall call = ToolCall.of(step, "charge_card", "{\"amount\":50,\"to\":\"cus_7\"}");
    try (ToolCallClient patient = client(Duration.ofSeconds(60));
        ToolCallClient hasty = client(Duration.ofSeconds(1))) {
      String key = patient.keyOf(call).key();
      downstream.inject(key, Fault.STALL_BEFORE_EFFECT);

      CompletableFuture<CallResult> waiting = patient.invoke(call);
      // The downstream stalls 2 s: three waits of at most 1 s, side by side, all end before it
      // acts.
      CompletableFuture<CallResult> hastyWait = hasty.invoke(call);
      CompletableFuture<CallResult> shortWait =
          patient.invoke(call, CallOptions.timeout(Duration.ofMillis(500)));
      CompletableFuture<ToolResult> wireWait = hasty.call(call);
      CallResult timedOut = hastyWait.get();
      assertThat(timedOut)
          .isEqualTo(
              new CallResult.StillRunning(key, call, CallResult.StillRunning.Reason.TIMED_OUT));
      assertThat(shortWait.get())
          .as("a per-call timeout below the client's")
          .isInstanceOf(CallResult.StillRunning.class);
      ToolResult wire = wireWait.get();
      assertThat(wire.getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
      assertThat(wire.getError().getCode()).isEqualTo("CLIENT_TIMEOUT");

      CallResult.Succeeded done = succeeded(waiting.get());
      CallResult.Succeeded attached =
          succeeded(hasty.attach((CallResult.StillRunning) timedOut).get());
      assertThat(attached.effectId()).isEqualTo(done.effectId());
      assertThat(downstream.effects(key)).isEqualTo(1);
    }
  }

  @Test
  void shouldRunApprovedBypassOnceAndRefuseItWherePolicyForbids() throws Exception {
    StepContext step = new StepContext("acme", "run-bypass", "notify", "customer:9");
    try (ToolCallClient client = client(Duration.ofSeconds(60))) {
      ToolCall email =
          ToolCall.of(step, "send_email", "{\"to\":\"ada@example.org\",\"template\":\"receipt\"}");
      succeeded(client.invokeAndWait(email));
      CallResult refused = client.invokeAndWait(email.withBypass("INC-1234 approved by ops"));
      assertThat(refused).isInstanceOf(CallResult.Rejected.class);
      CallError error = ((CallResult.Rejected) refused).error();
      assertThat(error.code()).isEqualTo("BYPASS_NOT_ALLOWED");
      assertThat(error.ledgerCode()).contains(ErrorCode.BYPASS_NOT_ALLOWED);
      assertThat(error.retriable()).isFalse();

      ToolCall charge = ToolCall.of(step, "charge_card", "{\"amount\":5,\"to\":\"cus_9\"}");
      CallResult.Succeeded first = succeeded(client.invokeAndWait(charge));
      CallResult.Succeeded second =
          succeeded(client.invokeAndWait(charge.withBypass("INC-1235 approved by ops")));
      assertThat(second.effectId())
          .as("a deliberate second execution")
          .isNotEqualTo(first.effectId());
    }
    assertThatThrownBy(() -> ToolCall.of(step, "charge_card", "{}").withBypass(" "))
        .hasMessageContaining("explicit approval");
  }

  @Test
  void shouldServeManyConcurrentCallsFromOneClient() throws Exception {
    try (ToolCallClient client = client(Duration.ofSeconds(60))) {
      List<CompletableFuture<CallResult>> calls = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        StepContext step = new StepContext("acme", "run-many", "step-" + i, "customer:" + i);
        calls.add(
            client.invoke(
                ToolCall.of(
                    step, "charge_card", "{\"amount\":" + (i + 1) + ",\"to\":\"cus_" + i + "\"}")));
        calls.add(
            client.invoke(
                ToolCall.of(
                    step, "charge_card", "{\"to\":\"cus_" + i + "\",\"amount\":" + (i + 1) + "}")));
      }
      CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get();

      List<CallResult.Succeeded> results = calls.stream().map(c -> succeeded(c.join())).toList();
      assertThat(results.stream().map(CallResult::key).distinct()).hasSize(300);
      assertThat(results).allSatisfy(r -> assertThat(downstream.effects(r.key())).isEqualTo(1));
      // Of each step's two calls, exactly one caused the effect (replayed false): the other joined
      // it in flight or was answered from the stored result.
      Map<String, List<Boolean>> replayedByKey =
          results.stream()
              .collect(
                  Collectors.groupingBy(
                      CallResult::key,
                      Collectors.mapping(CallResult.Succeeded::replayed, Collectors.toList())));
      assertThat(replayedByKey)
          .allSatisfy(
              (k, replayed) ->
                  assertThat(replayed)
                      .as("replayed of %s's two calls", k)
                      .containsExactlyInAnyOrder(false, true));
    }
  }

  @Test
  void shouldCompleteWaitingCallsWhenTheClientCloses() throws Exception {
    StepContext step = new StepContext("acme", "run-closing", "pay", "customer:8");
    ToolCall call = ToolCall.of(step, "charge_card", "{\"amount\":8,\"to\":\"cus_8\"}");
    ToolCallClient client = client(Duration.ofSeconds(60));
    downstream.inject(client.keyOf(call).key(), Fault.STALL_BEFORE_EFFECT);
    CompletableFuture<CallResult> waiting = client.invoke(call);

    client.close();

    assertThat(waiting.get(5, TimeUnit.SECONDS))
        .isEqualTo(
            new CallResult.StillRunning(
                client.keyOf(call).key(), call, CallResult.StillRunning.Reason.CLIENT_CLOSED));
  }

  @Test
  @SuppressWarnings("removal") // call() hands back the reply object the client held
  void shouldLetGoOfAnAnsweredCallBeforeItsTimeout() throws Exception {
    StepContext step = new StepContext("acme", "run-let-go", "pay", "customer:9");
    try (ToolCallClient client = client(Duration.ofHours(1))) {
      ToolResult reply =
          client
              .call(ToolCall.of(step, "charge_card", "{\"amount\":9,\"to\":\"cus_9\"}"))
              .get(60, TimeUnit.SECONDS);
      assertThat(reply.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
      WeakReference<ToolResult> answered = new WeakReference<>(reply);
      reply = null;
      // Up to 50 GCs, 100 ms apart (the poll of this wait: a reference is cleared by a GC, not by
      // a signal one could wait on). Not Awaitility: its last assertion error could hold the reply.
      int gcs = 0;
      while (gcs < 50 && answered.get() != null) {
        System.gc();
        gcs++;
        TimeUnit.MILLISECONDS.sleep(100);
      }

      // A timer left to run for the hour would hold every answered call, its reply included.
      assertThat(answered.get())
          .as("the answered call's reply, collected within %s GCs over 5 s; still reachable", gcs)
          .isNull();
    }
  }

  @Test
  void shouldRefuseACallWhoseArgumentsLackARequiredField() {
    try (ToolCallClient client = client(Duration.ofSeconds(5))) {
      CompletableFuture<CallResult> result =
          client.invoke(
              ToolCall.of(
                  StepContext.of("acme", "run-x", "s"), "charge_card", "{\"to\":\"cus_1\"}"));

      assertThatThrownBy(result::get)
          .isInstanceOf(ExecutionException.class)
          .hasCauseInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("/amount");
    }
  }
}
