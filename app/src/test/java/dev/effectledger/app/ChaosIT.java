package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small seeded chaos run: two processors and two executors as separate OS processes (the jar) on
 * a 3-broker cluster (replication 3, min.insync.replicas 2, standby replicas, record caching on),
 * agents retrying at all four layers against a payment API with injected faults, while a seeded
 * schedule kill -9s processors and executors and stops brokers. At the end every logical action
 * took effect exactly as often as the workload meant it to, every call has its reply, no key is
 * stuck PENDING, and the reconciler finds ledger and downstream in agreement.
 */
@Tag("integration")
class ChaosIT {

  @RegisterExtension static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(3);

  private static final long SEED = 20261122L;
  private static final int AGENTS = 4;
  private static final int ACTIONS_PER_AGENT = 500;
  private static final KeyRules RULES = KeyRules.builder().ignore("/reason").require("/amount", "/to").build();

  @TempDir Path dir;
  private final List<Process> processes = new CopyOnWriteArrayList<>();

  @AfterEach
  void killAll() {
    processes.forEach(Process::destroyForcibly);
  }

  /** One logical action: its steps (two where the workload repeats it on purpose) and answers. */
  private record Action(String agent, int index, List<StepContext> steps, String arguments, List<ToolResult> finals) {
    int expectedEffects() {
      return steps.size();
    }
  }

  /** A process of the jar that can be killed and started again with the same arguments. */
  private final class Node {
    final String name;
    final String[] args;
    volatile Process process;
    int starts;

    Node(String name, String... args) {
      this.name = name;
      this.args = args;
    }

    void start() throws IOException {
      process = JarProcess.start(dir, name, args);
      processes.add(process);
      starts++;
    }

    void kill() throws InterruptedException {
      process.destroyForcibly(); // SIGKILL
      process.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private void write(String name, String... lines) throws IOException {
    Files.writeString(dir.resolve(name), String.join("\n", lines) + "\n");
  }

  @Test
  @Timeout(420)
  void shouldTakeEachActionEffectExactlyAsOftenAsMeantUnderKillsAndBrokerStops() throws Exception {
    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(2))) {
      Files.writeString(dir.resolve("tools.yaml"), """
          tools:
            charge_card:
              class: irreversible
              pendingTimeout: 10m
              lane: payments
              connector: http
              retry: {maxAttempts: 10, base: 100ms, cap: 2s}
              settings: {url: "%1$s", timeout: 1s, honoursKeys: true, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
          """.formatted(downstream.url()));
      String common = "bootstrap.servers=" + kafka.bootstrapServers() + "\nschema.registry.url=" + registry.url()
          + "\ntools.file=tools.yaml\nsession.timeout.ms=6000\nheartbeat.interval.ms=1000";
      int[] ports = {JarProcess.freePort(), JarProcess.freePort()};
      List<Node> processors = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        write("processor-" + i + ".properties", common, "application.id=chaos", "state.dir=" + dir.resolve("state-" + i),
            "http.port=" + ports[i], "topics.create=true", "topics.partitions=4", "topics.replication=3",
            "topics.min.insync.replicas=2", "replication.factor=3", "topic.min.insync.replicas=2", "num.standby.replicas=1");
        processors.add(new Node("processor-" + i, "processor", "--config", "processor-" + i + ".properties"));
      }
      write("executor.properties", common, "executor.concurrency=16");
      List<Node> executors = List.of(new Node("executor-0", "executor", "--config", "executor.properties", "--lanes", "payments"),
          new Node("executor-1", "executor", "--config", "executor.properties", "--lanes", "payments"));
      HttpClient http = HttpClient.newHttpClient();
      processors.get(0).start();
      await().atMost(Duration.ofSeconds(120)).ignoreExceptions().until(() -> http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + ports[0] + "/readyz")).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
      processors.get(1).start();
      for (Node executor : executors) {
        executor.start();
      }
      long started = System.nanoTime();
      System.out.println("chaos: pipeline up");

      Random random = new Random(SEED);
      List<Action> actions = new ArrayList<>();
      for (int a = 0; a < AGENTS; a++) {
        for (int i = 0; i < ACTIONS_PER_AGENT; i++) {
          List<StepContext> steps = new ArrayList<>(List.of(new StepContext("acme", "agent-" + a, "step-" + i, "customer:" + i)));
          if (i % 50 == 0) {
            steps.add(new StepContext("acme", "agent-" + a, "step-" + i + "-again", "customer:" + i));
          }
          Action action = new Action("agent-" + a, i, steps, "{\"amount\":" + (1 + i) + ",\"to\":\"cus_" + a + "_" + i + "\",\"reason\":\"r\"}",
              new CopyOnWriteArrayList<>());
          actions.add(action);
          if (random.nextInt(100) < 12) {
            String key = ToolCallClientKeys.key(steps.get(0), action.arguments());
            downstream.inject(key, List.of(Fault.UNAVAILABLE_BEFORE_EFFECT, Fault.HANG_AFTER_EFFECT, Fault.DROP_AFTER_EFFECT,
                Fault.ERROR_AFTER_EFFECT).get(random.nextInt(4)));
          }
        }
      }

      AtomicBoolean workloadDone = new AtomicBoolean();
      AtomicInteger kills = new AtomicInteger();
      AtomicInteger brokerStops = new AtomicInteger();
      Thread chaos = new Thread(() -> {
        Random schedule = new Random(SEED + 1);
        try {
          while (!workloadDone.get()) {
            Thread.sleep(3000 + schedule.nextInt(2000)); // the fault schedule's pace, not synchronisation
            if (workloadDone.get()) {
              break;
            }
            int pick = schedule.nextInt(3);
            if (pick == 0) {
              Node victim = processors.get(schedule.nextInt(2));
              victim.kill();
              kills.incrementAndGet();
              Thread.sleep(1500);
              victim.start();
            } else if (pick == 1) {
              Node victim = executors.get(schedule.nextInt(2));
              victim.kill();
              kills.incrementAndGet();
              Thread.sleep(1500);
              victim.start();
            } else {
              int broker = 1 + schedule.nextInt(2);
              kafka.cluster().stopBroker(broker);
              brokerStops.incrementAndGet();
              Thread.sleep(4000);
              kafka.cluster().startBroker(broker);
            }
          }
        } catch (Exception e) {
          throw new IllegalStateException("chaos schedule failed", e);
        }
      }, "chaos");
      chaos.start();

      ExecutorService agents = Executors.newFixedThreadPool(AGENTS);
      List<CompletableFuture<Void>> runs = new ArrayList<>();
      for (int a = 0; a < AGENTS; a++) {
        String agent = "agent-" + a;
        List<Action> mine = actions.stream().filter(x -> x.agent().equals(agent)).toList();
        runs.add(CompletableFuture.runAsync(() -> runAgent(mine, registry.url()), agents));
      }
      CompletableFuture.allOf(runs.toArray(CompletableFuture[]::new)).get(300, TimeUnit.SECONDS);
      workloadDone.set(true);
      System.out.printf("chaos: workload done after %d s%n", (System.nanoTime() - started) / 1_000_000_000);
      chaos.join(30_000);
      agents.shutdown();

      // Every logical action took effect exactly as often as the workload meant it to.
      List<String> violations = new ArrayList<>();
      for (Action action : actions) {
        int effects = action.steps().stream().mapToInt(s -> downstream.effects(ToolCallClientKeys.key(s, action.arguments()))).sum();
        if (effects != action.expectedEffects()) {
          violations.add(action.agent() + "/" + action.index() + ": " + effects + " effects, meant " + action.expectedEffects());
        }
      }
      assertThat(violations).as("kills %s, broker stops %s", kills.get(), brokerStops.get()).isEmpty();
      assertThat(kills.get() + brokerStops.get()).as("the schedule did fault").isGreaterThanOrEqualTo(3);
      // Every call has its final reply, and no key is left PENDING.
      assertThat(actions).allSatisfy(a -> assertThat(a.finals()).hasSize(a.steps().size()));
      for (Action action : actions) {
        for (StepContext step : action.steps()) {
          String key = ToolCallClientKeys.key(step, action.arguments());
          HttpResponse<String> entry = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports[0]
              + "/v1/keys/acme/" + key)).build(), HttpResponse.BodyHandlers.ofString());
          assertThat(entry.body()).as("ledger entry of %s", key).doesNotContain("\"state\":\"PENDING\"");
        }
      }
      // Ledger and downstream agree.
      Properties kafkaProps = new Properties();
      kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
      var policies = new ToolPolicyLoader().load(dir.resolve("tools.yaml"));
      try (Reconciler reconciler = new Reconciler(kafkaProps, registry.url(),
          Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC()), Duration.ZERO, Clock.systemUTC())) {
        var report = reconciler.reconcileOnce().tool("charge_card");
        assertThat(report.missingEffect()).isZero();
        assertThat(report.confirmed()).isGreaterThanOrEqualTo(actions.size());
      }
      System.out.printf("chaos: %d actions, %d kills, %d broker stops, effects %d%n", actions.size(), kills.get(),
          brokerStops.get(), downstream.totalEffects());
    }
  }

  /**
   * One agent: every call twice (the tool wrapper), every third re-emitted reformatted (the model),
   * and every 100 actions the agent "crashes": its client is dropped with calls in flight and a new
   * client replays every step not yet answered (the orchestrator). Timed-out calls are asked again.
   */
  private void runAgent(List<Action> actions, String registryUrl) {
    Semaphore inFlight = new Semaphore(40);
    ToolCallClient client = newClient(registryUrl);
    List<CompletableFuture<?>> pending = new ArrayList<>();
    Map<StepContext, ToolResult> answers = new ConcurrentHashMap<>();
    for (Action action : actions) {
      for (StepContext step : action.steps()) {
        ToolCall call = ToolCall.of(step, "charge_card", action.arguments());
        inFlight.acquireUninterruptibly();
        CompletableFuture<ToolResult> first = client.call(call);
        CompletableFuture<ToolResult> second = client.call(call);
        CompletableFuture<ToolResult> third = action.index() % 3 == 0
            ? client.call(ToolCall.of(step, "charge_card", "{ \"to\": \"cus_" + action.agent().substring(6) + "_" + action.index()
                + "\", \"amount\": " + (1 + action.index()) + ".0, \"reason\": \"reworded\" }"))
            : CompletableFuture.completedFuture(null);
        pending.add(CompletableFuture.allOf(first, second, third).whenComplete((r, e) -> {
          inFlight.release();
          ToolResult result = first.getNow(null);
          if (result != null && result.getStatus() != ResultStatus.IN_FLIGHT) {
            answers.putIfAbsent(step, result);
          }
        }));
      }
      if (action.index() % 100 == 99) {
        client.close(); // the agent process dies with calls in flight
        client = newClient(registryUrl);
      }
    }
    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).exceptionally(e -> null).join();
    System.out.printf("chaos: %s sent everything, %d of %d steps answered%n", actions.get(0).agent(), answers.size(),
        actions.stream().mapToInt(a -> a.steps().size()).sum());
    try (ToolCallClient replay = newClient(registryUrl)) {
      for (int round = 0; round < 10; round++) {
        List<CompletableFuture<?>> asks = new ArrayList<>();
        for (Action action : actions) {
          for (StepContext step : action.steps()) {
            if (!answers.containsKey(step)) {
              asks.add(replay.call(ToolCall.of(step, "charge_card", action.arguments())).thenAccept(r -> {
                if (r.getStatus() != ResultStatus.IN_FLIGHT) {
                  answers.putIfAbsent(step, r);
                }
              }));
            }
          }
        }
        CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).exceptionally(e -> null).join();
        if (asks.isEmpty()) {
          break;
        }
      }
    }
    for (Action action : actions) {
      for (StepContext step : action.steps()) {
        ToolResult answer = answers.get(step);
        if (answer != null) {
          action.finals().add(answer);
        }
      }
    }
  }

  private static ToolCallClient newClient(String registryUrl) {
    return ToolCallClient.builder().bootstrapServers(kafka.bootstrapServers()).schemaRegistryUrl(registryUrl)
        .keyRules("charge_card", RULES).timeout(Duration.ofSeconds(45)).build();
  }

  /** Keys as the agents derive them. */
  private static final class ToolCallClientKeys {
    static String key(StepContext step, String arguments) {
      return dev.effectledger.client.IdempotencyKeys.derive(step, "charge_card", arguments, RULES).key();
    }
  }
}
