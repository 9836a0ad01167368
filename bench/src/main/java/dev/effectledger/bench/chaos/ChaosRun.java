package dev.effectledger.bench.chaos;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.bench.chaos.ChaosWorkload.Action;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The chaos harness: every moving part as its own OS process (a 3-broker KRaft cluster with the
 * Schema Registry endpoints, a payment API, processors, executors, agents), a seeded schedule of
 * kill -9s and broker stops while the agents work, then quiescence and the checks: effects per
 * logical action exactly as meant, every step answered, no key PENDING or UNKNOWN, ledger and
 * downstream in agreement. In the key-ignoring mode the payment API acts on every request, and a
 * second effect is allowed only for a key the ledger held as UNKNOWN (the reconciler's case).
 */
public final class ChaosRun {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PAYMENTS = "payments";

  /** What to run. */
  /**
   * What to run. {@code maxFaults} bounds the schedule (0: faults until the agents are done): when
   * faults come faster than the pipeline recovers (a killed processor restores its tasks from the
   * changelog under exactly_once_v2), nothing finishes, so a short run stops faulting after a few.
   */
  public record Options(int agents, int actionsPerAgent, int processors, int executors, boolean ignoreKeys, long seed,
      Duration minGap, Duration maxGap, int faultPercent, int partitions, int maxFaults, Path dir) {

    public int actions() {
      return agents * actionsPerAgent;
    }
  }

  /** What the run saw. */
  public record Result(int actions, int steps, int processKills, int agentKills, int brokerStops, long effects,
      int answered, long intents, long replies, int heldUnknown, ToolReport reconciliation, long seconds, List<String> violations) {

    public String summary() {
      return String.format("chaos: %d actions (%d steps), %d process kills, %d agent kills, %d broker stops, %d effects,"
              + " %d of %d steps answered, %d intents and %d replies, %d keys held as UNKNOWN on the way, reconciler %s, %d s,"
              + " %d violation(s)", actions, steps, processKills, agentKills, brokerStops, effects, answered, steps, intents, replies,
          heldUnknown, reconciliation, seconds, violations.size());
    }
  }

  private final Options options;
  private final ChaosWorkload workload;
  private final List<Node> nodes = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final Path jar;
  private int downstreamPort;

  public ChaosRun(Options options) {
    this.options = options;
    this.workload = new ChaosWorkload(options.agents(), options.actionsPerAgent(), 50);
    this.jar = Stream.of(System.getProperty("effectledger.jar", ""), "app/target/effectledger.jar", "../app/target/effectledger.jar")
        .filter(p -> !p.isEmpty()).map(Path::of).filter(Files::exists).findFirst()
        .orElseThrow(() -> new IllegalStateException("app/target/effectledger.jar is missing; build it with ./mvnw -B -DskipTests install"))
        .toAbsolutePath();
  }

  /** A process that can be killed with SIGKILL and started again with the same command. */
  private final class Node {
    final String name;
    final List<String> command;
    volatile Process process;
    volatile boolean killing;

    Node(String name, List<String> command) {
      this.name = name;
      this.command = command;
      nodes.add(this);
    }

    Node start() throws IOException {
      process = new ProcessBuilder(command).directory(options.dir().toFile()).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(options.dir().resolve(name + ".log").toFile())).start();
      return this;
    }

    void kill() throws InterruptedException {
      killing = true;
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }

    void restart() throws IOException {
      start();
      killing = false;
    }

    boolean alive() {
      return process != null && process.isAlive();
    }
  }

  private List<String> jarCommand(String heap, String... args) {
    List<String> command = new ArrayList<>(List.of(java(), "-Xmx" + heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-jar", jar.toString()));
    command.addAll(List.of(args));
    return command;
  }

  /** This JVM's class path with absolute entries, for agents started in the run's directory. */
  private static String absoluteClassPath() {
    return java.util.Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
        .map(p -> Path.of(p).toAbsolutePath().toString()).collect(java.util.stream.Collectors.joining(java.io.File.pathSeparator));
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  public Result run() throws Exception {
    long started = System.nanoTime();
    // If the harness itself is stopped, its processes go with it rather than linger.
    Thread reaper = new Thread(() -> nodes.forEach(n -> {
      if (n.process != null) {
        n.process.destroyForcibly();
      }
    }), "chaos-reaper");
    Runtime.getRuntime().addShutdownHook(reaper);
    try {
      return runAll(started);
    } finally {
      Runtime.getRuntime().removeShutdownHook(reaper);
    }
  }

  private Result runAll(long started) throws Exception {
    Files.createDirectories(options.dir());
    int registryPort = freePort();
    Node cluster = new Node("cluster", jarCommand("1g", "broker", "--brokers", "3", "--registry-port",
        Integer.toString(registryPort), "--control-stdin")).start();
    OutputStream brokerControl = cluster.process.getOutputStream();
    String bootstrap = awaitLine(cluster.process, options.dir().resolve("cluster.log"), "bootstrap.servers=", Duration.ofSeconds(120));
    String registry = "http://127.0.0.1:" + registryPort;
    say("cluster of 3 brokers up at " + bootstrap);
    downstreamPort = freePort();
    List<String> downstreamArgs = new ArrayList<>(List.of("downstream", "--port", Integer.toString(downstreamPort), "--hang", "2s",
        "--fault-percent", Integer.toString(options.faultPercent()), "--seed", Long.toString(options.seed())));
    if (options.ignoreKeys()) {
      downstreamArgs.add("--ignore-keys");
    }
    new Node("downstream", jarCommand("512m", downstreamArgs.toArray(String[]::new))).start();
    String url = "http://127.0.0.1:" + downstreamPort + "/charges";
    Files.writeString(options.dir().resolve("tools.yaml"), """
        tools:
          charge_card:
            class: irreversible
            pendingTimeout: 10m
            lane: payments
            connector: http
            retry: {maxAttempts: 10, base: 100ms, cap: 2s}
            settings: {url: "%1$s", timeout: 1s, honoursKeys: %2$s, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
        """.formatted(url, !options.ignoreKeys()));
    String common = String.join("\n", "bootstrap.servers=" + bootstrap, "schema.registry.url=" + registry, "tools.file=tools.yaml",
        "session.timeout.ms=6000", "heartbeat.interval.ms=1000");
    List<Node> processors = new ArrayList<>();
    int[] ports = new int[options.processors()];
    for (int i = 0; i < options.processors(); i++) {
      ports[i] = freePort();
      Files.writeString(options.dir().resolve("processor-" + i + ".properties"), String.join("\n", common, "application.id=chaos",
          "state.dir=" + options.dir().resolve("state-" + i), "http.port=" + ports[i], "topics.create=true",
          "topics.partitions=" + options.partitions(), "topics.replication=3", "topics.min.insync.replicas=2",
          "replication.factor=3", "topic.min.insync.replicas=2", "num.standby.replicas=1") + "\n");
      processors.add(new Node("processor-" + i, jarCommand("512m", "processor", "--config", "processor-" + i + ".properties")));
    }
    Files.writeString(options.dir().resolve("executor.properties"), common + "\nexecutor.concurrency=16\n");
    List<Node> executors = new ArrayList<>();
    for (int i = 0; i < options.executors(); i++) {
      executors.add(new Node("executor-" + i, jarCommand("384m", "executor", "--config", "executor.properties", "--lanes", PAYMENTS)));
    }
    processors.get(0).start();
    awaitReady(ports[0]);
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
    try (Reconciler reconciler = new Reconciler(kafka, registry, Connectors.forLanes(policies, List.of(PAYMENTS), Clock.systemUTC()),
        Duration.ofSeconds(3), Clock.systemUTC())) {
      List<ToolReport> passes = java.util.Collections.synchronizedList(new ArrayList<>());
      var reconciling = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
      reconciling.scheduleWithFixedDelay(() -> {
        try {
          passes.add(reconciler.reconcileOnce().tool(ChaosWorkload.TOOL));
        } catch (RuntimeException e) {
          say("reconciliation pass failed, next in 5 s: " + e);
        }
      }, 5, 5, TimeUnit.SECONDS);
      List<Node> agents = new ArrayList<>();
      for (int a = 0; a < options.agents(); a++) {
        agents.add(new Node("agent-" + a, List.of(java(), "-Xmx512m", "-XX:+UseSerialGC", "-cp", absoluteClassPath(),
            ChaosAgent.class.getName(), Integer.toString(a), Integer.toString(options.agents()),
            Integer.toString(options.actionsPerAgent()), "50", bootstrap, registry, "answers-" + a + ".txt")).start());
      }
      say(options.agents() + " agents started, " + options.actions() + " actions");

      List<String> violations = new ArrayList<>();
      AtomicInteger processKills = new AtomicInteger();
      AtomicInteger agentKills = new AtomicInteger();
      AtomicInteger brokerStops = new AtomicInteger();
      Random schedule = new Random(options.seed() + 1);
      long nextFault = System.nanoTime() + gap(schedule);
      long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      Set<Node> finished = new HashSet<>();
      int faults = schedule.nextInt(4);
      while (finished.size() < agents.size()) {
        Thread.sleep(200); // polling the agents' exits and the fault schedule's clock
        for (Node agent : agents) {
          if (!finished.contains(agent) && !agent.killing && !agent.alive()) {
            finished.add(agent);
            if (agent.process.exitValue() != 0) {
              violations.add(agent.name + " exited " + agent.process.exitValue() + " with steps unanswered (see " + agent.name + ".log)");
            }
          }
        }
        if (System.nanoTime() >= nextReport) {
          say(String.format("%d s: %d of %d steps answered, %d process kills, %d agent kills, %d broker stops",
              TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started), answered(), steps(), processKills.get(),
              agentKills.get(), brokerStops.get()));
          nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        }
        if (System.nanoTime() < nextFault || finished.size() == agents.size()
            || options.maxFaults() > 0 && processKills.get() + agentKills.get() + brokerStops.get() >= options.maxFaults()) {
          continue;
        }
        int pick = faults++ % 4; // processor, executor, agent, broker in turn; victims and gaps seeded
        if (pick == 0 || pick == 1) {
          List<Node> group = pick == 0 ? processors : executors;
          Node victim = group.get(schedule.nextInt(group.size()));
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
        } else {
          int broker = 1 + schedule.nextInt(2);
          brokerControl.write(("stop " + broker + "\n").getBytes(StandardCharsets.UTF_8));
          brokerControl.flush();
          brokerStops.incrementAndGet();
          Thread.sleep(4000);
          brokerControl.write(("start " + broker + "\n").getBytes(StandardCharsets.UTF_8));
          brokerControl.flush();
        }
        // The next fault comes a seeded gap after the ledger is back (every processor ready):
        // faults faster than recovery (a killed processor restores its tasks from the changelog)
        // would only measure an outage.
        awaitRecovery(ports);
        nextFault = System.nanoTime() + gap(schedule);
      }
      say("workload done; waiting for quiescence");
      awaitQuiescence(kafka);
      reconciling.shutdown();
      reconciling.awaitTermination(5, TimeUnit.MINUTES);
      ToolReport last = reconciler.reconcileOnce().tool(ChaosWorkload.TOOL);
      ToolReport report = sum(passes, last);
      say("reconciler, all passes: " + report);
      Set<String> held = heldKeys(kafka, registry);
      long effects = check(violations, held, ports[0], report);
      Map<String, Long> intents = countByKey(kafka, "tool-intents");
      Map<String, Long> replies = countByKey(kafka, "tool-results");
      List<String> unanswered = intents.entrySet().stream().filter(e -> replies.getOrDefault(e.getKey(), 0L) < e.getValue())
          .map(e -> e.getKey() + ": " + e.getValue() + " intents, " + replies.getOrDefault(e.getKey(), 0L) + " replies").toList();
      unanswered.stream().limit(20).forEach(u -> violations.add("intents without a reply: " + u));
      long intentCount = intents.values().stream().mapToLong(Long::longValue).sum();
      long replyCount = replies.values().stream().mapToLong(Long::longValue).sum();
      Result result = new Result(options.actions(), steps(), processKills.get(), agentKills.get(), brokerStops.get(), effects,
          answered(), intentCount, replyCount, held.size(), report, TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started), List.copyOf(violations));
      say(result.summary());
      violations.stream().limit(50).forEach(v -> say("VIOLATION " + v));
      return result;
    } finally {
      for (Node node : nodes.stream().sorted(java.util.Comparator.comparingInt(nodes::indexOf).reversed()).toList()) {
        if (node.process != null) {
          node.process.destroy();
          if (!node.process.waitFor(20, TimeUnit.SECONDS)) {
            node.process.destroyForcibly();
          }
        }
      }
    }
  }

  /** The checks: effects per action, answers, no key left PENDING or UNKNOWN, reconciliation. */
  private long check(List<String> violations, Set<String> held, int processorPort, ToolReport report) throws Exception {
    Map<String, Integer> effects = JSON.readValue(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + downstreamPort + "/effects")).build(), HttpResponse.BodyHandlers.ofString()).body(),
        new TypeReference<Map<String, Integer>>() {});
    List<String> keys = new ArrayList<>();
    for (Action action : workload.all()) {
      int sum = 0;
      boolean anyHeld = false;
      for (StepContext step : action.steps()) {
        String key = action.key(step);
        keys.add(key);
        sum += effects.getOrDefault(key, 0);
        anyHeld |= held.contains(key);
      }
      if (sum != action.steps().size()) {
        String what = "agent-" + action.agent() + "/action-" + action.index() + " (" + action.key(action.steps().get(0)) + "): "
            + sum + " effects, meant " + action.steps().size();
        if (options.ignoreKeys() && sum > action.steps().size() && anyHeld) {
          say("second effect on a key held as UNKNOWN and surfaced to the reconciler: " + what);
        } else {
          violations.add(what);
        }
      }
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
      violations.add("reconciler: " + report.missingEffect() + " completed keys without their effect downstream");
    }
    if (report.heldUnresolved() > 0) {
      violations.add("reconciler: " + report.heldUnresolved() + " keys held as UNKNOWN it could not resolve");
    }
    if (report.confirmed() < keys.size()) {
      violations.add("reconciler confirmed " + report.confirmed() + " effects of " + keys.size() + " completed keys");
    }
    return effects.values().stream().mapToLong(Integer::longValue).sum();
  }

  /** Entries the ledger still has as PENDING or UNKNOWN, asked over the processor's HTTP API. */
  private List<String> unsettled(List<String> keys, int port) {
    Semaphore window = new Semaphore(64);
    List<String> stuck = java.util.Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<?>> asks = new ArrayList<>();
    for (String key : keys) {
      window.acquireUninterruptibly();
      asks.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/keys/" + ChaosWorkload.TENANT
              + "/" + key)).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString())
          .whenComplete((response, error) -> {
            window.release();
            if (error != null) {
              stuck.add(key + ": not asked (" + error + ")");
            } else if (response.body().contains("\"state\":\"PENDING\"") || response.body().contains("\"state\":\"UNKNOWN\"")) {
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
    Map<String, Long> counts = new java.util.HashMap<>();
    try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
        new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp)) && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          counts.merge(String.valueOf(record.key()), 1L, Long::sum);
        }
      }
    }
    return counts;
  }

  /** Keys the ledger held as UNKNOWN at some point, from tool-audit. */
  private static Set<String> heldKeys(Properties kafka, String registry) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Set<String> held = new HashSet<>();
    try (KafkaConsumer<String, AuditEvent> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), AuditEvent.class))) {
      List<TopicPartition> partitions = consumer.partitionsFor("tool-audit").stream()
          .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp)) && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, AuditEvent> record : consumer.poll(Duration.ofMillis(500))) {
          if (record.value() != null && record.value().getType() == AuditType.HELD_UNKNOWN) {
            held.add(record.value().getIdempotencyKey());
          }
        }
      }
    }
    return held;
  }

  private static ToolReport sum(List<ToolReport> passes, ToolReport last) {
    ToolReport total = last;
    synchronized (passes) {
      for (ToolReport p : passes) {
        total = new ToolReport(total.confirmed() + p.confirmed(), total.missingEffect() + p.missingEffect(),
            total.heldFoundEffect() + p.heldFoundEffect(), total.heldNoEffect() + p.heldNoEffect(),
            p.heldUnresolved() > 0 ? total.heldUnresolved() : total.heldUnresolved(), total.effectWithoutEntry() + p.effectWithoutEntry());
      }
    }
    return total; // unresolved holds count from the last pass only: earlier ones may have been resolved since
  }

  /**
   * Waits until nothing moves: the committed offsets of the ledger and the executors and the end
   * offsets of the topics they read are the same in two readings 3 s apart. (Lag never reaches 0
   * under transactions: the last commit marker sits after the committed position.)
   */
  private void awaitQuiescence(Properties kafka) throws Exception {
    try (Admin admin = Admin.create(kafka)) {
      Map<TopicPartition, Long> previous = Map.of();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (System.nanoTime() < deadline) {
        Thread.sleep(3000); // between readings
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
    Map<TopicPartition, Long> positions = new java.util.HashMap<>();
    Map<TopicPartition, OffsetSpec> latest = new java.util.HashMap<>();
    for (String group : List.of("chaos", "effectledger-executor")) {
      admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS).forEach((tp, o) -> {
        if (o != null) {
          positions.put(new TopicPartition(group + ":" + tp.topic(), tp.partition()), o.offset());
          latest.put(tp, OffsetSpec.latest());
        }
      });
    }
    admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> positions.put(tp, info.offset()));
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
          n += (int) Files.readAllLines(file).stream().filter(l -> l.indexOf('\t') > 0).map(l -> l.substring(0, l.indexOf('\t')))
              .distinct().count();
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

  private void awaitRecovery(int[] ports) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    for (int port : ports) {
      while (System.nanoTime() < deadline && !ready(port)) {
        Thread.sleep(250); // polling readiness
      }
    }
  }

  private boolean ready(int port) {
    try {
      return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private void awaitReady(int port) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (System.nanoTime() < deadline) {
      try {
        if (http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz")).build(),
            HttpResponse.BodyHandlers.ofString()).statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(500); // polling readiness
    }
    throw new IllegalStateException("processor on port " + port + " not ready after 180 s; see processor-0.log in " + options.dir());
  }

  private static String awaitLine(Process process, Path log, String prefix, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("the process writing " + log + " exited with " + process.exitValue()
            + " before printing '" + prefix + "'; its log says why");
      }
      if (Files.exists(log)) {
        for (String line : Files.readAllLines(log)) {
          if (line.startsWith(prefix)) {
            return line.substring(prefix.length()).trim();
          }
        }
      }
      Thread.sleep(200); // polling the log for the line
    }
    throw new IllegalStateException("no '" + prefix + "' line in " + log + " after " + timeout);
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static void say(String message) {
    System.out.println(message);
    System.out.flush();
  }
}
