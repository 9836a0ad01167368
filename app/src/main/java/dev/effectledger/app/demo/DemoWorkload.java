package dev.effectledger.app.demo;

import dev.effectledger.app.TopicProvisioner;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.DerivedKey;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** The demo's simulated agents, and what it counts afterwards. */
final class DemoWorkload {

  static final String TENANT = "demo";
  static final String EFFECTS_TOPIC = "demo-order-events";
  private static final String[] TOOLS = {"charge_card", "publish_order_event", "send_receipt"};
  private static final Fault[] CHARGE_FAULTS = {
    Fault.UNAVAILABLE_BEFORE_EFFECT,
    Fault.HANG_AFTER_EFFECT,
    Fault.DROP_AFTER_EFFECT,
    Fault.ERROR_AFTER_EFFECT,
    Fault.SLOW_SUCCESS,
    Fault.CONFLICT_IN_PROGRESS,
    Fault.RATE_LIMITED,
    Fault.STALL_BEFORE_EFFECT
  };

  /** One logical action and every answer its calls got. */
  record Action(int index, String tool, ToolCall call, String key, List<CallResult> results) {}

  /** What the workload saw. */
  record Result(List<Action> actions, int intentsPublished, int conflictsSent, int heldResolved) {}

  private final int count;
  private final int faultPercent;
  private final CountingDownstream payments;
  private final CountingDownstream receipts;
  private final ToolCalls agent;
  private final ToolCalls restartedAgent;
  private final String bootstrap;

  DemoWorkload(
      int count,
      int faultPercent,
      CountingDownstream payments,
      CountingDownstream receipts,
      ToolCalls agent,
      ToolCalls restartedAgent,
      String bootstrap) {
    this.count = count;
    this.faultPercent = faultPercent;
    this.payments = payments;
    this.receipts = receipts;
    this.agent = agent;
    this.restartedAgent = restartedAgent;
    this.bootstrap = bootstrap;
  }

  static String toolsYaml(String paymentsUrl, String receiptsUrl) {
    return """
        tools:
          charge_card:
            class: irreversible
            pendingTimeout: 10m
            lane: payments
            connector: http
            retry: {maxAttempts: 8, base: 100ms, cap: 1s}
            key: {ignore: [/reason], require: [/amount, /currency, /customer]}
            settings: {url: "%1$s", timeout: 500ms, honoursKeys: true, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
          publish_order_event:
            class: irreversible
            pendingTimeout: 10m
            lane: events
            connector: kafka
            key: {require: [/order]}
            settings: {topic: %3$s}
          send_receipt:
            class: write-non-idempotent
            pendingTimeout: 10m
            onAmbiguous: hold
            lane: notify
            connector: http
            key: {require: [/customer]}
            settings: {url: "%2$s", timeout: 500ms, effectIdPointer: /id, lookupUrl: "%2$s?key={key}"}
        """
        .formatted(paymentsUrl, receiptsUrl, EFFECTS_TOPIC);
  }

  static Map<String, Integer> topics(ToolPolicies policies) {
    Map<String, Integer> topics = new HashMap<>();
    TopicProvisioner.topics(policies).forEach(t -> topics.put(t, 4));
    topics.put(EFFECTS_TOPIC, 4);
    return topics;
  }

  Result run(Duration timeout, Consumer<String> progress) throws Exception {
    List<Action> actions = new ArrayList<>();
    List<CompletableFuture<CallResult>> calls = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String tool = TOOLS[i % TOOLS.length];
      StepContext step = new StepContext(TENANT, "run-" + (i / 10), "step-" + i, "customer:" + i);
      ToolCall call = ToolCall.of(step, tool, arguments(tool, i, false));
      DerivedKey key = agent.keyOf(call);
      Action action = new Action(i, tool, call, key.key(), new CopyOnWriteArrayList<>());
      actions.add(action);
      injectFault(action);
      // Layer 2, the tool wrapper: every call goes out twice.
      calls.add(track(action, agent.invoke(call)));
      calls.add(track(action, agent.invoke(call)));
      if (i % 3 == 0) {
        // Layer 3, the model re-emits the call with its arguments written differently.
        calls.add(track(action, agent.invoke(ToolCall.of(step, tool, arguments(tool, i, true)))));
      }
    }
    int published = calls.size();
    await(calls, timeout, progress, actions.size());
    List<CompletableFuture<CallResult>> replays = new ArrayList<>();
    for (Action action : actions) {
      if (action.index() % 5 == 0) {
        // Layer 4, the orchestrator crashed and replays the step through a new client.
        replays.add(track(action, restartedAgent.invoke(action.call())));
      }
    }
    published += replays.size();
    await(replays, timeout, progress, actions.size());
    int conflicts = sendConflicts(actions);
    return new Result(actions, published + conflicts, conflicts, 0);
  }

  /** Asks the reconciler about held actions, then asks again for their answers. */
  Result reconcile(Reconciler reconciler, Result result, Duration timeout) throws Exception {
    List<Action> held =
        result.actions().stream().filter(a -> last(a) instanceof CallResult.HeldUnknown).toList();
    if (held.isEmpty()) {
      return result;
    }
    var report = reconciler.reconcileOnce();
    long deadline = System.nanoTime() + timeout.toNanos();
    List<Action> pending = new ArrayList<>(held);
    while (!pending.isEmpty() && System.nanoTime() < deadline) {
      List<CompletableFuture<CallResult>> asks =
          pending.stream().map(a -> track(a, restartedAgent.invoke(a.call()))).toList();
      CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new))
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      pending.removeIf(a -> !(last(a) instanceof CallResult.HeldUnknown));
    }
    return new Result(
        result.actions(),
        result.intentsPublished() + held.size(),
        result.conflictsSent(),
        report.total().heldFoundEffect() + report.total().heldNoEffect());
  }

  private CompletableFuture<CallResult> track(Action action, CompletableFuture<CallResult> call) {
    return call.whenComplete(
        (r, e) -> {
          if (r != null) {
            action.results().add(r);
          }
        });
  }

  private static CallResult last(Action action) {
    List<CallResult> results = action.results();
    return results.isEmpty() ? null : results.get(results.size() - 1);
  }

  static boolean replayed(CallResult result) {
    return result instanceof CallResult.Succeeded s && s.replayed()
        || result instanceof CallResult.Failed f && f.replayed()
        || result instanceof CallResult.HeldUnknown h && h.replayed();
  }

  private void injectFault(Action action) {
    if (Math.floorMod(action.index() * 7919, 100) >= faultPercent) {
      return;
    }
    switch (action.tool()) {
      case "charge_card" ->
          payments.inject(action.key(), CHARGE_FAULTS[(action.index() / 3) % CHARGE_FAULTS.length]);
      case "send_receipt" ->
          receipts.inject(
              action.key(),
              action.index() % 2 == 0 ? Fault.ERROR_AFTER_EFFECT : Fault.DROP_AFTER_EFFECT);
      default -> {}
    }
  }

  static String arguments(String tool, int i, boolean reformatted) {
    return switch (tool) {
      case "charge_card" ->
          reformatted
              ? "{ \"customer\": \"cus_"
                  + i
                  + "\",\n  \"currency\": \"EUR\", \"amount\": "
                  + (100 + i)
                  + ".0, \"reason\": \"the model phrased it anew\" }"
              : "{\"amount\":"
                  + (100 + i)
                  + ",\"currency\":\"EUR\",\"customer\":\"cus_"
                  + i
                  + "\",\"reason\":\"invoice "
                  + i
                  + "\"}";
      case "publish_order_event" ->
          reformatted
              ? "{ \"status\" : \"paid\" , \"order\" : \"ord_" + i + "\" }"
              : "{\"order\":\"ord_" + i + "\",\"status\":\"paid\"}";
      default ->
          reformatted
              ? "{ \"template\": \"receipt\", \"customer\": \"cus_" + i + "\" }"
              : "{\"customer\":\"cus_" + i + "\",\"template\":\"receipt\"}";
    };
  }

  /** A buggy agent reuses a few keys for other arguments; the ledger must refuse them. */
  private int sendConflicts(List<Action> actions) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    int sent = 0;
    try (KafkaProducer<String, ToolIntent> raw =
        new KafkaProducer<>(
            props,
            new StringSerializer(),
            new RegistryAvroSerde<>(
                SchemaRegistries.forUrl(DemoCommand.REGISTRY), ToolIntent.class))) {
      for (Action action : actions) {
        if (action.index() % 50 == 7) {
          // Another action's arguments, hashed as the client would, under this action's key.
          ToolCall other =
              ToolCall.of(
                  action.call().step(),
                  action.tool(),
                  arguments(action.tool(), action.index() + count, false));
          raw.send(
              new ProducerRecord<>(
                  Topics.INTENTS,
                  action.key(),
                  ToolIntent.newBuilder()
                      .setIdempotencyKey(action.key())
                      .setTenant(TENANT)
                      .setRunId("buggy")
                      .setStepId("buggy")
                      .setTool(action.tool())
                      .setArguments(other.argumentsJson())
                      .setArgumentsHash(agent.keyOf(other).argumentsHash())
                      .setRequestedAt(Instant.now())
                      .build()));
          sent++;
        }
      }
    }
    return sent;
  }

  private static void await(
      List<CompletableFuture<CallResult>> calls,
      Duration timeout,
      Consumer<String> progress,
      int actions)
      throws Exception {
    CompletableFuture<Void> all = CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new));
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!all.isDone()) {
      try {
        all.get(2, TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        long done = calls.stream().filter(CompletableFuture::isDone).count();
        progress.accept(done + "/" + calls.size() + " calls answered (" + actions + " actions)");
        if (System.nanoTime() > deadline) {
          throw new TimeoutException(
              "the workload did not finish within " + timeout + "; raise --timeout");
        }
      }
    }
    progress.accept(calls.size() + "/" + calls.size() + " calls answered");
  }

  /** The demo's closing table. */
  record Report(
      int actions,
      int intents,
      int duplicatesAbsorbed,
      int httpEffects,
      int kafkaEffects,
      int keylessHttpEffects,
      int replays,
      int conflicts,
      int heldUnknown,
      int heldResolved,
      int repliesMissing,
      List<String> violations) {

    boolean exactlyOnce() {
      return violations.isEmpty() && repliesMissing == 0;
    }

    void print(PrintStream out) {
      out.println();
      row(out, "logical actions", actions);
      row(out, "intents published", intents);
      row(out, "duplicates absorbed", duplicatesAbsorbed);
      row(out, "effects: http (Idempotency-Key API)", httpEffects);
      row(out, "effects: kafka (order events)", kafkaEffects);
      row(out, "effects: http (API ignoring keys)", keylessHttpEffects);
      row(out, "replays of stored results", replays);
      row(out, "conflicts (key reused, refused)", conflicts);
      row(out, "held as UNKNOWN", heldUnknown);
      row(out, "  resolved by the reconciler", heldResolved);
      row(out, "replies missing", repliesMissing);
      out.println();
      if (exactlyOnce()) {
        out.println("every action took effect exactly once; every call got its reply");
      } else {
        out.println(
            "VIOLATIONS: "
                + violations.size()
                + " action(s) did not take effect exactly once, "
                + repliesMissing
                + " replies missing");
        violations.stream().limit(20).forEach(v -> out.println("  " + v));
      }
      out.flush();
    }

    private static void row(PrintStream out, String name, int value) {
      out.printf("%-38s %8d%n", name, value);
    }
  }
}
