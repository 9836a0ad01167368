package dev.effectledger.bench.chaos;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.bench.Processes;
import dev.effectledger.bench.Processes.Node;
import dev.effectledger.bench.chaos.ChaosWorkload.Action;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The chaos harness: every moving part as its own OS process (Kafka: a 3-broker KRaft cluster, or
 * one broker with its data on disk; the Schema Registry endpoints; a payment API; processors;
 * executors; agents), a seeded schedule of kill -9s and broker faults while the agents work, then
 * quiescence and the checks: effects per logical action exactly as meant, every step answered, no
 * key PENDING or UNKNOWN, no double effect seen by the ledger, ledger and downstream in agreement.
 * In the key-ignoring mode the payment API acts on every request, so any dispatch performed twice
 * shows as a second effect.
 *
 * <p>What it exercises, because a class of bugs escaped a gentler version: executors running 32
 * effects at once on a payment API that answers some calls slowly (effects finish out of order, so
 * committed outcomes sit above a partition's committed offset), an executor killed only while many
 * effects are in flight, the fault mix of a misbehaving payment API, and a single-broker deployment
 * killed with -9. Processes that exit on their own are restarted, as a supervisor would.
 */
public final class ChaosRun {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PAYMENTS = "payments";

  /**
   * The payment API's faults: shares of keys, on their first request (see {@code effectledger
   * downstream --help}).
   */
  public static final String FAULT_MIX = "503=5,hang=3,reset=3,500=3,slow=5";

  /**
   * What to run. {@code minWorkload}: the least time the agents take to send every step once (zero:
   * as fast as they can). {@code singleBroker}: one Kafka broker with its data on disk, killed with
   * -9 and started again as the broker fault, instead of a 3-broker cluster whose brokers are
   * stopped. {@code maxFaults} bounds the schedule (0: faults until the agents are done): when
   * faults come faster than the pipeline recovers, nothing finishes, so a short run stops faulting
   * after a few.
   */
  public record Options(
      int agents,
      int actionsPerAgent,
      int processors,
      int executors,
      boolean ignoreKeys,
      boolean singleBroker,
      int executorConcurrency,
      String faultMix,
      long seed,
      Duration minGap,
      Duration maxGap,
      int partitions,
      int maxFaults,
      Path dir,
      Duration minWorkload) {

    public int actions() {
      return agents * actionsPerAgent;
    }
  }

  /**
   * What the run saw. {@code brokerFaults}: broker stops (3 brokers) or kill -9s (one broker);
   * {@code inFlightAtExecutorKills}: requests in progress at the payment API at each executor kill;
   * {@code selfExits}: processors and executors that exited on their own and were restarted; {@code
   * doubleEffects}: actions with more effects than meant; {@code doubleEffectAudits}: what the
   * ledger flagged as DOUBLE_EFFECT.
   */
  public record Result(
      int actions,
      int steps,
      int processKills,
      int agentKills,
      int brokerFaults,
      List<Integer> inFlightAtExecutorKills,
      int selfExits,
      long effects,
      int doubleEffects,
      int answered,
      long intents,
      long replies,
      int heldUnknown,
      long doubleEffectAudits,
      ToolReport reconciliation,
      long seconds,
      List<String> violations) {

    public String summary() {
      return String.format(
          "chaos: %d actions (%d steps), %d process kills (executors killed with %s requests in flight),"
              + " %d agent kills, %d broker faults, %d restarts after a process exited on its own, %d effects, %d actions with"
              + " more effects than meant, %d of %d steps answered, %d intents and %d replies, %d keys held as UNKNOWN on the"
              + " way, %d double effects audited by the ledger, reconciler %s, %d s, %d violation(s)",
          actions,
          steps,
          processKills,
          inFlightAtExecutorKills,
          agentKills,
          brokerFaults,
          selfExits,
          effects,
          doubleEffects,
          answered,
          steps,
          intents,
          replies,
          heldUnknown,
          doubleEffectAudits,
          reconciliation,
          seconds,
          violations.size());
    }
  }

  /** How long every processor may take to answer /readyz again after a fault. */
  private static final Duration RECOVERY_LIMIT = Duration.ofSeconds(180);

  /** How long reading a topic to its end may take when the run takes stock. */
  private static final Duration READ_LIMIT = Duration.ofMinutes(5);

  private final Options options;
  private final ChaosWorkload workload;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private int downstreamPort;

  public ChaosRun(Options options) {
    this.options = options;
    this.workload = new ChaosWorkload(options.agents(), options.actionsPerAgent(), 50);
  }

  public Result run() throws Exception {
    long started = System.nanoTime();
    try (Processes processes = new Processes(options.dir())) {
      return runAll(processes, started);
    }
  }

  private Result runAll(Processes processes, long started) throws Exception {
    int registryPort = Processes.freePort();
    Node cluster;
    OutputStream brokerControl = null;
    String bootstrap;
    if (options.singleBroker()) {
      processes
          .jar(
              "registry",
              "256m",
              "broker",
              "--registry-only",
              "--registry-port",
              Integer.toString(registryPort))
          .start()
          .awaitLine("schema.registry.url=", Duration.ofSeconds(60));
      cluster =
          processes
              .jar(
                  "broker",
                  "1g",
                  "broker",
                  "--data-dir",
                  options.dir().resolve("kafka").toString(),
                  "--port",
                  Integer.toString(Processes.freePort()),
                  "--controller-port",
                  Integer.toString(Processes.freePort()),
                  "--no-registry")
              .start();
      bootstrap = cluster.awaitLine("bootstrap.servers=", Duration.ofSeconds(120));
      say("one broker (data in " + options.dir().resolve("kafka") + ") up at " + bootstrap);
    } else {
      cluster =
          processes
              .jar(
                  "cluster",
                  "1g",
                  "broker",
                  "--brokers",
                  "3",
                  "--registry-port",
                  Integer.toString(registryPort),
                  "--control-stdin")
              .start();
      brokerControl = cluster.process().getOutputStream();
      bootstrap = cluster.awaitLine("bootstrap.servers=", Duration.ofSeconds(120));
      say("cluster of 3 brokers up at " + bootstrap);
    }
    String registry = "http://127.0.0.1:" + registryPort;
    downstreamPort = Processes.freePort();
    List<String> downstreamArgs =
        new ArrayList<>(
            List.of(
                "downstream",
                "--port",
                Integer.toString(downstreamPort),
                "--hang",
                "12s",
                "--slow",
                "1s",
                "--fault-mix",
                options.faultMix(),
                "--seed",
                Long.toString(options.seed())));
    if (options.ignoreKeys()) {
      downstreamArgs.add("--ignore-keys");
    }
    processes.jar("downstream", "512m", downstreamArgs.toArray(String[]::new)).start();
    String url = "http://127.0.0.1:" + downstreamPort + "/charges";
    Files.writeString(
        options.dir().resolve("tools.yaml"),
        """
        tools:
          charge_card:
            class: irreversible
            pendingTimeout: 10m
            lane: payments
            connector: http
            retry: {maxAttempts: 10, base: 100ms, cap: 2s}
            key: {ignore: [/reason], require: [/amount, /to]}
            settings: {url: "%1$s", timeout: 2s, honoursKeys: %2$s, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
        """
            .formatted(url, !options.ignoreKeys()));
    String common =
        String.join(
            "\n",
            "bootstrap.servers=" + bootstrap,
            "schema.registry.url=" + registry,
            "tools.file=tools.yaml",
            "session.timeout.ms=6000",
            "heartbeat.interval.ms=1000");
    List<Node> processors = new ArrayList<>();
    int[] ports = new int[options.processors()];
    for (int i = 0; i < options.processors(); i++) {
      ports[i] = Processes.freePort();
      int replication = options.singleBroker() ? 1 : 3;
      int minIsr = options.singleBroker() ? 1 : 2;
      Files.writeString(
          options.dir().resolve("processor-" + i + ".properties"),
          String.join(
                  "\n",
                  common,
                  "application.id=chaos",
                  "state.dir=" + options.dir().resolve("state-" + i),
                  "http.port=" + ports[i],
                  "topics.create=true",
                  "topics.partitions=" + options.partitions(),
                  "topics.replication=" + replication,
                  "topics.min.insync.replicas=" + minIsr,
                  "replication.factor=" + replication,
                  "topic.min.insync.replicas=" + minIsr,
                  "num.standby.replicas=1",
                  "group.instance.id=processor-" + i)
              + "\n");
      processors.add(
          processes.jar(
              "processor-" + i, "512m", "processor", "--config", "processor-" + i + ".properties"));
    }
    List<Node> executors = new ArrayList<>();
    for (int i = 0; i < options.executors(); i++) {
      Files.writeString(
          options.dir().resolve("executor-" + i + ".properties"),
          common
              + "\nexecutor.concurrency="
              + options.executorConcurrency()
              + "\nexecutor.instance.id=executor-"
              + i
              + "\n");
      executors.add(
          processes.jar(
              "executor-" + i,
              "384m",
              "executor",
              "--config",
              "executor-" + i + ".properties",
              "--lanes",
              PAYMENTS));
    }
    processors.get(0).start();
    Processes.awaitReady(ports[0], Duration.ofSeconds(180));
    for (Node node : processors.subList(1, processors.size())) {
      node.start();
    }
    for (Node node : executors) {
      node.start();
    }
    say(options.processors() + " processors and " + options.executors() + " executors started");

    Properties kafka = new Properties();
    kafka.put("bootstrap.servers", bootstrap);
    ToolPolicies policies = new ToolPolicyLoader().load(options.dir().resolve("tools.yaml"));
    try (Reconciler reconciler =
        new Reconciler(
            kafka,
            registry,
            Connectors.forLanes(policies, List.of(PAYMENTS), Clock.systemUTC()),
            Duration.ofSeconds(10),
            Clock.systemUTC())) {
      List<ToolReport> passes = Collections.synchronizedList(new ArrayList<>());
      var reconciling = Executors.newSingleThreadScheduledExecutor();
      reconciling.scheduleWithFixedDelay(
          () -> {
            try {
              passes.add(reconciler.reconcileOnce().tool(ChaosWorkload.TOOL));
            } catch (RuntimeException e) {
              say("reconciliation pass failed, next in 5 s: " + e);
            }
          },
          5,
          5,
          TimeUnit.SECONDS);
      List<Node> agents = new ArrayList<>();
      // Agents spread their first sends over at least minWorkload, measured from here (a restarted
      // agent gets the same origin): on a fast machine the workload would otherwise end before the
      // fault schedule has hit every kind of part once.
      long origin = System.currentTimeMillis();
      for (int a = 0; a < options.agents(); a++) {
        agents.add(
            processes
                .node(
                    "agent-" + a,
                    List.of(
                        Processes.java(),
                        "-Xmx512m",
                        "-XX:+UseSerialGC",
                        "-cp",
                        Processes.absoluteClassPath(),
                        ChaosAgent.class.getName(),
                        Integer.toString(a),
                        Integer.toString(options.agents()),
                        Integer.toString(options.actionsPerAgent()),
                        "50",
                        bootstrap,
                        registry,
                        "answers-" + a + ".txt",
                        Long.toString(origin),
                        Long.toString(options.minWorkload().toMillis())))
                .start());
      }
      say(options.agents() + " agents started, " + options.actions() + " actions");

      List<String> violations = new ArrayList<>();
      AtomicInteger processKills = new AtomicInteger();
      AtomicInteger agentKills = new AtomicInteger();
      AtomicInteger brokerFaults = new AtomicInteger();
      AtomicInteger selfExits = new AtomicInteger();
      List<Integer> inFlightAtKills = new ArrayList<>();
      List<Node> supervised = new ArrayList<>(processors);
      supervised.addAll(executors);
      if (options.singleBroker()) {
        supervised.add(
            cluster); // a broker that exits on its own is started again, as its service manager
        // would
      }
      Random schedule = new Random(options.seed() + 1);
      awaitFirstAnswers(50, Duration.ofMinutes(3)); // faults hit a flowing pipeline, not its start
      long nextFault = System.nanoTime() + gap(schedule);
      long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      Set<Node> finished = new HashSet<>();
      int faults = schedule.nextInt(4);
      while (finished.size() < agents.size()) {
        Thread.sleep(200); // polling the agents' exits and the fault schedule's clock
        for (Node agent : agents) {
          if (!finished.contains(agent) && !agent.killing() && !agent.alive()) {
            finished.add(agent);
            if (agent.process().exitValue() != 0) {
              violations.add(
                  agent.name()
                      + " exited "
                      + agent.process().exitValue()
                      + " with steps unanswered (see "
                      + agent.name()
                      + ".log)");
            }
          }
        }
        superviseExits(supervised, selfExits);
        if (System.nanoTime() >= nextReport) {
          say(
              String.format(
                  "%d s: %d of %d steps answered, %d process kills, %d agent kills, %d broker faults, %d restarts after exits",
                  TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                  answered(),
                  steps(),
                  processKills.get(),
                  agentKills.get(),
                  brokerFaults.get(),
                  selfExits.get()));
          nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        }
        if (System.nanoTime() < nextFault
            || finished.size() == agents.size()
            || options.maxFaults() > 0
                && processKills.get() + agentKills.get() + brokerFaults.get()
                    >= options.maxFaults()) {
          continue;
        }
        int pick =
            faults++ % 4; // processor, executor, agent, broker in turn; victims and gaps seeded
        if (pick == 0) {
          Node victim = processors.get(schedule.nextInt(processors.size()));
          victim.kill();
          processKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else if (pick == 1) {
          Node victim = executors.get(schedule.nextInt(executors.size()));
          inFlightAtKills.add(awaitEffectsInFlight(8, Duration.ofSeconds(30)));
          victim.kill();
          processKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else if (pick == 2) {
          List<Node> running = agents.stream().filter(a -> !finished.contains(a)).toList();
          Node victim = running.get(schedule.nextInt(running.size()));
          victim.kill();
          agentKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else if (options.singleBroker()) {
          cluster.kill();
          brokerFaults.incrementAndGet();
          Thread.sleep(1500);
          cluster.restart();
        } else {
          int broker = 1 + schedule.nextInt(2);
          brokerControl.write(("stop " + broker + "\n").getBytes(StandardCharsets.UTF_8));
          brokerControl.flush();
          brokerFaults.incrementAndGet();
          Thread.sleep(4000);
          brokerControl.write(("start " + broker + "\n").getBytes(StandardCharsets.UTF_8));
          brokerControl.flush();
        }
        // The next fault comes a seeded gap after the ledger is back (every processor ready):
        // faults faster than recovery (a killed processor restores its tasks from the changelog)
        // would only measure an outage.
        awaitRecovery(ports, processors, supervised, selfExits, faults);
        nextFault = System.nanoTime() + gap(schedule);
      }
      say("workload done; waiting for quiescence");
      awaitQuiescence(kafka, supervised, selfExits);
      reconciling.shutdown();
      reconciling.awaitTermination(5, TimeUnit.MINUTES);
      ToolReport last = reconciler.reconcileOnce().tool(ChaosWorkload.TOOL);
      ToolReport report = sum(passes, last);
      say("reconciler, all passes: " + report);
      AuditFacts audits = audits(kafka, registry);
      Set<String> held = audits.held();
      int[] doubled = new int[1];
      long effects = check(violations, ports[0], report, doubled);
      if (audits.doubleEffects() > 0) {
        violations.add(
            "the ledger audited "
                + audits.doubleEffects()
                + " double effect(s) (LATE_OUTCOME with code DOUBLE_EFFECT)");
      }
      Map<String, Long> intents = countByKey(kafka, Topics.INTENTS);
      Map<String, Long> replies = countByKey(kafka, Topics.RESULTS);
      List<String> unanswered =
          intents.entrySet().stream()
              .filter(e -> replies.getOrDefault(e.getKey(), 0L) < e.getValue())
              .map(
                  e ->
                      e.getKey()
                          + ": "
                          + e.getValue()
                          + " intents, "
                          + replies.getOrDefault(e.getKey(), 0L)
                          + " replies")
              .toList();
      unanswered.stream().limit(20).forEach(u -> violations.add("intents without a reply: " + u));
      long intentCount = intents.values().stream().mapToLong(Long::longValue).sum();
      long replyCount = replies.values().stream().mapToLong(Long::longValue).sum();
      Result result =
          new Result(
              options.actions(),
              steps(),
              processKills.get(),
              agentKills.get(),
              brokerFaults.get(),
              List.copyOf(inFlightAtKills),
              selfExits.get(),
              effects,
              doubled[0],
              answered(),
              intentCount,
              replyCount,
              held.size(),
              audits.doubleEffects(),
              report,
              TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
              List.copyOf(violations));
      say(result.summary());
      violations.stream().limit(50).forEach(v -> say("VIOLATION " + v));
      return result;
    }
  }

  /**
   * The checks: effects per action exactly as meant (no exception: a second effect is a broken
   * promise whatever the ledger held), answers, no key left PENDING or UNKNOWN, reconciliation.
   */
  private long check(List<String> violations, int processorPort, ToolReport report, int[] doubled)
      throws Exception {
    Map<String, Integer> effects =
        JSON.readValue(
            http.send(
                    HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + downstreamPort + "/effects"))
                        .build(),
                    HttpResponse.BodyHandlers.ofString())
                .body(),
            new TypeReference<Map<String, Integer>>() {});
    List<String> keys = new ArrayList<>();
    List<String> wrong = new ArrayList<>();
    for (Action action : workload.all()) {
      int sum = 0;
      for (StepContext step : action.steps()) {
        String key = action.key(step);
        keys.add(key);
        sum += effects.getOrDefault(key, 0);
      }
      if (sum > action.steps().size()) {
        doubled[0]++;
      }
      if (sum != action.steps().size()) {
        wrong.add(
            "agent-"
                + action.agent()
                + "/action-"
                + action.index()
                + " ("
                + action.key(action.steps().get(0))
                + "): "
                + sum
                + " effects, meant "
                + action.steps().size());
      }
    }
    wrong.stream().limit(20).forEach(violations::add);
    if (wrong.size() > 20) {
      violations.add(
          (wrong.size() - 20)
              + " more actions with effects other than meant ("
              + doubled[0]
              + " of all with more)");
    }
    if (answered() != steps()) {
      violations.add((steps() - answered()) + " steps have no final answer");
    }
    List<String> stuck = unsettled(keys, processorPort);
    stuck.stream().limit(20).forEach(s -> violations.add("ledger entry not final: " + s));
    if (stuck.size() > 20) {
      violations.add((stuck.size() - 20) + " more ledger entries not final");
    }
    if (report.missingEffect() > 0) {
      violations.add(
          "reconciler: "
              + report.missingEffect()
              + " completed keys without their effect downstream");
    }
    if (report.heldUnresolved() > 0) {
      violations.add(
          "reconciler: " + report.heldUnresolved() + " keys held as UNKNOWN it could not resolve");
    }
    if (report.confirmed() < keys.size()) {
      violations.add(
          "reconciler confirmed "
              + report.confirmed()
              + " effects of "
              + keys.size()
              + " completed keys");
    }
    return effects.values().stream().mapToLong(Integer::longValue).sum();
  }

  /** Entries the ledger still has as PENDING or UNKNOWN, asked over the processor's HTTP API. */
  private List<String> unsettled(List<String> keys, int port) {
    Semaphore window = new Semaphore(64);
    List<String> stuck = Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<?>> asks = new ArrayList<>();
    for (String key : keys) {
      window.acquireUninterruptibly();
      asks.add(
          http.sendAsync(
                  HttpRequest.newBuilder(
                          URI.create(
                              "http://127.0.0.1:"
                                  + port
                                  + "/v1/keys/"
                                  + ChaosWorkload.TENANT
                                  + "/"
                                  + key))
                      .timeout(Duration.ofSeconds(30))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .whenComplete(
                  (response, error) -> {
                    window.release();
                    if (error != null) {
                      stuck.add(key + ": not asked (" + error + ")");
                    } else if (response.body().contains("\"state\":\"PENDING\"")
                        || response.body().contains("\"state\":\"UNKNOWN\"")) {
                      stuck.add(key + ": " + response.body());
                    } else if (response.statusCode() != 200) {
                      stuck.add(key + ": HTTP " + response.statusCode() + " " + response.body());
                    }
                  }));
    }
    CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).exceptionally(e -> null).join();
    return stuck;
  }

  /** Committed records per key on {@code topic}. */
  private static Map<String, Long> countByKey(Properties kafka, String topic) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<String, Long> counts = new HashMap<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      if (!TopicReads.wholeTopic(
          consumer,
          topic,
          READ_LIMIT,
          record -> counts.merge(String.valueOf(record.key()), 1L, Long::sum))) {
        throw new IllegalStateException(
            "could not read " + topic + " to its end within " + READ_LIMIT);
      }
    }
    return counts;
  }

  /**
   * What tool-audit says: keys the ledger held as UNKNOWN at some point, and the double effects it
   * saw.
   */
  private record AuditFacts(Set<String> held, long doubleEffects) {}

  private static AuditFacts audits(Properties kafka, String registry) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Set<String> held = new HashSet<>();
    AtomicLong doubles = new AtomicLong();
    try (KafkaConsumer<String, AuditEvent> consumer =
        new KafkaConsumer<>(
            props,
            new StringDeserializer(),
            new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), AuditEvent.class))) {
      boolean read =
          TopicReads.wholeTopic(
              consumer,
              Topics.AUDIT,
              READ_LIMIT,
              record -> {
                AuditEvent event = record.value();
                if (event != null && event.getType() == AuditType.HELD_UNKNOWN) {
                  held.add(event.getIdempotencyKey());
                } else if (event != null
                    && event.getType() == AuditType.LATE_OUTCOME
                    && ErrorCode.DOUBLE_EFFECT.name().equals(event.getCode())) {
                  doubles.incrementAndGet();
                }
              });
      if (!read) {
        throw new IllegalStateException(
            "could not read " + Topics.AUDIT + " to its end within " + READ_LIMIT);
      }
    }
    return new AuditFacts(held, doubles.get());
  }

  /** Restarts processors and executors that exited on their own, as a supervisor would. */
  private void superviseExits(List<Node> supervised, AtomicInteger selfExits) throws IOException {
    for (Node node : supervised) {
      if (!node.killing() && node.process() != null && !node.alive()) {
        say(
            node.name()
                + " exited on its own with status "
                + node.process().exitValue()
                + "; restarting it (see "
                + node.log()
                + ")");
        selfExits.incrementAndGet();
        node.restart();
      }
    }
  }

  /** Waits until the agents have {@code wanted} final answers, or {@code limit}. */
  private void awaitFirstAnswers(int wanted, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (answered() < wanted && System.nanoTime() < deadline) {
      Thread.sleep(200); // polling the agents' answer files
    }
    say(answered() + " steps answered; faults start");
  }

  /**
   * Waits until the payment API has at least {@code wanted} requests in progress, or {@code limit};
   * returns how many it had.
   */
  private int awaitEffectsInFlight(int wanted, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    int seen = 0;
    while (System.nanoTime() < deadline) {
      try {
        seen =
            Integer.parseInt(
                http.send(
                        HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + downstreamPort + "/inflight"))
                            .timeout(Duration.ofSeconds(2))
                            .build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body()
                    .trim());
      } catch (IOException | NumberFormatException e) {
        seen = 0;
      }
      if (seen >= wanted) {
        return seen;
      }
      Thread.sleep(20); // polling the payment API's in-flight count
    }
    return seen;
  }

  private static ToolReport sum(List<ToolReport> passes, ToolReport last) {
    ToolReport total = last;
    synchronized (passes) {
      for (ToolReport p : passes) {
        total =
            new ToolReport(
                total.confirmed() + p.confirmed(),
                total.missingEffect() + p.missingEffect(),
                total.heldFoundEffect() + p.heldFoundEffect(),
                total.heldNoEffect() + p.heldNoEffect(),
                p.heldUnresolved() > 0 ? total.heldUnresolved() : total.heldUnresolved(),
                total.effectWithoutEntry() + p.effectWithoutEntry());
      }
    }
    return total; // unresolved holds count from the last pass only: earlier ones may have been
    // resolved since
  }

  /**
   * Waits until nothing moves: the committed offsets of the ledger and the executors and the end
   * offsets of the topics they read are the same in two readings 3 s apart. (Lag never reaches 0
   * under transactions: the last commit marker sits after the committed position.)
   */
  private void awaitQuiescence(Properties kafka, List<Node> supervised, AtomicInteger selfExits)
      throws Exception {
    try (Admin admin = Admin.create(kafka)) {
      Map<TopicPartition, Long> previous = Map.of();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (System.nanoTime() < deadline) {
        Thread.sleep(3000); // between readings
        superviseExits(supervised, selfExits);
        Map<TopicPartition, Long> now = positions(admin);
        if (now.equals(previous)) {
          return;
        }
        previous = now;
      }
      say("still moving after 5 minutes; checking anyway");
    }
  }

  private static Map<TopicPartition, Long> positions(Admin admin) throws Exception {
    Map<TopicPartition, Long> positions = new HashMap<>();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (String group : List.of("chaos", "effectledger-executor")) {
      admin
          .listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata()
          .get(30, TimeUnit.SECONDS)
          .forEach(
              (tp, o) -> {
                if (o != null) {
                  positions.put(
                      new TopicPartition(group + ":" + tp.topic(), tp.partition()), o.offset());
                  latest.put(tp, OffsetSpec.latest());
                }
              });
    }
    admin
        .listOffsets(latest)
        .all()
        .get(30, TimeUnit.SECONDS)
        .forEach((tp, info) -> positions.put(tp, info.offset()));
    return positions;
  }

  private int steps() {
    return workload.all().stream().mapToInt(a -> a.steps().size()).sum();
  }

  private int answered() {
    int n = 0;
    for (int a = 0; a < options.agents(); a++) {
      Path file = options.dir().resolve("answers-" + a + ".txt");
      try {
        if (Files.exists(file)) {
          n +=
              (int)
                  Files.readAllLines(file).stream()
                      .filter(l -> l.indexOf('\t') > 0)
                      .map(l -> l.substring(0, l.indexOf('\t')))
                      .distinct()
                      .count();
        }
      } catch (IOException e) {
        say("could not read " + file + ": " + e.getMessage());
      }
    }
    return n;
  }

  private long gap(Random schedule) {
    long min = options.minGap().toMillis();
    long spread = Math.max(1, options.maxGap().toMillis() - min);
    return TimeUnit.MILLISECONDS.toNanos(min + schedule.nextLong(spread));
  }

  /**
   * Waits until every processor is ready again. A processor still not ready after {@link
   * #RECOVERY_LIMIT} ends the run with the end of its log: the ledger did not come back from a
   * fault, and every later figure would only measure the outage.
   */
  private void awaitRecovery(
      int[] ports, List<Node> processors, List<Node> supervised, AtomicInteger selfExits, int fault)
      throws Exception {
    long deadline = System.nanoTime() + RECOVERY_LIMIT.toNanos();
    for (int i = 0; i < ports.length; i++) {
      // The answer of the last poll decides: asking again could catch a processor that is ready
      // but rebalancing once more as another rejoins, which is no failure to recover.
      boolean ready = Processes.ready(ports[i]);
      while (!ready && System.nanoTime() < deadline) {
        superviseExits(supervised, selfExits);
        Thread.sleep(250); // polling readiness
        ready = Processes.ready(ports[i]);
      }
      if (!ready) {
        Node late = processors.get(i);
        throw new IllegalStateException(
            late.name()
                + " not ready "
                + RECOVERY_LIMIT.toSeconds()
                + " s after fault "
                + fault
                + " ("
                + (late.alive() ? "running" : "exited")
                + "); the end of "
                + late.log()
                + ":\n  "
                + String.join("\n  ", tail(late.log(), 15)));
      }
    }
  }

  /** The last {@code count} lines of a log, stack frames left out. */
  private static List<String> tail(Path log, int count) throws IOException {
    List<String> lines =
        Files.readAllLines(log, StandardCharsets.UTF_8).stream()
            .filter(line -> !line.startsWith("\tat ") && !line.startsWith("\t... "))
            .toList();
    return lines.subList(Math.max(0, lines.size() - count), lines.size());
  }

  private static void say(String message) {
    System.out.println(message);
    System.out.flush();
  }
}
