package dev.effectledger.bench;

import com.sun.net.httpserver.HttpServer;
import dev.effectledger.app.Tracing;
import dev.effectledger.bench.Bench.Run;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.embedded.JdkHttpServers;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.streams.StreamsConfig;

/**
 * {@code bench/run throughput --tracing}: the ledger's throughput (exactly_once_v2, one embedded
 * broker) with tracing off, on with 1% of traces sampled and on with all of them, the three in turn
 * in every round, as a processor runs with those {@code OTEL_*} variables ({@link Tracing}): the
 * SDK's batch processor exporting over OTLP/HTTP, here to a receiver in this process that reads and
 * drops what it gets. Reported per round as each mode's intents a second over tracing off's.
 */
final class TracingBench {

  private TracingBench() {}

  /** A way of running the ledger: its name and the variables the process is given. */
  record Mode(String name, Map<String, String> env) {}

  static List<Mode> modes(String endpoint) {
    return List.of(
        new Mode("off", Map.of()),
        new Mode(
            "1%",
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", endpoint,
                "OTEL_TRACES_SAMPLER", "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG", "0.01")),
        new Mode(
            "100%",
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                endpoint,
                "OTEL_TRACES_SAMPLER",
                "parentbased_always_on")));
  }

  static int run(int intents, int repeats) throws Exception {
    AtomicLong exports = new AtomicLong();
    AtomicLong bytes = new AtomicLong();
    HttpServer sink = sink(exports, bytes);
    String endpoint = "http://127.0.0.1:" + sink.getAddress().getPort();
    Bench.say("starting an embedded broker");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka);
      int distinct = Bench.produce(kafka.bootstrapServers(), intents).distinct();
      Bench.say("produced " + intents + " intents (" + distinct + " distinct keys)");
      Bench.say("warm-up round, not counted: each mode once");
      for (Mode mode : modes(endpoint)) {
        measure(kafka, mode, "warm-up", intents);
      }
      Map<String, List<Run>> runs = new LinkedHashMap<>();
      Map<String, long[]> exported = new LinkedHashMap<>();
      for (int round = 1; round <= repeats; round++) {
        for (Mode mode : modes(endpoint)) {
          long exportsBefore = exports.get();
          long bytesBefore = bytes.get();
          Run run = measure(kafka, mode, Integer.toString(round), intents);
          runs.computeIfAbsent(mode.name(), m -> new ArrayList<>()).add(run);
          long[] sent = exported.computeIfAbsent(mode.name(), m -> new long[2]);
          sent[0] += exports.get() - exportsBefore;
          sent[1] += bytes.get() - bytesBefore;
          Bench.say(
              String.format(
                  Locale.ROOT,
                  "round %d, tracing %s: %.0f intents/s",
                  round,
                  mode.name(),
                  run.perSecond()));
        }
      }
      Bench.writeReport(
          "tracing-throughput",
          report(
              runs,
              exported,
              intents,
              distinct,
              "bench/run throughput --tracing --intents " + intents + " --repeats " + repeats));
    } finally {
      sink.stop(0);
    }
    return 0;
  }

  private static Run measure(EmbeddedKafkaCluster kafka, Mode mode, String round, int intents)
      throws Exception {
    GlobalOpenTelemetry.resetForTest();
    OpenTelemetrySdk sdk =
        Tracing.start(mode.env(), "bench", builder -> builder.disableShutdownHook());
    try {
      return Bench.measure(
          kafka,
          "ledger, tracing " + mode.name(),
          StreamsConfig.EXACTLY_ONCE_V2,
          LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)),
          Topics.INTENTS,
          "ledger-tracing-" + mode.name().replace("%", "pct") + "-" + round,
          intents);
    } finally {
      if (sdk != null) {
        sdk.getSdkTracerProvider().forceFlush().join(30, TimeUnit.SECONDS);
        sdk.close();
      }
      GlobalOpenTelemetry.resetForTest();
    }
  }

  /**
   * {@code bench/run latency --tracing}: intent to reply through the ledger and a zero-latency
   * executor ({@link LatencyBench#ledger}) at {@code load}/s and 100 ms commits, with tracing off,
   * at 1% and at 100% in turn every round, each point on a fresh broker after a warm-up point of
   * each mode.
   */
  static int latency(int seconds, int warmup, int load, int rounds, String command)
      throws Exception {
    HttpServer sink = sink(new AtomicLong(), new AtomicLong());
    String endpoint = "http://127.0.0.1:" + sink.getAddress().getPort();
    LatencyBench.Plan plan =
        new LatencyBench.Plan(seconds, warmup, List.of(load), List.of(100), List.of(0), 0, 1, 1);
    try {
      for (Mode mode : modes(endpoint)) {
        Bench.say("warm-up point, not counted: tracing " + mode.name());
        latencyPoint(mode, load, plan);
      }
      Map<String, List<LatencyBench.Point>> points = new LinkedHashMap<>();
      for (int round = 1; round <= rounds; round++) {
        for (Mode mode : modes(endpoint)) {
          LatencyBench.Point point = latencyPoint(mode, load, plan);
          points.computeIfAbsent(mode.name(), m -> new ArrayList<>()).add(point);
          Bench.say(
              String.format(
                  Locale.ROOT,
                  "round %d, tracing %s: p50 %.1f ms, p99 %.1f ms",
                  round,
                  mode.name(),
                  point.p50(),
                  point.p99()));
        }
      }
      Bench.writeReport("tracing-latency", latencyReport(points, load, seconds, command));
    } finally {
      sink.stop(0);
    }
    return 0;
  }

  private static LatencyBench.Point latencyPoint(Mode mode, int load, LatencyBench.Plan plan)
      throws Exception {
    GlobalOpenTelemetry.resetForTest();
    OpenTelemetrySdk sdk =
        Tracing.start(mode.env(), "bench", builder -> builder.disableShutdownHook());
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka, "latency-effects");
      return LatencyBench.ledger(kafka, 100, 100, load, plan);
    } finally {
      if (sdk != null) {
        sdk.getSdkTracerProvider().forceFlush().join(30, TimeUnit.SECONDS);
        sdk.close();
      }
      GlobalOpenTelemetry.resetForTest();
    }
  }

  static String latencyReport(
      Map<String, List<LatencyBench.Point>> points, int load, int seconds, String command) {
    StringBuilder md =
        Bench.reportHead("Tracing: intent to reply with tracing off, at 1% and at 100%", command);
    md.append("\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "The ledger and a zero-latency executor (the `kafka` connector), exactly_once_v2, 100"
                + " ms commits, %d intents/s for %d s per point, each point on a fresh broker; the"
                + " SDK as `effectledger` starts it from `OTEL_*`, exporting over OTLP/HTTP to a"
                + " receiver in this process. Intents carry no `traceparent`: each call's trace"
                + " starts at the ledger, sampled as the mode says.%n%n",
            load,
            seconds));
    md.append(
        "| round | tracing | p50 ms | p99 ms | p99 / off's |\n| ---: | --- | ---: | ---: | ---: |\n");
    List<LatencyBench.Point> off = points.get("off");
    Map<String, List<Double>> ratios = new LinkedHashMap<>();
    for (int i = 0; i < off.size(); i++) {
      for (Map.Entry<String, List<LatencyBench.Point>> mode : points.entrySet()) {
        LatencyBench.Point p = mode.getValue().get(i);
        double ratio = p.p99() / off.get(i).p99();
        ratios.computeIfAbsent(mode.getKey(), m -> new ArrayList<>()).add(ratio);
        md.append(
            String.format(
                Locale.ROOT,
                "| %d | %s | %.1f | %.1f | %.2f |%n",
                i + 1,
                mode.getKey(),
                p.p50(),
                p.p99(),
                ratio));
      }
    }
    md.append("\n");
    ratios.forEach(
        (mode, each) ->
            md.append(
                String.format(
                    Locale.ROOT,
                    "- Tracing %s: p99 over tracing off's, median of %d rounds: %.2f%n",
                    mode,
                    each.size(),
                    LatencyReport.median(each))));
    return md.toString();
  }

  private static HttpServer sink(AtomicLong exports, AtomicLong bytes) throws java.io.IOException {
    HttpServer sink = JdkHttpServers.create(new InetSocketAddress("127.0.0.1", 0), 0);
    sink.createContext(
        "/v1/traces",
        exchange -> {
          try (exchange;
              InputStream body = exchange.getRequestBody()) {
            bytes.addAndGet(body.readAllBytes().length);
            exports.incrementAndGet();
            exchange.sendResponseHeaders(200, -1);
          }
        });
    sink.start();
    return sink;
  }

  static String report(
      Map<String, List<Run>> runs,
      Map<String, long[]> exported,
      int intents,
      int distinct,
      String command) {
    StringBuilder md =
        Bench.reportHead(
            "Tracing: the ledger's throughput with tracing off, at 1% and at 100%", command);
    md.append("  \n");
    md.append(Bench.input(intents, distinct)).append("\n\n");
    md.append(
        "exactly_once_v2, one embedded broker, the ledger alone (its decision spans; no executor)."
            + " On: the SDK as `effectledger` starts it from `OTEL_*` (batch processor, OTLP/HTTP"
            + " with protobuf) exporting to a receiver in this process. The modes take turns in"
            + " every round, after a warm-up round of each.\n\n");
    md.append("| round |");
    runs.keySet().forEach(m -> md.append(" ").append(m).append(" intents/s |"));
    md.append(" 1% / off | 100% / off |\n| ---: |");
    runs.keySet().forEach(m -> md.append(" ---: |"));
    md.append(" ---: | ---: |\n");
    List<Run> off = runs.get("off");
    List<Double> onePercent = new ArrayList<>();
    List<Double> all = new ArrayList<>();
    for (int i = 0; i < off.size(); i++) {
      md.append("| ").append(i + 1).append(" |");
      for (List<Run> mode : runs.values()) {
        md.append(String.format(Locale.ROOT, " %.0f |", mode.get(i).perSecond()));
      }
      double one = runs.get("1%").get(i).perSecond() / off.get(i).perSecond();
      double hundred = runs.get("100%").get(i).perSecond() / off.get(i).perSecond();
      onePercent.add(one);
      all.add(hundred);
      md.append(String.format(Locale.ROOT, " %.3f | %.3f |%n", one, hundred));
    }
    md.append(
        String.format(
            Locale.ROOT,
            "%n- Median over the rounds: 1%% sampling %.3f of tracing off's throughput (a cost of"
                + " %.1f%%; target: at most 5%%), 100%% sampling %.3f (%.1f%%).%n",
            LatencyReport.median(onePercent),
            (1 - LatencyReport.median(onePercent)) * 100,
            LatencyReport.median(all),
            (1 - LatencyReport.median(all)) * 100));
    exported.forEach(
        (mode, sent) ->
            md.append(
                String.format(
                    Locale.ROOT,
                    "- Tracing %s: %d OTLP export requests, %.1f MB, over the measured rounds.%n",
                    mode,
                    sent[0],
                    sent[1] / 1e6)));
    return md.toString();
  }
}
