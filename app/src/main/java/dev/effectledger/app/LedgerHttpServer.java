package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.app.console.Console;
import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.app.console.LedgerReads;
import dev.effectledger.embedded.JdkHttpServers;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.policy.Durations;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.QueryString;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.state.HostInfo;

/**
 * A processor instance's HTTP endpoint: {@code GET /v1/keys/{tenant}/{key}} answers the key's
 * ledger entry from the instance that owns it (forwarding once when that is another instance),
 * {@code GET /v1/results/{tenant}/{key}} its answer as a reply with the stored result (what the
 * gateway's {@code GET /v1/calls/{key}} reads; keep it off networks callers reach), {@code
 * /healthz}, {@code /readyz} (200 only while Kafka Streams is RUNNING) and {@code /metrics} in
 * Prometheus text format. Written on the JDK's server: a few read-only routes need no framework.
 *
 * <p>This class sets the server up, guards and routes; the answers are {@link LedgerQueries}'s,
 * asking the other instances is {@link InstanceFanOut}'s and an entry's JSON {@link
 * LedgerEntryJson}'s.
 */
public final class LedgerHttpServer implements AutoCloseable, LedgerReads {

  private final HttpServer server;
  private final ExecutorService handlers;
  private final HttpAuth auth;
  private final LedgerQueries queries;

  /**
   * Binds now, so the port is known for {@code application.server}; serves once {@link #serve} is
   * called.
   */
  public LedgerHttpServer(String host, int port, PrometheusMeterRegistry metrics) {
    this(host, port, metrics, HttpAuth.OPEN, false);
  }

  /**
   * With {@code auth} on the {@code /v1/} routes (and on {@code /metrics} when {@code
   * metricsNeedAuth}); {@code /healthz} and {@code /readyz} stay open for probes.
   */
  public LedgerHttpServer(
      String host,
      int port,
      PrometheusMeterRegistry metrics,
      HttpAuth auth,
      boolean metricsNeedAuth) {
    this.auth = auth;
    try {
      this.server = JdkHttpServers.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot listen on " + host + ":" + port + " (http.host, http.port): " + e.getMessage(),
          e);
    }
    this.queries = new LedgerQueries(metrics, new HostInfo(host, server.getAddress().getPort()));
    // Console pages wait on other instances and on tool-audit (up to seconds); enough threads that
    // a few of them never hold up the gateways' key lookups.
    handlers =
        Executors.newFixedThreadPool(
            16,
            r -> {
              Thread t = new Thread(r, "ledger-http");
              t.setDaemon(true);
              return t;
            });
    server.setExecutor(handlers);
    server.createContext("/healthz", ex -> answer(ex, 200, "text/plain", "ok\n"));
    server.createContext(
        "/readyz",
        ex -> {
          boolean ready = queries.state() == KafkaStreams.State.RUNNING;
          answer(
              ex,
              ready ? 200 : 503,
              "text/plain",
              ready ? "ready\n" : "not ready: " + queries.state() + "\n");
        });

    server.createContext(
        "/metrics",
        ex -> {
          if (!metricsNeedAuth || allowed(ex)) {
            PrometheusMetrics.Scrape scrape =
                PrometheusMetrics.scrape(metrics, ex.getRequestHeaders().getFirst("Accept"));
            answer(ex, 200, scrape.contentType(), scrape.body());
          }
        });
    guarded("/v1/keys/", ex -> key(ex, "/v1/keys/", false));
    guarded("/v1/results/", ex -> key(ex, "/v1/results/", true));
    guarded("/v1/tools/", this::expiry);
    guarded("/v1/held", ex -> answerJson(ex, queries.held(authorization(ex), isForwarded(ex))));
    guarded(
        "/v1/overview", ex -> answerJson(ex, queries.overview(authorization(ex), isForwarded(ex))));
    guarded("/v1/policy", this::policy);
  }

  /** Serves {@code path} to callers with the viewer role or above ({@link #allowed}). */
  private void guarded(String path, HttpHandler handler) {
    server.createContext(
        path,
        ex -> {
          if (allowed(ex)) {
            handler.handle(ex);
          }
        });
  }

  /** {@code GET /v1/policy}: the answer of {@link LedgerQueries#policy}, 404 when not read live. */
  private void policy(HttpExchange exchange) throws IOException {
    ObjectNode body = queries.policy();
    if (body == null) {
      JdkHttpServers.answer(
          exchange,
          Problem.of(
              404,
              "policy-not-read",
              "Tool policy not read",
              "this processor does not read tool-policy (policy.live=false)"));
      return;
    }
    answer(exchange, 200, "application/json", body.toString());
  }

  /**
   * Whether the caller may read (the {@code viewer} role or above); answers 401 when not. Every
   * route here only reads: the operator's actions come with the console.
   */
  private boolean allowed(HttpExchange exchange) throws IOException {
    String authorization = exchange.getRequestHeaders().getFirst("Authorization");
    if (auth.allows(authorization, HttpAuth.Role.VIEWER)) {
      return true;
    }
    exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"effectledger\"");
    JdkHttpServers.answer(
        exchange,
        Problem.of(
            401,
            "unauthorized",
            "Unauthorized",
            "send Authorization: Bearer <token> with a token of http.auth.<name>"));
    return false;
  }

  /** Serves the operator's console at {@code /console} (see {@link Console}). */
  public void console(Console console) {
    server.createContext("/console", console::handle);
  }

  /**
   * {@code GET /v1/held} ({@link LedgerQueries#held}): the held entries on this instance and,
   * unless {@code localOnly}, every other one it can reach.
   */
  @Override
  public ObjectNode held(String authorization, boolean localOnly) {
    return queries.held(authorization, localOnly);
  }

  /** {@code GET /v1/overview} ({@link LedgerQueries#overview}): per tool, summed over instances. */
  @Override
  public ObjectNode overview(String authorization, boolean localOnly) {
    return queries.overview(authorization, localOnly);
  }

  /**
   * The ledger entry of {@code tenant}'s {@code key} from the instance that owns it, null when
   * there is none ({@link LedgerQueries#entry}).
   *
   * @throws IllegalStateException when the owner cannot be asked or the ledger is not running
   */
  @Override
  public ObjectNode entry(String tenant, String key, String authorization) {
    return queries.entry(tenant, key, authorization);
  }

  /** A request another instance forwarded: answered for this instance alone. */
  private static boolean isForwarded(HttpExchange exchange) {
    return exchange.getRequestHeaders().containsKey(InstanceFanOut.FORWARDED);
  }

  private static void answerJson(HttpExchange exchange, JsonNode body) throws IOException {
    answer(exchange, 200, "application/json", body.toString());
  }

  public void serve(KafkaStreams ledger) {
    serve(ledger, null);
  }

  /** Serves {@code ledger}, and on /v1/policy what {@code policies} (null: not read live) holds. */
  public void serve(KafkaStreams ledger, LivePolicies policies) {
    queries.serve(ledger, policies);
    server.start();
  }

  HostInfo address() {
    return queries.self();
  }

  /** Where /v1/overview takes the double effects this processor saw from. */
  void doubleEffects(Supplier<List<MicrometerObserver.DoubleEffect>> seen) {
    queries.doubleEffects(seen);
  }

  /**
   * The address the other instances know this one by ({@code application.server}), when it is not
   * the one it listens on (a wildcard such as {@code 0.0.0.0}): how it tells itself from the others
   * in Kafka Streams' metadata, so it neither asks itself over HTTP nor counts itself twice.
   */
  void advertisedAs(String applicationServer) {
    queries.advertisedAs(HostInfo.buildFromEndpoint(applicationServer));
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /**
   * {@code /v1/keys/...}: the entry as operators see it ({@link LedgerEntryJson#describe}); {@code
   * /v1/results/...}: the key's answer as a reply ({@link LedgerEntryJson#asReply}, result
   * included), for the gateway's callers.
   */
  private void key(HttpExchange exchange, String route, boolean asReply) throws IOException {
    String[] parts = exchange.getRequestURI().getRawPath().substring(route.length()).split("/", -1);
    if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
      JdkHttpServers.answer(
          exchange,
          Problem.of(400, "invalid-path", "Invalid path", "use " + route + "{tenant}/{key}"));
      return;
    }
    String tenant = URLDecoder.decode(parts[0], StandardCharsets.UTF_8);
    String key = URLDecoder.decode(parts[1], StandardCharsets.UTF_8);
    if (notRunning(exchange)) {
      return;
    }
    HostInfo owner = queries.remoteOwner(key);
    if (owner != null && !isForwarded(exchange)) {
      forward(exchange, owner, route, tenant, key);
      return;
    }
    LedgerEntry entry = queries.local(tenant, key);
    if (entry == null) {
      JdkHttpServers.answer(
          exchange,
          Problem.of(404, "unknown-key", "Unknown key", "no ledger entry for this key").key(key));
    } else {
      answer(
          exchange,
          200,
          "application/json",
          (asReply
                  ? LedgerEntryJson.asReply(entry)
                  : LedgerEntryJson.describe(
                      entry,
                      "1"
                          .equals(
                              QueryString.parse(exchange.getRequestURI().getRawQuery())
                                  .get("result"))))
              .toString());
    }
  }

  /**
   * {@code GET /v1/tools/{tool}/expiry?window=7d}: how many of the tool's settled entries
   * (succeeded or failed) the ledger keeps, and how many of them a window of that length would
   * expire at once (completed longer ago than it), on every processor instance: the receiving one
   * asks the others ({@code application.server}) and adds their counts. What {@code effectledger
   * tools diff} shows for a shrinking window. A scan of each instance's active ledger stores.
   */
  private void expiry(HttpExchange exchange) throws IOException {
    String[] parts =
        exchange.getRequestURI().getRawPath().substring("/v1/tools/".length()).split("/", -1);
    String query = exchange.getRequestURI().getRawQuery();
    Duration window = window(query);
    if (parts.length != 2 || parts[0].isEmpty() || !parts[1].equals("expiry") || window == null) {
      JdkHttpServers.answer(
          exchange,
          Problem.of(
              400,
              "invalid-query",
              "Invalid query",
              "use /v1/tools/{tool}/expiry?window=<duration, e.g. 7d>"));
      return;
    }
    String tool = URLDecoder.decode(parts[0], StandardCharsets.UTF_8);
    if (notRunning(exchange)) {
      return;
    }
    ObjectNode out =
        queries.expiry(
            tool,
            window,
            exchange.getRequestURI().getRawPath() + "?" + query,
            authorization(exchange),
            isForwarded(exchange));
    answer(exchange, 200, "application/json", out.toString());
  }

  /** The duration a raw query's {@code window} names; null when it names none or no duration. */
  static Duration window(String rawQuery) {
    String windowText = QueryString.parse(rawQuery).get("window");
    return windowText == null ? null : Durations.parse(windowText).orElse(null);
  }

  /** Answers 503 when the ledger is not running, and says whether it did. */
  private boolean notRunning(HttpExchange exchange) throws IOException {
    KafkaStreams.State state = queries.state();
    if (state == KafkaStreams.State.RUNNING) {
      return false;
    }
    JdkHttpServers.answer(
        exchange,
        Problem.of(
            503,
            "unavailable",
            "Not ready",
            "the ledger is " + state + ", not RUNNING; ask again"));
    return true;
  }

  private void forward(
      HttpExchange exchange, HostInfo owner, String route, String tenant, String key)
      throws IOException {
    try {
      HttpResponse<String> response =
          queries
              .instances()
              .askOwner(
                  owner,
                  route,
                  tenant,
                  key,
                  exchange.getRequestURI().getRawQuery() == null
                      ? ""
                      : "?" + exchange.getRequestURI().getRawQuery(),
                  authorization(exchange));
      answer(
          exchange,
          response.statusCode(),
          response.headers().firstValue("Content-Type").orElse("application/json"),
          response.body());
    } catch (IOException e) {
      JdkHttpServers.answer(
          exchange,
          Problem.of(
                  502,
                  "owner-unreachable",
                  "Owner unreachable",
                  "the instance owning this key, "
                      + InstanceFanOut.address(owner)
                      + ", did not answer: "
                      + e.getMessage())
              .key(key));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      JdkHttpServers.answer(
          exchange,
          Problem.of(503, "unavailable", "Not ready", "interrupted while asking the owner"));
    }
  }

  /**
   * The caller's credential, passed on to the instance a request is forwarded to (an empty one when
   * it sent none: the other instance then answers as an open or a closed API does).
   */
  private static String authorization(HttpExchange exchange) {
    String value = exchange.getRequestHeaders().getFirst("Authorization");
    return value == null ? "" : value;
  }

  private static void answer(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    JdkHttpServers.answer(exchange, status, type, body);
  }

  @Override
  public void close() {
    server.stop(1);
    handlers.shutdownNow(); // HttpServer.stop leaves its executor's threads running
  }
}
