package dev.effectledger.bench;

import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.utils.Utils;

/**
 * {@code bench/run failover}: the time from kill -9 of an executor, or of a processor, to every
 * partition answering again, each part its own OS process against a broker process that stays up.
 *
 * <p>A probe calls the tool at a steady rate with new keys spread over every partition and notes,
 * per call, when it was sent and when its final reply came. After a kill at T, a partition has
 * resumed at the first final reply to a call of that partition sent after T; the figure is the
 * latest partition's. Each scenario runs on its own fresh deployment and kills its victim several
 * times, as a crash loop would.
 */
final class FailoverBench {

  private static final String TOOL = "charge_card";

  /**
   * A standby within this many changelog records of its changelog is warm: a few seconds of the
   * probe's calls (two ledger changelog records a call at its 50 a second).
   */
  static final long WARM_LAG = 500;

  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss");

  /**
   * One deployment and what is done to it: kill the executor or the processor; restart it at once
   * (a supervisor) or let a second instance take over; with or without a stable instance id.
   */
  record Scenario(
      String name,
      boolean killProcessor,
      boolean restart,
      boolean stableIds,
      String sessionTimeoutMs,
      String processorSettings) {

    Scenario(
        String name,
        boolean killProcessor,
        boolean restart,
        boolean stableIds,
        String sessionTimeoutMs) {
      this(name, killProcessor, restart, stableIds, sessionTimeoutMs, "");
    }
  }

  static final List<Scenario> SCENARIOS =
      List.of(
          new Scenario("executor restarted, executor.instance.id set", false, true, true, null),
          new Scenario(
              "executor restarted, no instance id (the shipped file: identity kept in"
                  + " executor.state.dir)",
              false,
              true,
              false,
              null),
          new Scenario(
              "executor not restarted, a second executor takes over (session.timeout.ms=10000)",
              false,
              false,
              true,
              "10000"),
          new Scenario(
              "executor not restarted, a second executor takes over (session.timeout.ms=6000)",
              false,
              false,
              true,
              "6000"),
          new Scenario(
              "processor restarted on its state, group.instance.id set,"
                  + " enable.transactional.statestores=false",
              true,
              true,
              true,
              null,
              "enable.transactional.statestores=false\n"),
          new Scenario(
              "processor restarted on its state, no instance id (the shipped file: identity kept"
                  + " in state.dir)",
              true,
              true,
              false,
              null),
          new Scenario(
              "processor restarted on its state, group.instance.id set,"
                  + " enable.transactional.statestores=true",
              true,
              true,
              true,
              null,
              "enable.transactional.statestores=true\n"),
          // Kafka 4.4's Streams rebalance protocol (KIP-1071), static membership included.
          new Scenario(
              "processor restarted on its state, group.instance.id set, group.protocol=streams",
              true,
              true,
              true,
              null,
              "group.protocol=streams\n"),
          // Two processors, each active for half the tasks and the standby of the other half; the
          // one killed is not restarted until the other has taken its tasks over. A takeover waits
          // for the killed member's session.timeout.ms, which docs/operations.md says to size to
          // how long to wait for an instance gone for good: 10 s here, Kafka's default is 45 s.
          new Scenario(
              "processor not restarted, the other takes over from its standbys"
                  + " (num.standby.replicas=1, session.timeout.ms=10000),"
                  + " enable.transactional.statestores=false",
              true,
              false,
              true,
              "10000",
              "num.standby.replicas=1\nenable.transactional.statestores=false\n"),
          new Scenario(
              "processor not restarted, the other takes over from its standbys"
                  + " (num.standby.replicas=1, session.timeout.ms=10000),"
                  + " enable.transactional.statestores=true",
              true,
              false,
              true,
              "10000",
              "num.standby.replicas=1\nenable.transactional.statestores=true\n"));

  /** One kill: seconds until the latest partition answered again, and the calls that waited. */
  record Kill(double resumeSeconds, int partitionsResumed, int partitions) {}

  private FailoverBench() {}

  static int run(
      int kills, int partitions, int rate, long entries, List<String> only, String command)
      throws Exception {
    Map<Scenario, List<Kill>> results = new LinkedHashMap<>();
    for (Scenario scenario : SCENARIOS) {
      if (!only.isEmpty() && only.stream().noneMatch(o -> scenario.name().startsWith(o))) {
        continue;
      }
      Bench.say("failover: " + scenario.name());
      results.put(scenario, runScenario(scenario, kills, partitions, rate, entries));
    }
    report(
        results,
        kills,
        partitions,
        rate,
        entries,
        command,
        only.isEmpty() ? "failover" : "failover-partial");
    return 0;
  }

  private static List<Kill> runScenario(
      Scenario scenario, int kills, int partitions, int rate, long entries) throws Exception {
    Path dir =
        Path.of("bench", "target", "failover-" + LocalDateTime.now().format(STAMP))
            .toAbsolutePath();
    try (Processes processes = new Processes(dir)) {
      int registryPort = Processes.freePort();
      String bootstrap =
          processes
              .jar("broker", "1g", "broker", "--registry-port", Integer.toString(registryPort))
              .start()
              .awaitLine("bootstrap.servers=", Duration.ofSeconds(120));
      String registry = "http://127.0.0.1:" + registryPort;
      int downstreamPort = Processes.freePort();
      processes
          .jar("downstream", "256m", "downstream", "--port", Integer.toString(downstreamPort))
          .start();
      Files.writeString(
          dir.resolve("tools.yaml"),
          """
          tools:
            charge_card:
              class: irreversible
              pendingTimeout: 10m
              lane: payments
              connector: http
              settings: {url: "http://127.0.0.1:%d/charges", timeout: 5s, honoursKeys: true, effectIdPointer: /id}
          """
              .formatted(downstreamPort));
      String common =
          "bootstrap.servers="
              + bootstrap
              + "\nschema.registry.url="
              + registry
              + "\ntools.file=tools.yaml\n"
              + (scenario.sessionTimeoutMs() == null
                  ? ""
                  : "session.timeout.ms=" + scenario.sessionTimeoutMs() + "\n");
      if (entries > 0) {
        LedgerPreload.write(bootstrap, "failover", partitions, entries);
      }
      // A large store is restored from its changelog on the first start, and again by every
      // restart that replays it: the waits grow with it.
      Duration startLimit = Duration.ofSeconds(180 + entries / 20_000);
      List<Processes.Node> processors = new ArrayList<>();
      List<Integer> httpPorts = new ArrayList<>();
      for (int i = 0; i < (scenario.killProcessor() && !scenario.restart() ? 2 : 1); i++) {
        int httpPort = Processes.freePort();
        httpPorts.add(httpPort);
        Files.writeString(
            dir.resolve("processor-" + i + ".properties"),
            common
                + "application.id=failover\nstate.dir="
                + dir.resolve("state-" + i)
                + "\nhttp.port="
                + httpPort
                + "\ntopics.create=true\ntopics.partitions="
                + partitions
                + "\ntopics.replication=1\nreplication.factor=1\n"
                + (scenario.stableIds() ? "group.instance.id=processor-" + i + "\n" : "")
                + scenario.processorSettings());
        processors.add(
            processes
                .jar(
                    "processor-" + i,
                    "512m",
                    "processor",
                    "--config",
                    "processor-" + i + ".properties")
                .start());
      }
      for (int port : httpPorts) {
        Processes.awaitReady(port, startLimit);
      }
      List<Processes.Node> executors = new ArrayList<>();
      // A second executor only where an executor is killed and another takes over.
      for (int i = 0; i < (!scenario.killProcessor() && !scenario.restart() ? 2 : 1); i++) {
        Files.writeString(
            dir.resolve("executor-" + i + ".properties"),
            common + (scenario.stableIds() ? "executor.instance.id=executor-" + i + "\n" : ""));
        executors.add(
            processes
                .jar(
                    "executor-" + i,
                    "384m",
                    "executor",
                    "--config",
                    "executor-" + i + ".properties",
                    "--lanes",
                    "payments")
                .start());
      }
      try (Probe probe = new Probe(bootstrap, registry, partitions, rate)) {
        probe.awaitAllAnswering(startLimit);
        probe.settle(Duration.ofSeconds(10));
        List<Kill> measured = new ArrayList<>();
        for (int k = 0; k < kills; k++) {
          // With two processors each is active for some tasks; they take turns as the victim.
          Processes.Node victim =
              scenario.killProcessor() ? processors.get(k % processors.size()) : executors.get(0);
          long killedAt = System.nanoTime();
          victim.kill();
          if (scenario.restart()) {
            victim.restart();
          }
          Kill kill = probe.resumeAfter(killedAt, startLimit);
          Bench.say(
              String.format(
                  "failover: kill %d of %s: every partition answering again after %.1f s (%d of %d partitions)",
                  k + 1,
                  victim.name(),
                  kill.resumeSeconds(),
                  kill.partitionsResumed(),
                  kill.partitions()));
          measured.add(kill);
          if (!scenario.restart()) {
            victim.restart(); // back as the standby of the next kill
            // The one back restores what it lost before it is a warm standby again: the next
            // kill waits for every processor's standbys to be within WARM_LAG records.
            Duration warm = awaitWarmStandbys(httpPorts, startLimit);
            Bench.say(
                String.format(
                    "failover: standbys warm %.1f s after the restart", warm.toMillis() / 1000.0));
          }
          probe.settle(Duration.ofSeconds(15));
        }
        return measured;
      }
    }
  }

  /**
   * Waits until every processor on {@code ports} is ready, every active store partition among them
   * has a standby (their standby partitions add up to their active ones, with {@code
   * num.standby.replicas=1}) and each processor's standbys are at most {@link #WARM_LAG} changelog
   * records behind (from their {@code /metrics}); returns how long that took, throws after {@code
   * limit}. Not "every processor holds standbys": after a restart Kafka Streams' assignor may leave
   * every active task on the survivor and every standby on the restarted one until its next probing
   * rebalance (seen: the survivor held none for the 3 minutes waited).
   */
  private static Duration awaitWarmStandbys(List<Integer> ports, Duration limit)
      throws InterruptedException {
    long start = System.nanoTime();
    long deadline = start + limit.toNanos();
    while (true) {
      List<Standbys> readings = new ArrayList<>();
      for (int port : ports) {
        readings.add(
            new Standbys(
                port,
                Processes.ready(port),
                Processes.metric(port, "effectledger_store_partitions{role=\"active\"}"),
                Processes.metric(port, "effectledger_store_partitions{role=\"standby\"}"),
                Processes.metric(port, "effectledger_store_lag_records{role=\"standby\"}")));
      }
      if (warm(readings)) {
        return Duration.ofNanos(System.nanoTime() - start);
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "standbys not in place within "
                + WARM_LAG
                + " records of their changelogs after "
                + limit
                + ":"
                + readings);
      }
      Thread.sleep(500); // polling the processors' metrics
    }
  }

  /** One processor's standbys as its {@code /metrics} told (NaN: it could not tell). */
  record Standbys(int port, boolean ready, double active, double standby, double lag) {
    @Override
    public String toString() {
      return String.format(
          " [%d: %.0f active, %.0f standby, lag %.0f%s]",
          port, active, standby, lag, ready ? "" : ", not ready");
    }
  }

  /**
   * Whether every processor is ready, every active store partition among them has a standby and
   * each one's standby lag is within {@link #WARM_LAG} (NaN compares false: not warm).
   */
  static boolean warm(List<Standbys> processors) {
    double active = 0;
    double standby = 0;
    for (Standbys p : processors) {
      if (!p.ready() || !(p.lag() <= WARM_LAG)) {
        return false;
      }
      active += p.active();
      standby += p.standby();
    }
    return active > 0 && standby >= active;
  }

  /**
   * Calls the tool at a steady rate with new keys and keeps, per partition, when calls sent after a
   * moment were answered.
   */
  private static final class Probe implements AutoCloseable {
    private final ToolCallClient client;
    private final int partitions;
    private final Thread sender;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong sequence = new AtomicLong();

    /** Per partition: send and answer times (System.nanoTime) of answered calls. */
    private final Map<Integer, List<long[]>> answered = new ConcurrentHashMap<>();

    Probe(String bootstrap, String registry, int partitions, int rate) {
      this.partitions = partitions;
      this.client =
          ToolCallClient.builder()
              .bootstrapServers(bootstrap)
              .schemaRegistryUrl(registry)
              .timeout(Duration.ofMinutes(5))
              .build();
      long intervalNanos = TimeUnit.SECONDS.toNanos(1) / rate;
      this.sender =
          new Thread(
              () -> {
                long next = System.nanoTime();
                while (running.get()) {
                  send();
                  next += intervalNanos;
                  long wait = next - System.nanoTime();
                  if (wait > 0) {
                    LockSupport.parkNanos(wait); // pacing the offered load
                  }
                }
              },
              "failover-probe");
      sender.setDaemon(true);
      sender.start();
    }

    private void send() {
      long n = sequence.incrementAndGet();
      ToolCall call =
          ToolCall.of(
              new StepContext("acme", "failover-run", "step-" + n, "probe"),
              TOOL,
              "{\"n\":" + n + "}");
      int partition =
          Utils.toPositive(Utils.murmur2(client.keyOf(call).key().getBytes(StandardCharsets.UTF_8)))
              % partitions;
      long sentAt = System.nanoTime();
      client
          .invoke(call)
          .whenComplete(
              (result, error) -> {
                if (error == null && result instanceof CallResult.Succeeded) {
                  answered
                      .computeIfAbsent(
                          partition, p -> Collections.synchronizedList(new ArrayList<>()))
                      .add(new long[] {sentAt, System.nanoTime()});
                }
              });
    }

    /** Per partition, the first answer to a call sent at or after {@code since}, or -1. */
    private long[] firstAnswersAfter(long since) {
      long[] first = new long[partitions];
      Arrays.fill(first, -1);
      answered.forEach(
          (p, calls) -> {
            synchronized (calls) {
              for (long[] c : calls) {
                if (c[0] >= since && (first[p] < 0 || c[1] < first[p])) {
                  first[p] = c[1];
                }
              }
            }
          });
      return first;
    }

    void awaitAllAnswering(Duration limit) throws InterruptedException {
      Kill warm = resumeAfter(System.nanoTime(), limit);
      if (warm.partitionsResumed() < partitions) {
        throw new IllegalStateException(
            "only "
                + warm.partitionsResumed()
                + " of "
                + partitions
                + " partitions answered within "
                + limit
                + "; see the processes' logs");
      }
    }

    void settle(Duration time) throws InterruptedException {
      Thread.sleep(time.toMillis()); // letting the deployment run undisturbed between kills
    }

    Kill resumeAfter(long killedAt, Duration limit) throws InterruptedException {
      long deadline = System.nanoTime() + limit.toNanos();
      while (true) {
        long[] first = firstAnswersAfter(killedAt);
        long resumed = Arrays.stream(first).filter(t -> t >= 0).count();
        if (resumed == partitions || System.nanoTime() > deadline) {
          long latest = Arrays.stream(first).max().orElse(-1);
          double seconds =
              resumed == partitions ? (latest - killedAt) / 1e9 : limit.toMillis() / 1e3;
          return new Kill(seconds, (int) resumed, partitions);
        }
        Thread.sleep(50); // polling the answers
      }
    }

    @Override
    public void close() throws InterruptedException {
      running.set(false);
      sender.join(5_000);
      client.close();
    }
  }

  private static void report(
      Map<Scenario, List<Kill>> results,
      int kills,
      int partitions,
      int rate,
      long entries,
      String command,
      String name)
      throws IOException {
    StringBuilder md = new StringBuilder();
    md.append("# Failover, ")
        .append(LocalDate.now())
        .append("\n\nCommand: `")
        .append(command)
        .append("`\n\n")
        .append(Bench.machine())
        .append("\n\n")
        .append(
            "Each scenario: a fresh deployment (one broker and the Schema Registry in one process that stays up, the"
                + " payment API, one processor, one executor or two), each part its own OS process; a probe calls the tool ")
        .append(rate)
        .append(" times a second with new keys over ")
        .append(partitions)
        .append(" partitions. ")
        .append(
            entries > 0
                ? String.format(
                    "Before the first start the ledger's changelog is loaded with %,d settled"
                        + " entries (the processors restore them, so each starts with a store of"
                        + " that size). ",
                    entries)
                : "The store holds only the probe's entries. ")
        .append("The victim is killed" + " with -9 ")
        .append(kills)
        .append(
            " times, 15 s apart. Resume: from the kill to the first final reply, in the"
                + " partition that took longest, to a call sent after the kill. Kafka client defaults otherwise (session.timeout.ms"
                + " 45 s, the executor's transaction.timeout.ms 10 s, Kafka Streams' 10 s under exactly_once_v2).\n\n")
        .append(
            "| scenario | resume after each kill (s) | median (s) | max (s) |\n| --- | --- | ---: | ---: |\n");
    results.forEach(
        (scenario, measured) -> {
          List<Double> seconds = measured.stream().map(Kill::resumeSeconds).sorted().toList();
          md.append("| ")
              .append(scenario.name())
              .append(" | ")
              .append(
                  String.join(
                      ", ",
                      measured.stream()
                          .map(
                              k ->
                                  String.format(
                                      "%.1f%s",
                                      k.resumeSeconds(),
                                      k.partitionsResumed() < k.partitions()
                                          ? " (not all partitions)"
                                          : ""))
                          .toList()))
              .append(
                  String.format(
                      " | %.1f | %.1f |%n",
                      seconds.get(seconds.size() / 2), seconds.get(seconds.size() - 1)));
        });
    Bench.writeReport(name, md);
  }
}
