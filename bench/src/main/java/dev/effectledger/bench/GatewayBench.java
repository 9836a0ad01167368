package dev.effectledger.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
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
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.eclipse.jetty.client.StringRequestContent;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
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
  private static final String TOKEN = "bench-token";
  private static final String JAVA = "java client";
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
        HttpServer readyz = readiness(ledger);
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
        try (Gateway gateway = Gateway.start(gatewayConfig.apply("bench"));
            ToolCallClient client =
                ToolCallClient.builder()
                    .bootstrapServers(kafka.bootstrapServers())
                    .schemaRegistryUrl(REGISTRY)
                    .producerConfig(ProducerConfig.LINGER_MS_CONFIG, 1)
                    .timeout(Duration.ofSeconds(30))
                    .build()) {
          Bench.say("gateway ready: " + awaitReady(gateway));
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
                    run -> i -> viaClient(client, run, i),
                    run -> i -> viaGateway(pooled, gateway, run, i),
                    run -> i -> viaGateway(multiplexed, gateway, run, i));
            // Every side warms (JIT, connections) before any is measured; then each is measured
            // in two halves, in the order client, HTTP/1.1, HTTP/2, HTTP/2, HTTP/1.1, client, so
            // that what drifts over a run (the store growing, the heap, compilation) weighs on
            // all alike.
            Bench.say("warming every side at " + load + " calls/s");
            for (int side = 0; side < names.size(); side++) {
              String run = "w" + side + "-" + load;
              pace(load, warmup, List.of(calls.get(side).apply(run)), null, hops, run);
            }
            List<Tally> tallies = List.of(new Tally(), new Tally(), new Tally());
            int half = Math.max(1, seconds / 2);
            int[] order = {0, 1, 2, 2, 1, 0};
            for (int segment = 0; segment < order.length; segment++) {
              int side = order[segment];
              String run = "s" + side + "-" + load + "-" + segment;
              Bench.say(names.get(side) + " at " + load + " calls/s, " + half + " s");
              pace(
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
            pace(
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
                "gateway's own wait metric (warm-up included): " + serverWaits(http, gateway));
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
            awaitReady(fresh);
            parked.add(waitingCalls(fresh, waiting, protocol));
          } catch (Exception e) {
            Bench.say("the waiting measurement over HTTP/" + protocol + " failed: " + e);
          }
        }
        readyz.stop(0);
      }
    }
    Bench.writeReport("gateway", report(sides, dealt, parked, warmup, seconds, command));
    return 0;
  }

  /** Waits up to 90 s for {@code gateway} to be ready; whether it is. */
  private static boolean awaitReady(Gateway gateway) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (!gateway.isReady() && System.nanoTime() < deadline) {
      TimeUnit.MILLISECONDS.sleep(100);
    }
    return gateway.isReady();
  }

  /** What the gateway probes on the ledger: 200 while Kafka Streams runs. */
  private static HttpServer readiness(KafkaStreams ledger) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/readyz",
        ex -> {
          int status = ledger.state() == KafkaStreams.State.RUNNING ? 200 : 503;
          ex.sendResponseHeaders(status, -1);
          ex.close();
        });
    server.start();
    return server;
  }

  private static CompletableFuture<Boolean> viaClient(ToolCallClient client, String run, long i) {
    return client
        .invoke(
            ToolCall.of(
                new StepContext("bench", run, "step-" + i, ""),
                "charge_card",
                "{\"amount\":" + i + "}"))
        .thenApply(r -> r instanceof CallResult.Succeeded);
  }

  /**
   * A call through the gateway on a pooled keep-alive connection (Jetty's client, as agents' HTTP
   * libraries pool theirs).
   */
  private static CompletableFuture<Boolean> viaGateway(
      org.eclipse.jetty.client.HttpClient http, Gateway gateway, String run, long i) {
    CompletableFuture<Boolean> answered = new CompletableFuture<>();
    http.newRequest(gateway.uri().resolve("/v1/tools/charge_card/calls"))
        .method(HttpMethod.POST)
        .headers(h -> h.put(HttpHeader.AUTHORIZATION, "Bearer " + TOKEN))
        .timeout(60, TimeUnit.SECONDS)
        .body(
            new StringRequestContent(
                "application/json",
                "{\"arguments\":{\"amount\":"
                    + i
                    + "},\"step\":{\"run\":\""
                    + run
                    + "\",\"step\":\"step-"
                    + i
                    + "\"}}"))
        .send(
            result ->
                answered.complete(result.isSucceeded() && result.getResponse().getStatus() == 200));
    return answered;
  }

  /** The gateway's own request-to-answer quantiles, from its /metrics. */
  private static String serverWaits(HttpClient http, Gateway gateway) throws Exception {
    String metrics =
        http.send(
                HttpRequest.newBuilder(gateway.uri().resolve("/metrics")).build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    return metrics
        .lines()
        .filter(l -> l.startsWith("gateway_call_wait_seconds{"))
        .collect(java.util.stream.Collectors.joining("; "));
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

  /**
   * Calls at {@code load}/s for {@code seconds}, call {@code i} through side {@code i % n} of the
   * {@code n} {@code calls}, then waits for their answers; the time from each call to its answer
   * goes to that side's tally (none: a warm-up).
   */
  private static void pace(
      int load,
      int seconds,
      List<Function<Long, CompletableFuture<Boolean>>> calls,
      List<Tally> tallies,
      HopReader hops,
      String run)
      throws Exception {
    List<CompletableFuture<?>> pending = new ArrayList<>();
    long total = (long) load * seconds;
    long start = System.nanoTime();
    for (long i = 0; i < total; i++) {
      long due = start + i * 1_000_000_000L / load;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait); // pacing the offered load
      }
      int side = (int) (i % calls.size());
      Tally tally = tallies == null ? null : tallies.get(side);
      long sentAt = System.nanoTime();
      if (tally != null) {
        tally.sent.incrementAndGet();
        hops.sent(run + "/step-" + i, sentAt, tally);
      }
      pending.add(
          calls
              .get(side)
              .apply(i)
              .whenComplete(
                  (ok, error) -> {
                    if (tally != null && error == null && Boolean.TRUE.equals(ok)) {
                      tally.record((System.nanoTime() - sentAt) / 1_000);
                    }
                  }));
    }
    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
        .exceptionally(e -> null)
        .get(60, TimeUnit.SECONDS);
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

  private static String report(
      List<Side> sides,
      List<Side> dealt,
      List<Waiting> waiting,
      int warmup,
      int seconds,
      String command) {
    StringBuilder md = new StringBuilder();
    md.append("# Gateway: HTTP against the Java client\n\n")
        .append("`")
        .append(command)
        .append("`, ")
        .append(java.time.LocalDate.now())
        .append(". One embedded broker, the ledger (2 stream threads, `exactly_once_v2`, commit")
        .append(" interval 100 ms) and one executor with the `kafka` connector (no I/O), one")
        .append(" gateway instance; every call a new key. At each load both sides first run ")
        .append(warmup)
        .append(" s of warm-up (not measured), then each side is measured for ")
        .append(Math.max(1, seconds / 2) * 2)
        .append(
            " s in two halves, in the order client, gateway over HTTP/1.1, gateway over HTTP/2,")
        .append(" HTTP/2, HTTP/1.1, client, each half's calls answered before the next begins.")
        .append(" HTTP/1.1: Jetty's client, pooled keep-alive connections (up to 1,024), one per")
        .append(" waiting call; HTTP/2: Jetty's client, h2c by prior knowledge, the waiting calls")
        .append(" streams on a few connections. The time is from sending the call to")
        .append(" its answer (the client's `CallResult`, the gateway's HTTP 200). All sides run")
        .append(" in this JVM, on the same cores as the broker, the ledger and the executor.\n\n")
        .append("| calls/s | side | sent | answered | p50 ms | p99 ms | p99.9 ms |\n")
        .append("| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (Side s : sides) {
      md.append(
          String.format(
              "| %,d | %s | %,d | %,d | %.1f | %.1f | %.1f |%n",
              s.load(), s.side(), s.sent(), s.answered(), s.p50(), s.p99(), s.p999()));
    }
    md.append("\nWhere the time goes, p50 / p99 ms from the call (a read_committed reader of the")
        .append(" dispatch topic and both reply topics, beside the callers):\n\n")
        .append("| calls/s | side | to the committed dispatch | to the committed reply |")
        .append(" to the answer |\n| ---: | --- | --- | --- | --- |\n");
    for (Side s : sides) {
      md.append(
          String.format(
              "| %,d | %s | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |%n",
              s.load(),
              s.side(),
              s.toDispatch()[0],
              s.toDispatch()[1],
              s.toReply()[0],
              s.toReply()[1],
              s.p50(),
              s.p99()));
    }
    md.append("\nThen the three sides at once for ")
        .append(Math.max(1, seconds / 2) * 2)
        .append(" s, the calls dealt to them in turn (call i through side i mod 3) at the same")
        .append(" total load, so each side carries a third of it and every call meets the ledger")
        .append(" and the machine as the calls of the other sides at that moment do:\n\n")
        .append("| calls/s (all sides) | side | sent | answered | p50 ms | p99 ms | p99.9 ms |")
        .append(" to the committed dispatch | to the committed reply |\n")
        .append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
    for (Side s : dealt) {
      md.append(
          String.format(
              "| %,d | %s | %,d | %,d | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f |%n",
              s.load(),
              s.side(),
              s.sent(),
              s.answered(),
              s.p50(),
              s.p99(),
              s.p999(),
              s.toDispatch()[0],
              s.toDispatch()[1],
              s.toReply()[0],
              s.toReply()[1]));
    }
    md.append("\n| calls/s | gateway | gateway p99 / client p99: each side alone, in turn |")
        .append(" at once, calls dealt in turn | target |\n")
        .append("| ---: | --- | ---: | ---: | --- |\n");
    for (Side gateway : sides) {
      if (gateway.side().equals(JAVA)) {
        continue;
      }
      double alone = gateway.p99() / same(sides, gateway.load(), JAVA).p99();
      double atOnce =
          same(dealt, gateway.load(), gateway.side()).p99()
              / same(dealt, gateway.load(), JAVA).p99();
      md.append(
          String.format(
              "| %,d | %s | %.2f | %.2f | <= 1.15: %s alone, %s at once |%n",
              gateway.load(),
              gateway.side().substring("gateway, ".length()),
              alone,
              atOnce,
              alone <= 1.15 ? "met" : "**missed**",
              atOnce <= 1.15 ? "met" : "**missed**"));
    }
    md.append("\n## Calls waiting at once on one gateway\n\n")
        .append("A separate JVM sends the calls to a tool whose lane no executor consumes, with")
        .append(" `Prefer: wait=300`, so every call waits: over HTTP/1.1 (the JDK's client, one")
        .append(
            " connection per call), then over HTTP/2 (Jetty's client, h2c, the calls as streams")
        .append(" on a few connections). Threads and heap are this JVM's (the gateway, the ledger,")
        .append(
            " the executor and the broker), after a GC. Then the callers' process is killed and")
        .append(" the gateway must let go of every call it left.\n\n");
    if (waiting.isEmpty()) {
      return md.append("Not measured (`--waiting 0`, or the measurement failed: see the run's")
          .append(" output).\n")
          .toString();
    }
    md.append("| measure |");
    waiting.forEach(w -> md.append(" HTTP/").append(w.protocol()).append(" |"));
    md.append("\n| --- |");
    waiting.forEach(w -> md.append(" ---: |"));
    md.append('\n');
    row(md, "calls waiting", waiting, w -> String.format("%,d", w.calls()));
    row(md, "time until all waited", waiting, w -> String.format("%,d ms", w.reachedMillis()));
    row(
        md,
        "JVM threads before / while waiting",
        waiting,
        w -> w.threadsBefore() + " / " + w.threadsDuring());
    row(
        md,
        "gateway threads while waiting (`gateway-*`)",
        waiting,
        w -> String.valueOf(w.gatewayThreadsDuring()));
    row(
        md,
        "heap used before / while waiting",
        waiting,
        w -> String.format("%,d / %,d KiB", w.heapBefore() / 1024, w.heapDuring() / 1024));
    row(
        md,
        "heap per waiting call",
        waiting,
        w ->
            String.format(
                "%,d bytes", w.calls() == 0 ? 0 : (w.heapDuring() - w.heapBefore()) / w.calls()));
    row(
        md,
        "callers killed: until no call waits",
        waiting,
        w ->
            w.releasedMillis() < 0
                ? "**calls still waiting after 60 s**"
                : String.format("%,d ms", w.releasedMillis()));
    return md.toString();
  }

  /** The side named {@code name} at {@code load}. */
  private static Side same(List<Side> sides, int load, String name) {
    return sides.stream()
        .filter(s -> s.load() == load && s.side().equals(name))
        .findFirst()
        .orElseThrow();
  }

  private static void row(
      StringBuilder md, String measure, List<Waiting> waiting, Function<Waiting, String> value) {
    md.append("| ").append(measure).append(" |");
    waiting.forEach(w -> md.append(' ').append(value.apply(w)).append(" |"));
    md.append('\n');
  }
}
