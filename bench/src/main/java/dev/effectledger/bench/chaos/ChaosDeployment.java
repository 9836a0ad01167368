package dev.effectledger.bench.chaos;

import dev.effectledger.bench.Processes;
import dev.effectledger.bench.Processes.Node;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * The processes of a chaos run, started: Kafka (three brokers under one control process, or one
 * broker with its data on disk beside a registry process), the payment API, the processors and the
 * executors, with their configuration files written into the run's directory.
 *
 * @param cluster the three-broker process or the single broker
 * @param brokerControl the three-broker process's stdin (stop N / start N); null for one broker
 * @param ports the processors' HTTP ports, in order
 */
record ChaosDeployment(
    ChaosRun.Options options,
    Node cluster,
    OutputStream brokerControl,
    String bootstrap,
    String registry,
    int downstreamPort,
    List<Node> processors,
    List<Node> executors,
    int[] ports) {

  /** How long every processor may take to answer /readyz again after a fault. */
  static final Duration RECOVERY_LIMIT = Duration.ofSeconds(180);

  /**
   * How many times a broker's transaction coordinator skipped the markers of a transaction on
   * partitions whose leader it could not find (it takes them for deleted topics), as the brokers'
   * logs say: each leaves that transaction's records there pending, to take the fate of the
   * producer's next transaction on the partition. The case behind the double effect of 2026-11-26
   * (docs/chaos.md); a run that reports none did not exercise it.
   */
  long skippedMarkers() {
    try (var lines = Files.lines(cluster.log(), StandardCharsets.UTF_8)) {
      return lines.filter(l -> l.contains("hence can be skipped")).count();
    } catch (IOException | UncheckedIOException e) {
      ChaosRun.say("could not read " + cluster.log() + ": " + e.getMessage());
      return 0;
    }
  }

  /** Starts every process of the deployment and waits until the first processor is ready. */
  static ChaosDeployment start(ChaosRun.Options options, Processes processes) throws Exception {
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
      ChaosRun.say(
          "one broker (data in " + options.dir().resolve("kafka") + ") up at " + bootstrap);
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
      ChaosRun.say("cluster of 3 brokers up at " + bootstrap);
    }
    String registry = "http://127.0.0.1:" + registryPort;
    int downstreamPort = Processes.freePort();
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
            pendingTimeout: %3$ds
            lane: payments
            connector: http
            retry: {maxAttempts: 10, base: 100ms, cap: 2s}
            key: {ignore: [/reason], require: [/amount, /to]}
            settings: {url: "%1$s", timeout: 2s, honoursKeys: %2$s, effectIdPointer: /id, lookupUrl: "%1$s?key={key}"}
        """
            .formatted(url, !options.ignoreKeys(), options.timing().pendingTimeout().toSeconds()));
    // As the shipped files: no instance ids (a restart takes back the identity kept in the state
    // directory), Kafka's own session timeouts.
    String common =
        String.join(
            "\n",
            "bootstrap.servers=" + bootstrap,
            "schema.registry.url=" + registry,
            "tools.file=tools.yaml");
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
                  // The first with Kafka Streams' record cache, the others without (the
                  // default): both configurations in every run, tasks moving between them.
                  "ledger.store.caching=" + (i == 0))
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
              // The first commits only every executor.commit.interval.ms (100 ms), the others
              // also each finished burst at once (the default): a kill between an effect and its
              // commit stays as likely as before early commits in every run.
              + (i == 0 ? "\nexecutor.commit.min.interval.ms=100" : "")
              + "\n");
      executors.add(
          processes.jar(
              "executor-" + i,
              "384m",
              "executor",
              "--config",
              "executor-" + i + ".properties",
              "--lanes",
              ChaosRun.PAYMENTS));
    }
    processors.get(0).start();
    Processes.awaitReady(ports[0], Duration.ofSeconds(180));
    for (Node node : processors.subList(1, processors.size())) {
      node.start();
    }
    for (Node node : executors) {
      node.start();
    }
    ChaosRun.say(
        options.processors() + " processors and " + options.executors() + " executors started");

    return new ChaosDeployment(
        options,
        cluster,
        brokerControl,
        bootstrap,
        registry,
        downstreamPort,
        processors,
        executors,
        ports);
  }

  /** The client settings of the cluster. */
  Properties kafka() {
    Properties kafka = new Properties();
    kafka.put("bootstrap.servers", bootstrap);
    return kafka;
  }

  /**
   * The processes restarted when they exit on their own, as a supervisor would: processors,
   * executors, and a single broker (as its service manager would).
   */
  List<Node> supervised() {
    List<Node> supervised = new ArrayList<>(processors);
    supervised.addAll(executors);
    if (options.singleBroker()) {
      supervised.add(cluster);
    }
    return supervised;
  }

  /**
   * A broker fault: the single broker killed with -9 and started again after 1.5 s, or one of
   * brokers 1 and 2 of three (picked by {@code schedule}) stopped for 4 s.
   */
  void brokerFault(Random schedule) throws IOException, InterruptedException {
    if (options.singleBroker()) {
      cluster.kill();
      Thread.sleep(1500);
      cluster.restart();
      return;
    }
    int broker = 1 + schedule.nextInt(2);
    brokerControl.write(("stop " + broker + "\n").getBytes(StandardCharsets.UTF_8));
    brokerControl.flush();
    Thread.sleep(4000);
    brokerControl.write(("start " + broker + "\n").getBytes(StandardCharsets.UTF_8));
    brokerControl.flush();
  }

  /** Restarts processors and executors that exited on their own, as a supervisor would. */
  void superviseExits(AtomicInteger selfExits) throws IOException {
    for (Node node : supervised()) {
      if (!node.killing() && node.process() != null && !node.alive()) {
        ChaosRun.say(
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

  /**
   * Waits until nothing moves: the committed offsets of the ledger and the executors and the end
   * offsets of the topics they read are the same in two readings 3 s apart. (Lag never reaches 0
   * under transactions: the last commit marker sits after the committed position.)
   */
  void awaitQuiescence(AtomicInteger selfExits) throws Exception {
    try (Admin admin = Admin.create(kafka())) {
      Map<TopicPartition, Long> previous = Map.of();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (System.nanoTime() < deadline) {
        Thread.sleep(3000); // between readings
        superviseExits(selfExits);
        Map<TopicPartition, Long> now = positions(admin);
        if (now.equals(previous)) {
          return;
        }
        previous = now;
      }
      ChaosRun.say("still moving after 5 minutes; checking anyway");
    }
  }

  /** The consumer groups of a run: the ledger's (its application id) and the executors'. */
  static final List<String> GROUPS = List.of("chaos", "effectledger-executor");

  /**
   * Each group's committed offsets, keyed by {@code <group>:<topic>} and partition, and the end
   * offsets of the partitions they are on, keyed by the partition itself.
   */
  static Map<TopicPartition, Long> positions(Admin admin) throws Exception {
    Map<TopicPartition, Long> positions = new HashMap<>();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (String group : GROUPS) {
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

  /**
   * Waits until every processor is ready again. A processor still not ready after {@link
   * #RECOVERY_LIMIT} ends the run with the end of its log: the ledger did not come back from a
   * fault, and every later figure would only measure the outage.
   */
  void awaitRecovery(AtomicInteger selfExits, int fault) throws Exception {
    long deadline = System.nanoTime() + RECOVERY_LIMIT.toNanos();
    for (int i = 0; i < ports.length; i++) {
      // The answer of the last poll decides: asking again could catch a processor that is ready
      // but rebalancing once more as another rejoins, which is no failure to recover.
      boolean ready = Processes.ready(ports[i]);
      while (!ready && System.nanoTime() < deadline) {
        superviseExits(selfExits);
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
  static List<String> tail(Path log, int count) throws IOException {
    List<String> lines =
        Files.readAllLines(log, StandardCharsets.UTF_8).stream()
            .filter(line -> !line.startsWith("\tat ") && !line.startsWith("\t... "))
            .toList();
    return lines.subList(Math.max(0, lines.size() - count), lines.size());
  }
}
