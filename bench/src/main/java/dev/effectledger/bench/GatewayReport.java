package dev.effectledger.bench;

import dev.effectledger.bench.GatewayBench.Side;
import dev.effectledger.bench.GatewayBench.Waiting;
import java.util.List;
import java.util.function.Function;

/**
 * The Markdown report of {@code bench/run gateway}: each side alone and the sides at once, where
 * the time goes, the gateway's p99 against the client's with the target, and the calls waiting at
 * once on one gateway.
 */
final class GatewayReport {

  private GatewayReport() {}

  /**
   * The report of a run: {@code sides} measured each alone, {@code dealt} the same sides at once,
   * {@code waiting} the calls waiting at once, one per protocol (none: not measured).
   */
  static String render(
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
      if (gateway.side().equals(GatewayBench.JAVA)) {
        continue;
      }
      double alone = gateway.p99() / same(sides, gateway.load(), GatewayBench.JAVA).p99();
      double atOnce =
          same(dealt, gateway.load(), gateway.side()).p99()
              / same(dealt, gateway.load(), GatewayBench.JAVA).p99();
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
