package dev.effectledger.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.eclipse.jetty.http2.client.HTTP2Client;
import org.eclipse.jetty.http2.client.transport.HttpClientTransportOverHTTP2;

/**
 * {@code bench/run gateway}: a call through the HTTP gateway against the same call through the Java
 * client, on one ledger and one zero-latency executor (the {@code kafka} connector), at fixed
 * offered loads, side by side (the gateway over HTTP/1.1 and over HTTP/2): each side alone in turn,
 * then the three at once with the calls dealt to them in turn, so that every call meets the machine
 * as the other sides' calls of its moment do and the ratio is the sides' own difference, not the
 * drift between segments measured one after another; then many calls waiting at once on one gateway
 * instance over each protocol, and how soon it lets go of them once their callers die, sent by a
 * separate JVM ({@link WaitingClients}) so that each process holds only its own sockets.
 */
final class GatewayBench {

  private static final String REGISTRY = "mock://gateway-bench";
  static final String TOKEN = "bench-token";
  static final String JAVA = "java client";
  private static final String HTTP_1_1 = "gateway, HTTP/1.1";
  private static final String HTTP_2 = "gateway, HTTP/2";

  /**
   * One side's figures at one load. {@code toDispatch}, {@code toReply}: p50 and p99 ms from the
   * call to its dispatch and to its reply becoming readable (read_committed) on the topic the side
   * reads, as a reader of those topics saw them; the rest of the time is the answer's way from the
   * reply topic to the caller.
   */
  record Side(
      int load,
      String side,
      long sent,
      long answered,
      double p50,
      double p99,
      double p999,
      double[] toDispatch,
      double[] toReply) {}

  record Waiting(
      String protocol,
      int calls,
      long reachedMillis,
      int threadsBefore,
      int threadsDuring,
      int gatewayThreadsDuring,
      long heapBefore,
      long heapDuring,
      long releasedMillis) {}

  private GatewayBench() {}

  static int run(int seconds, int warmup, List<Integer> loads, int waiting, String command)
      throws Exception {
    return run(seconds, warmup, loads, waiting, null, command);
  }

  /**
   * As {@link #run(int, int, List, int, String)}; with {@code fair} set, only the fair-share
   * measurement on the same ledger ({@link FairShareRun}).
   */
  static int run(
      int seconds,
      int warmup,
      List<Integer> loads,
      int waiting,
      FairShareRun.Plan fair,
      String command)
      throws Exception {
    List<Side> sides = new ArrayList<>();
    List<Side> dealt = new ArrayList<>();
    List<Waiting> parked = new ArrayList<>();
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka, "gateway-effects", Topics.dispatch("parked"));
      ToolPolicies policies =
          ToolPolicies.of(
              ToolPolicy.builder("charge_card", ToolClass.WRITE_IDEMPOTENT)
                  .pendingTimeout(Duration.ofMinutes(30))
                  .lane("bench")
                  .connector("kafka")
                  .build()
                  .withSettings(
                      "kafka", new ObjectMapper().readTree("{\"topic\":\"gateway-effects\"}")),
              ToolPolicy.builder("parked_call", ToolClass.WRITE_IDEMPOTENT)
                  .pendingTimeout(Duration.ofMinutes(30))
                  .lane("parked") // no executor consumes it: its calls wait
                  .connector("kafka")
                  .build()
                  .withSettings(
                      "kafka", new ObjectMapper().readTree("{\"topic\":\"gateway-effects\"}")));
      Properties kafkaProps = new Properties();
      kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
      kafkaProps.put(ProducerConfig.LINGER_MS_CONFIG, 0);
      Properties streamsProps = new Properties();
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "gateway-bench");
      streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, Bench.stateDir("gateway-bench").toString());
      streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
      streamsProps.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
      streamsProps.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
      streamsProps.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 0);
      try (KafkaStreams ledger =
              LedgerTopology.streams(
                  LedgerConfig.of(policies, REGISTRY).withIntentPartitions(Bench.PARTITIONS),
                  streamsProps);
          EffectExecutor executor =
              EffectExecutor.start(
                  ExecutorConfig.of(kafkaProps, List.of("bench"), REGISTRY)
                      .withCommitInterval(Duration.ofMillis(100))
                      .withGroupId("gateway-bench-executor"),
                  Connectors.forLanes(policies, List.of("bench"), Clock.systemUTC()),
                  policies)) {
        HttpServer readyz = GatewayCalls.readiness(ledger);
        ledger.start();
        // The gateway's own producer settings (linger.ms 1), as the Java client below has them;
        // kafkaProps' linger.ms 0 is the executor's, which both sides share.
        Properties gatewayKafka = new Properties();
        gatewayKafka.put("bootstrap.servers", kafka.bootstrapServers());
        Function<String, GatewayConfig> gatewayConfig =
            instance ->
                GatewayConfig.of(
                        instance,
                        gatewayKafka,
                        REGISTRY,
                        URI.create("http://127.0.0.1:" + readyz.getAddress().getPort()),
                        policies,
                        Credentials.of(
                            Map.of(
                                Credentials.sha256Hex(TOKEN),
                                new Credentials.Caller("bench", "bench", Set.of()))))
                    .withWaits(Duration.ofSeconds(30), Duration.ofSeconds(300))
                    .withReplyTopic(Bench.PARTITIONS, (short) 1);
        if (fair != null) {
          String report = FairShareRun.measure(gatewayConfig, fair, command);
          readyz.stop(0);
          Bench.writeReport("fair-share", report);
          return 0;
        }
        try (Gateway gateway = Gateway.start(gatewayConfig.apply("bench"));
            ToolCallClient client =
                ToolCallClient.builder()
                    .bootstrapServers(kafka.bootstrapServers())
                    .schemaRegistryUrl(REGISTRY)
                    .producerConfig(ProducerConfig.LINGER_MS_CONFIG, 1)
                    .timeout(Duration.ofSeconds(30))
                    .build()) {
          Bench.say("gateway ready: " + GatewayCalls.awaitReady(gateway));
          HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
          org.eclipse.jetty.client.HttpClient pooled = new org.eclipse.jetty.client.HttpClient();
          pooled.setMaxConnectionsPerDestination(1024);
          pooled.setMaxRequestsQueuedPerDestination(1_000_000);
          pooled.start();
          // HTTP/2 by prior knowledge (h2c): the calls waiting at once are streams on a few
          // connections, not a connection each
          org.eclipse.jetty.client.HttpClient multiplexed =
              new org.eclipse.jetty.client.HttpClient(
                  new HttpClientTransportOverHTTP2(new HTTP2Client()));
          multiplexed.setMaxRequestsQueuedPerDestination(1_000_000);
          multiplexed.start();
          HopReader hops =
              HopReader.start(
                  kafka.bootstrapServers(),
                  REGISTRY,
                  List.of(Topics.dispatch("bench")),
                  List.of(Topics.RESULTS, Topics.RESULTS + ".bench"));
          for (int load : loads) {
            List<String> names = List.of(JAVA, HTTP_1_1, HTTP_2);
            List<Function<String, Function<Long, CompletableFuture<Boolean>>>> calls =
                List.of(
                    run -> i -> GatewayCalls.viaClient(client, run, i),
                    run -> i -> GatewayCalls.viaGateway(pooled, gateway, run, i),
                    run -> i -> GatewayCalls.viaGateway(multiplexed, gateway, run, i));
            // Every side warms (JIT, connections) before any is measured; then each is measured
            // in two halves, in the order client, HTTP/1.1, HTTP/2, HTTP/2, HTTP/1.1, client, so
            // that what drifts over a run (the store growing, the heap, compilation) weighs on
            // all alike.
            Bench.say("warming every side at " + load + " calls/s");
            for (int side = 0; side < names.size(); side++) {
              String run = "w" + side + "-" + load;
              GatewayCalls.pace(load, warmup, List.of(calls.get(side).apply(run)), null, hops, run);
            }
            List<Tally> tallies = List.of(new Tally(), new Tally(), new Tally());
            int half = Math.max(1, seconds / 2);
            int[] order = {0, 1, 2, 2, 1, 0};
            for (int segment = 0; segment < order.length; segment++) {
              int side = order[segment];
              String run = "s" + side + "-" + load + "-" + segment;
              Bench.say(names.get(side) + " at " + load + " calls/s, " + half + " s");
              GatewayCalls.pace(
                  load,
                  half,
                  List.of(calls.get(side).apply(run)),
                  List.of(tallies.get(side)),
                  hops,
                  run);
            }
            for (int side = 0; side < names.size(); side++) {
              sides.add(tallies.get(side).side(load, names.get(side)));
            }
            // Then the three at once, the calls dealt to them in turn at the same total load: each
            // call meets the ledger, the broker and the machine as the others of its moment do,
            // so what differs between the sides is their own way to and from Kafka, not the drift
            // between segments measured one after another.
            String dealtRun = "d-" + load;
            List<Tally> dealtTallies = List.of(new Tally(), new Tally(), new Tally());
            Bench.say(
                "all sides at once, calls dealt in turn, at "
                    + load
                    + " calls/s, "
                    + 2 * half
                    + " s");
            GatewayCalls.pace(
                load,
                2 * half,
                calls.stream().map(c -> c.apply(dealtRun)).toList(),
                dealtTallies,
                hops,
                dealtRun);
            for (int side = 0; side < names.size(); side++) {
              dealt.add(dealtTallies.get(side).side(load, names.get(side)));
            }
            Bench.say(
                "gateway's own wait metric (warm-up included): "
                    + GatewayCalls.serverWaits(http, gateway));
          }
          multiplexed.stop();
          pooled.stop();
          hops.close();
        }
        for (String protocol : List.of("1.1", "2")) {
          if (waiting <= 0) {
            break;
          }
          Bench.say(waiting + " calls waiting at once on one gateway over HTTP/" + protocol);
          // each protocol on a gateway of its own, the measured one closed: neither's heap or
          // threads count another's
          try (Gateway fresh = Gateway.start(gatewayConfig.apply("waiting-h" + protocol))) {
            GatewayCalls.awaitReady(fresh);
            parked.add(waitingCalls(fresh, waiting, protocol));
          } catch (Exception e) {
            Bench.say("the waiting measurement over HTTP/" + protocol + " failed: " + e);
          }
        }
        readyz.stop(0);
      }
    }
    Bench.writeReport(
        "gateway", GatewayReport.render(sides, dealt, parked, warmup, seconds, command));
    return 0;
  }

  /** The times from call to answer of one side, over its measured segments. */
  static final class Tally {
    final Histogram histogram = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    final Histogram toDispatch = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    final Histogram toReply = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    final AtomicLong sent = new AtomicLong();
    final AtomicLong answered = new AtomicLong();

    /** Records {@code micros} into {@code hop}, which the reader and the callers share. */
    static void hop(Histogram hop, long micros) {
      synchronized (hop) {
        hop.recordValue(Math.min(Math.max(0, micros), hop.getHighestTrackableValue()));
      }
    }

    static double[] quantiles(Histogram hop) {
      synchronized (hop) {
        return new double[] {
          hop.getValueAtPercentile(50) / 1_000.0, hop.getValueAtPercentile(99) / 1_000.0
        };
      }
    }

    void record(long micros) {
      hop(histogram, micros);
      answered.incrementAndGet();
    }

    Side side(int load, String name) {
      return new Side(
          load,
          name,
          sent.get(),
          answered.get(),
          histogram.getValueAtPercentile(50) / 1_000.0,
          histogram.getValueAtPercentile(99) / 1_000.0,
          histogram.getValueAtPercentile(99.9) / 1_000.0,
          quantiles(toDispatch),
          quantiles(toReply));
    }
  }

  private static Waiting waitingCalls(Gateway gateway, int calls, String protocol)
      throws Exception {
    var threads = ManagementFactory.getThreadMXBean();
    var memory = ManagementFactory.getMemoryMXBean();
    System.gc();
    int threadsBefore = threads.getThreadCount();
    long heapBefore = memory.getHeapMemoryUsage().getUsed();
    Process clients =
        new ProcessBuilder(
                Processes.java(),
                "-Xmx1g",
                "-cp",
                System.getProperty("java.class.path"),
                WaitingClients.class.getName(),
                gateway.uri().toString(),
                TOKEN,
                String.valueOf(calls),
                protocol)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.INHERIT)
            .start();
    long started = System.nanoTime();
    long deadline = started + TimeUnit.SECONDS.toNanos(180);
    while (gateway.waitingCalls() < calls && System.nanoTime() < deadline && clients.isAlive()) {
      TimeUnit.MILLISECONDS.sleep(100);
    }
    long reached = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    int waitingNow = gateway.waitingCalls();
    TimeUnit.SECONDS.sleep(2);
    System.gc();
    int threadsDuring = threads.getThreadCount();
    long heapDuring = memory.getHeapMemoryUsage().getUsed();
    int gatewayThreads =
        (int)
            Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("gateway-"))
                .count();
    // The callers go away at once (their process killed): every call they left must stop waiting.
    clients.destroyForcibly();
    clients.waitFor(30, TimeUnit.SECONDS);
    long killed = System.nanoTime();
    long releaseDeadline = killed + TimeUnit.SECONDS.toNanos(60);
    while (gateway.waitingCalls() > 0 && System.nanoTime() < releaseDeadline) {
      TimeUnit.MILLISECONDS.sleep(50);
    }
    long released =
        gateway.waitingCalls() == 0
            ? TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed)
            : -1;
    return new Waiting(
        protocol,
        waitingNow,
        reached,
        threadsBefore,
        threadsDuring,
        gatewayThreads,
        heapBefore,
        heapDuring,
        released);
  }
}
