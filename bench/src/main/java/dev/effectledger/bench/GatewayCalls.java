package dev.effectledger.bench;

import com.sun.net.httpserver.HttpServer;
import dev.effectledger.bench.GatewayBench.Tally;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.JdkHttpServers;
import dev.effectledger.gateway.Gateway;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.apache.kafka.streams.KafkaStreams;
import org.eclipse.jetty.client.StringRequestContent;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;

/**
 * The calls of {@code bench/run gateway}: one call through the Java client or through the gateway,
 * the loop that offers them at a fixed load, and the gateway's readiness and its own metrics.
 */
final class GatewayCalls {

  private GatewayCalls() {}

  /** Waits up to 90 s for {@code gateway} to be ready; whether it is. */
  static boolean awaitReady(Gateway gateway) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (!gateway.isReady() && System.nanoTime() < deadline) {
      TimeUnit.MILLISECONDS.sleep(100);
    }
    return gateway.isReady();
  }

  /** What the gateway probes on the ledger: 200 while Kafka Streams runs. */
  static HttpServer readiness(KafkaStreams ledger) throws Exception {
    HttpServer server = JdkHttpServers.create(new InetSocketAddress("127.0.0.1", 0), 0);
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

  static CompletableFuture<Boolean> viaClient(ToolCallClient client, String run, long i) {
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
  static CompletableFuture<Boolean> viaGateway(
      org.eclipse.jetty.client.HttpClient http, Gateway gateway, String run, long i) {
    return post(http, gateway, GatewayBench.TOKEN, run, i).thenApply(status -> status == 200);
  }

  /** Call {@code i} of {@code run} as {@code token}'s caller; its status, -1 when none came. */
  static CompletableFuture<Integer> post(
      org.eclipse.jetty.client.HttpClient http, Gateway gateway, String token, String run, long i) {
    CompletableFuture<Integer> answered = new CompletableFuture<>();
    http.newRequest(gateway.uri().resolve("/v1/tools/charge_card/calls"))
        .method(HttpMethod.POST)
        .headers(h -> h.put(HttpHeader.AUTHORIZATION, "Bearer " + token))
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
                answered.complete(result.isSucceeded() ? result.getResponse().getStatus() : -1));
    return answered;
  }

  /** The gateway's own request-to-answer quantiles, from its /metrics. */
  static String serverWaits(HttpClient http, Gateway gateway) throws Exception {
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

  /**
   * Calls at {@code load}/s for {@code seconds}, call {@code i} through side {@code i % n} of the
   * {@code n} {@code calls}, then waits for their answers; the time from each call to its answer
   * goes to that side's tally (none: a warm-up).
   */
  static void pace(
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
}
