package dev.effectledger.bench;

import dev.effectledger.auth.FairShare;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.HdrHistogram.Histogram;

/**
 * {@code bench/run gateway --fair-share}: one tenant ("flood") calling a gateway at {@code
 * floodTimes} times its limit while another ("quiet") calls within its own; the quiet tenant's p99
 * beside the flood over its p99 alone, on a gateway with each tenant's fair share and on one
 * without, in alternating segments (alone, beside the flood) so that drift weighs on both; the
 * gateway with the share's rounds first, after a warm-up that lasts until the JIT has settled.
 */
final class FairShareRun {

  static final String QUIET_TOKEN = "bench-quiet";
  static final String FLOOD_TOKEN = "bench-flood";

  /**
   * @param limit each tenant's calls a second (and calls waiting at once) on the limited gateway
   * @param floodTimes the flood's rate, in times the limit
   * @param quiet the quiet tenant's rate, calls a second (under the limit)
   */
  record Plan(int seconds, int warmup, int rounds, int limit, int floodTimes, int quiet) {}

  /** One segment's figures. */
  record Segment(
      String gateway,
      int round,
      boolean flooded,
      double quietP50,
      double quietP99,
      long quietSent,
      Map<Integer, Long> quietStatuses,
      long floodSent,
      Map<Integer, Long> floodStatuses) {}

  private FairShareRun() {}

  static String measure(Function<String, GatewayConfig> configs, Plan plan, String command)
      throws Exception {
    Credentials tenants =
        Credentials.of(
            Map.of(
                Credentials.sha256Hex(QUIET_TOKEN),
                new Credentials.Caller("quiet", "quiet", Set.of()),
                Credentials.sha256Hex(FLOOD_TOKEN),
                new Credentials.Caller("flood", "flood", Set.of())));
    FairShare share =
        FairShare.of(new FairShare.Limits(plan.limit(), plan.limit(), plan.limit(), 0), Map.of());
    List<Segment> segments = new ArrayList<>();
    // One HTTP client per tenant, as two agents would have: with one client the quiet tenant's
    // calls queued behind the flood's in its pool for the gateway (a run of 2026-12-07 measured
    // seconds of that queue as the quiet tenant's latency, with the share as without it).
    Clients http = new Clients(client(), client());
    Warmed warmed;
    try (Gateway limited =
            Gateway.start(
                configs.apply("fair-limited").withCredentials(tenants).withFairShare(share));
        Gateway open = Gateway.start(configs.apply("fair-open").withCredentials(tenants))) {
      GatewayCalls.awaitReady(limited);
      GatewayCalls.awaitReady(open);
      for (Gateway gateway : List.of(limited, open)) {
        Bench.say("warming " + name(gateway, limited) + ", " + plan.warmup() + " s");
        segment(http, gateway, name(gateway, limited), plan, 0, true, plan.warmup(), "w");
      }
      warmed = settle(http, limited, open, plan);
      // every round of the gateway with the share first, then the one without: the unlimited
      // flood's aftermath in the ledger (60,000 calls at 4,000/s) raised the next segment's p99
      // 5 times when the gateways took turns (2026-12-07)
      for (Gateway gateway : List.of(limited, open)) {
        for (int round = 1; round <= plan.rounds(); round++) {
          for (boolean flooded : List.of(false, true)) {
            String name = name(gateway, limited);
            Bench.say(
                "round "
                    + round
                    + " of "
                    + plan.rounds()
                    + ": "
                    + name
                    + (flooded ? ", beside the flood" : ", the quiet tenant alone"));
            Segment s = segment(http, gateway, name, plan, round, flooded, plan.seconds(), "m");
            Bench.say(
                String.format(
                    Locale.ROOT,
                    "  quiet p50 %.1f ms, p99 %.1f ms, answers %s; flood answers %s",
                    s.quietP50(),
                    s.quietP99(),
                    s.quietStatuses(),
                    s.floodStatuses()));
            segments.add(s);
          }
        }
      }
    } finally {
      http.quiet().stop();
      http.flood().stop();
    }
    return render(segments, plan, command, warmed);
  }

  /** How long the warm-up went on past its fixed part, and the JIT's compile time at its end. */
  record Warmed(int extraSeconds, long lastCompileMillis, boolean settled) {}

  /** Extra warm-up segments, each this long, on both gateways in turn. */
  static final int SETTLE_SEGMENT_SECONDS = 5;

  /** At most this long past the fixed warm-up. */
  static final int SETTLE_MAX_SECONDS = 240;

  /**
   * Whether the JIT has settled: compiling for less than this share of a segment's time. On two
   * cores the JIT compiled for 60-85% of a core through the first 90 s of a run (JFR, 2026-12-07),
   * and the first measured round beside the flood then missed on both gateways alike.
   */
  static boolean settled(long compileMillis, int segmentSeconds) {
    return compileMillis < segmentSeconds * 1_000L * 5 / 100;
  }

  /**
   * Warms both gateways beside the flood, a segment at a time, until the JIT compiles for less than
   * 5% of a segment ({@link #settled}) or {@link #SETTLE_MAX_SECONDS} have passed: the measured
   * rounds are of a gateway that has been running, as one in service has.
   */
  private static Warmed settle(Clients http, Gateway limited, Gateway open, Plan plan)
      throws Exception {
    java.lang.management.CompilationMXBean jit =
        java.lang.management.ManagementFactory.getCompilationMXBean();
    int extra = 0;
    long compiled = 0;
    while (extra < SETTLE_MAX_SECONDS) {
      long before = jit.getTotalCompilationTime();
      for (Gateway gateway : List.of(open, limited)) { // the measured rounds start on limited
        segment(http, gateway, "settle", plan, 0, true, SETTLE_SEGMENT_SECONDS, "w");
        extra += SETTLE_SEGMENT_SECONDS;
      }
      compiled = (jit.getTotalCompilationTime() - before) / 2;
      Bench.say(
          "warming on: the JIT compiled "
              + compiled
              + " ms in each "
              + SETTLE_SEGMENT_SECONDS
              + " s, "
              + extra
              + " s past the warm-up");
      if (settled(compiled, SETTLE_SEGMENT_SECONDS)) {
        return new Warmed(extra, compiled, true);
      }
    }
    return new Warmed(extra, compiled, false);
  }

  /** The quiet tenant's HTTP client and the flood tenant's. */
  private record Clients(
      org.eclipse.jetty.client.HttpClient quiet, org.eclipse.jetty.client.HttpClient flood) {}

  private static org.eclipse.jetty.client.HttpClient client() throws Exception {
    org.eclipse.jetty.client.HttpClient http = new org.eclipse.jetty.client.HttpClient();
    http.setMaxConnectionsPerDestination(2048);
    http.setMaxRequestsQueuedPerDestination(1_000_000);
    http.start();
    return http;
  }

  private static String name(Gateway gateway, Gateway limited) {
    return gateway == limited ? "with fair share" : "without";
  }

  private static Segment segment(
      Clients http,
      Gateway gateway,
      String name,
      Plan plan,
      int round,
      boolean flooded,
      int seconds,
      String phase)
      throws Exception {
    String run = phase + "-" + name.replace(' ', '-') + "-" + round + "-" + flooded;
    Histogram quiet = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    Map<Integer, Long> quietStatuses = new ConcurrentHashMap<>();
    Map<Integer, Long> floodStatuses = new ConcurrentHashMap<>();
    AtomicLong floodSent = new AtomicLong();
    CompletableFuture<Long> flood =
        flooded
            ? CompletableFuture.supplyAsync(
                () ->
                    pace(
                        http.flood(),
                        gateway,
                        FLOOD_TOKEN,
                        run + "-flood",
                        plan.limit() * plan.floodTimes(),
                        seconds,
                        null,
                        floodStatuses))
            : CompletableFuture.completedFuture(0L);
    long quietSent =
        pace(http.quiet(), gateway, QUIET_TOKEN, run, plan.quiet(), seconds, quiet, quietStatuses);
    floodSent.set(flood.get(120, TimeUnit.SECONDS));
    return new Segment(
        name,
        round,
        flooded,
        quiet.getValueAtPercentile(50) / 1_000.0,
        quiet.getValueAtPercentile(99) / 1_000.0,
        quietSent,
        Map.copyOf(quietStatuses),
        floodSent.get(),
        Map.copyOf(floodStatuses));
  }

  /**
   * Calls at {@code rate}/s for {@code seconds} as {@code token}'s tenant, each a new key; waits
   * for their answers. The time to each 200 goes to {@code latencies} (null: not kept).
   */
  private static long pace(
      org.eclipse.jetty.client.HttpClient http,
      Gateway gateway,
      String token,
      String run,
      int rate,
      int seconds,
      Histogram latencies,
      Map<Integer, Long> statuses) {
    List<CompletableFuture<Void>> pending = new ArrayList<>();
    long total = (long) rate * seconds;
    long start = System.nanoTime();
    for (long i = 0; i < total; i++) {
      long wait = start + i * 1_000_000_000L / rate - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      long sentAt = System.nanoTime();
      CompletableFuture<Void> answered =
          GatewayCalls.post(http, gateway, token, run, i)
              .thenAccept(
                  status -> {
                    statuses.merge(status, 1L, Long::sum);
                    if (status == 200 && latencies != null) {
                      synchronized (latencies) {
                        latencies.recordValue(
                            Math.min(
                                (System.nanoTime() - sentAt) / 1_000,
                                latencies.getHighestTrackableValue()));
                      }
                    }
                  });
      pending.add(answered);
    }
    try {
      CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(90, TimeUnit.SECONDS);
    } catch (Exception e) {
      Bench.say("  not every call was answered within 90 s: " + e);
    }
    return total;
  }

  static String render(List<Segment> segments, Plan plan, String command, Warmed warmed) {
    StringBuilder md =
        Bench.reportHead("Fair share: one tenant flooding a gateway, another's latency", command);
    md.append("\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "One ledger, one zero-latency executor (the `kafka` connector), and two HTTP gateways on"
                + " it: one with each tenant's fair share (%d calls a second, a burst of %d, %d calls"
                + " waiting at once: `gateway.limits.default.*`), one without. Per round, every"
                + " round of the gateway with the share first, %d s of the quiet tenant alone at %d"
                + " calls/s, then %d s of it beside"
                + " the flood tenant at %d calls/s (%d times its limit), each call a new key; %d s"
                + " of warm-up on each gateway first, not counted, then more beside the flood until the"
                + " JIT compiled for under 5%% of the time (%s). Each tenant calls through an HTTP"
                + " client of its own (its own connections), all in this one process on this"
                + " machine's cores. Latency: call to its 200, as the caller saw it.%n%n",
            plan.limit(),
            plan.limit(),
            plan.limit(),
            plan.seconds(),
            plan.quiet(),
            plan.seconds(),
            plan.limit() * plan.floodTimes(),
            plan.floodTimes(),
            plan.warmup(),
            warmed.settled()
                ? warmed.extraSeconds()
                    + " s more; the last 5 s compiled for "
                    + warmed.lastCompileMillis()
                    + " ms"
                : "not settled after "
                    + warmed.extraSeconds()
                    + " s more: the last 5 s still"
                    + " compiled for "
                    + warmed.lastCompileMillis()
                    + " ms"));
    md.append(
        "| gateway | round | quiet alone p50 / p99 ms | quiet beside the flood p50 / p99 ms |"
            + " p99 beside / alone | flood's answers (status: calls) | quiet's answers beside |\n");
    md.append("| --- | ---: | --- | --- | ---: | --- | --- |\n");
    Map<String, List<Double>> ratios = new java.util.LinkedHashMap<>();
    for (int i = 0; i + 1 < segments.size(); i += 2) {
      Segment alone = segments.get(i);
      Segment beside = segments.get(i + 1);
      double ratio = beside.quietP99() / alone.quietP99();
      ratios.computeIfAbsent(alone.gateway(), g -> new ArrayList<>()).add(ratio);
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %.1f / %.1f | %.1f / %.1f | %.2f | %s | %s |%n",
              alone.gateway(),
              alone.round(),
              alone.quietP50(),
              alone.quietP99(),
              beside.quietP50(),
              beside.quietP99(),
              ratio,
              new java.util.TreeMap<>(beside.floodStatuses()),
              new java.util.TreeMap<>(beside.quietStatuses())));
    }
    md.append("\n");
    ratios.forEach(
        (gateway, each) -> {
          List<Double> sorted = each.stream().sorted().toList();
          md.append(
              String.format(
                  Locale.ROOT,
                  "- %s: the quiet tenant's p99 beside the flood over alone, median of %d rounds:"
                      + " **%.2f** (target: at most 1.2 with fair share)%n",
                  gateway,
                  sorted.size(),
                  sorted.get(sorted.size() / 2)));
        });
    return md.toString();
  }
}
