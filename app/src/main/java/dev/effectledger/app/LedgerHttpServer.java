package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.policy.Durations;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ReplyJson;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.state.HostInfo;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * A processor instance's HTTP endpoint: {@code GET /v1/keys/{tenant}/{key}} answers the key's
 * ledger entry from the instance that owns it (forwarding once when that is another instance),
 * {@code GET /v1/results/{tenant}/{key}} its answer as a reply with the stored result (what the
 * gateway's {@code GET /v1/calls/{key}} reads; keep it off networks callers reach), {@code
 * /healthz}, {@code /readyz} (200 only while Kafka Streams is RUNNING) and {@code /metrics} in
 * Prometheus text format. Written on the JDK's server: a few read-only routes need no framework.
 */
final class LedgerHttpServer implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpServer server;
  private final java.util.concurrent.ExecutorService handlers;
  private final PrometheusMeterRegistry metrics;
  private final HttpAuth auth;
  private volatile HostInfo self;
  private volatile KafkaStreams streams;
  private volatile LivePolicies livePolicies;

  /** The latest double effects this processor's ledger saw (empty until {@link #doubleEffects}). */
  private volatile java.util.function.Supplier<java.util.List<MicrometerObserver.DoubleEffect>>
      doubleEffects = java.util.List::of;

  private final HttpClient forwarder =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  /**
   * Binds now, so the port is known for {@code application.server}; serves once {@link #serve} is
   * called.
   */
  LedgerHttpServer(String host, int port, PrometheusMeterRegistry metrics) {
    this(host, port, metrics, HttpAuth.OPEN, false);
  }

  /**
   * With {@code auth} on the {@code /v1/} routes (and on {@code /metrics} when {@code
   * metricsNeedAuth}); {@code /healthz} and {@code /readyz} stay open for probes.
   */
  LedgerHttpServer(
      String host,
      int port,
      PrometheusMeterRegistry metrics,
      HttpAuth auth,
      boolean metricsNeedAuth) {
    this.auth = auth;
    this.metrics = metrics;
    // The JDK server writes headers and body separately; without TCP_NODELAY each keep-alive
    // request waits ~40 ms on a delayed ACK.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    try {
      this.server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot listen on " + host + ":" + port + " (http.host, http.port): " + e.getMessage(),
          e);
    }
    this.self = new HostInfo(host, server.getAddress().getPort());
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
          boolean ready = streams.state() == KafkaStreams.State.RUNNING;
          answer(
              ex,
              ready ? 200 : 503,
              "text/plain",
              ready ? "ready\n" : "not ready: " + streams.state() + "\n");
        });

    server.createContext(
        "/metrics",
        ex -> {
          if (!metricsNeedAuth || allowed(ex)) {
            answer(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape());
          }
        });
    guarded("/v1/keys/", ex -> key(ex, "/v1/keys/", false));
    guarded("/v1/results/", ex -> key(ex, "/v1/results/", true));
    guarded("/v1/tools/", this::expiry);
    guarded("/v1/held", ex -> answerJson(ex, held(authorization(ex), isForwarded(ex))));
    guarded("/v1/overview", ex -> answerJson(ex, overview(authorization(ex), isForwarded(ex))));
    guarded("/v1/policy", this::policy);
  }

  /** Serves {@code path} to callers with the viewer role or above ({@link #allowed}). */
  private void guarded(String path, com.sun.net.httpserver.HttpHandler handler) {
    server.createContext(
        path,
        ex -> {
          if (allowed(ex)) {
            handler.handle(ex);
          }
        });
  }

  /**
   * {@code GET /v1/policy}: the tool policy version each ledger task of this instance applies (0:
   * the processor's own tools.yaml, no applied policy read yet), and the file it started with.
   */
  private void policy(HttpExchange exchange) throws IOException {
    LivePolicies tasks = livePolicies;
    if (tasks == null) {
      answer(
          exchange,
          404,
          "application/json",
          "{\"error\":\"this processor does not read tool-policy (policy.live=false)\"}");
      return;
    }
    com.fasterxml.jackson.databind.node.ObjectNode body = JSON.createObjectNode();
    body.put("started", tasks.seed().sha256());
    com.fasterxml.jackson.databind.node.ObjectNode versions = body.putObject("tasks");
    tasks.versions().forEach(versions::put);
    answer(exchange, 200, "application/json", JSON.writeValueAsString(body));
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
    answer(
        exchange,
        401,
        "application/json",
        "{\"error\":\"send Authorization: Bearer <token> with a token of http.auth.<name>\"}");
    return false;
  }

  /** Serves the operator's console at {@code /console} (see {@link Console}). */
  void console(Console console) {
    server.createContext("/console", console::handle);
  }

  /** Most held keys one instance lists. */
  static final int MAX_HELD = 500;

  /**
   * {@code GET /v1/held}: the entries held as UNKNOWN, read through the held index (never a scan of
   * the ledger), on this instance and, unless {@code localOnly}, every other one it can reach.
   */
  ObjectNode held(String authorization, boolean localOnly) {
    ObjectNode out = JSON.createObjectNode();
    ArrayNode keys = out.putArray("held");
    out.put("counting", livePolicies != null && livePolicies.counting());
    if (streams.state() != KafkaStreams.State.RUNNING) {
      out.put("instances", 0);
      out.putArray("unreachable")
          .add(self.host() + ":" + self.port() + " (" + streams.state() + ")");
      return out;
    }
    ReadOnlyKeyValueStore<String, LedgerEntry> entries =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.NAME, QueryableStoreTypes.<String, LedgerEntry>keyValueStore()));
    ReadOnlyKeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]> index =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.DEADLINES,
                QueryableStoreTypes.<org.apache.kafka.common.utils.Bytes, byte[]>keyValueStore()));
    for (String storeKey : dev.effectledger.topology.HeldKeys.list(index, MAX_HELD)) {
      LedgerEntry entry = entries.get(storeKey);
      if (entry != null && entry.getState() == LedgerState.UNKNOWN) {
        keys.add(describe(entry, false));
      }
    }
    out.put("instances", 1);
    ArrayNode unreachable = out.putArray("unreachable");
    if (!localOnly) {
      for (JsonNode other : fanOut("/v1/held", authorization, unreachable)) {
        other.path("held").forEach(keys::add);
        out.put("counting", out.path("counting").asBoolean() || other.path("counting").asBoolean());
        out.put("instances", out.path("instances").asInt() + 1);
      }
    }
    return out;
  }

  /**
   * {@code GET /v1/overview}: per tool, the ledger's decisions so far (the counters /metrics
   * shows), the entries in flight and held now, and the time from dispatch to outcome (p50, p99);
   * summed over the instances (the percentiles: the highest instance's).
   */
  ObjectNode overview(String authorization, boolean localOnly) {
    ObjectNode out = JSON.createObjectNode();
    ObjectNode tools = out.putObject("tools");
    metrics
        .find("effectledger.decisions")
        .counters()
        .forEach(
            c ->
                tool(tools, c.getId().getTag("tool"))
                    .with("decisions")
                    .put(c.getId().getTag("decision"), (long) c.count()));
    metrics
        .find("effectledger.outcome.latency")
        .timers()
        .forEach(
            t -> {
              ObjectNode tool = tool(tools, t.getId().getTag("tool"));
              for (var p : t.takeSnapshot().percentileValues()) {
                String name =
                    p.percentile() == 0.5 ? "p50Ms" : p.percentile() == 0.99 ? "p99Ms" : null;
                if (name != null) {
                  tool.put(name, p.value(java.util.concurrent.TimeUnit.MILLISECONDS));
                }
              }
            });
    if (livePolicies != null) {
      livePolicies
          .counts()
          .forEach(
              (name, counts) -> {
                ObjectNode tool = tool(tools, name);
                tool.put("inFlight", counts[0]);
                tool.put("held", counts[1]);
              });
    }
    out.put("counting", livePolicies != null && livePolicies.counting());
    out.put("instances", 1);
    ArrayNode doubles = out.putArray("doubleEffects");
    for (MicrometerObserver.DoubleEffect d : doubleEffects.get()) {
      doubles
          .addObject()
          .put("tool", d.tool())
          .put("tenant", d.tenant())
          .put("key", d.key())
          .put("firstEffectId", d.firstEffectId())
          .put("secondEffectId", d.secondEffectId())
          .put("at", d.at());
    }
    ArrayNode unreachable = out.putArray("unreachable");
    if (!localOnly) {
      for (JsonNode other : fanOut("/v1/overview", authorization, unreachable)) {
        other
            .path("tools")
            .fields()
            .forEachRemaining(
                e -> {
                  ObjectNode tool = tool(tools, e.getKey());
                  e.getValue()
                      .path("decisions")
                      .fields()
                      .forEachRemaining(
                          d ->
                              tool.with("decisions")
                                  .put(
                                      d.getKey(),
                                      tool.path("decisions").path(d.getKey()).asLong()
                                          + d.getValue().asLong()));
                  for (String sum : new String[] {"inFlight", "held"}) {
                    tool.put(sum, tool.path(sum).asLong() + e.getValue().path(sum).asLong());
                  }
                  for (String max : new String[] {"p50Ms", "p99Ms"}) {
                    if (e.getValue().has(max)) {
                      tool.put(
                          max,
                          Math.max(tool.path(max).asDouble(), e.getValue().path(max).asDouble()));
                    }
                  }
                });
        out.put("counting", out.path("counting").asBoolean() || other.path("counting").asBoolean());
        other.path("doubleEffects").forEach(d -> doubles.add(d));
        out.put("instances", out.path("instances").asInt() + 1);
      }
    }
    return out;
  }

  private static ObjectNode tool(ObjectNode tools, String name) {
    return tools.has(name) ? (ObjectNode) tools.get(name) : tools.putObject(name);
  }

  /**
   * The answers of every other processor instance to {@code GET path}, asked with the caller's
   * {@code authorization} as forwarded requests (they answer for themselves only); those that could
   * not answer are added to {@code unreachable}.
   */
  java.util.List<JsonNode> fanOut(String path, String authorization, ArrayNode unreachable) {
    return fanOut(path, authorization, unreachable, Duration.ofSeconds(5));
  }

  private java.util.List<JsonNode> fanOut(
      String path, String authorization, ArrayNode unreachable, Duration timeout) {
    java.util.List<JsonNode> answers = new java.util.ArrayList<>();
    for (StreamsMetadata other : streams.metadataForAllStreamsClients()) {
      HostInfo host = other.hostInfo();
      if (host.equals(self) || host.port() <= 0) {
        continue;
      }
      try {
        HttpResponse<String> response =
            forwarder.send(
                HttpRequest.newBuilder(
                        URI.create("http://" + host.host() + ":" + host.port() + path))
                    .timeout(timeout)
                    .header("X-Effectledger-Forwarded", "1")
                    .header("Authorization", authorization == null ? "" : authorization)
                    .GET()
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 200) {
          answers.add(JSON.readTree(response.body()));
        } else {
          unreachable.add(
              host.host() + ":" + host.port() + " (HTTP " + response.statusCode() + ")");
        }
      } catch (IOException e) {
        unreachable.add(host.host() + ":" + host.port());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        unreachable.add(host.host() + ":" + host.port() + " (interrupted)");
        break;
      }
    }
    return answers;
  }

  /**
   * The ledger entry of {@code tenant}'s {@code key} as {@link #describe} shows it, from the
   * instance that owns it: null when there is none. Asked with the caller's {@code authorization}.
   *
   * @throws IllegalStateException when the owner cannot be asked or the ledger is not running
   */
  ObjectNode entry(String tenant, String key, String authorization) {
    if (streams.state() != KafkaStreams.State.RUNNING) {
      throw new IllegalStateException("the ledger is not running (" + streams.state() + ")");
    }
    KeyQueryMetadata owner =
        streams.queryMetadataForKey(LedgerStore.NAME, key, Serdes.String().serializer());
    if (owner != null
        && owner != KeyQueryMetadata.NOT_AVAILABLE
        && !owner.activeHost().equals(self)) {
      try {
        HttpResponse<String> response =
            askOwner(owner.activeHost(), "/v1/keys/", tenant, key, "?result=1", authorization);
        if (response.statusCode() == 404) {
          return null;
        }
        if (response.statusCode() != 200) {
          throw new IllegalStateException(
              "the instance that owns the key answered HTTP " + response.statusCode());
        }
        return (ObjectNode) JSON.readTree(response.body());
      } catch (IOException e) {
        throw new IllegalStateException(
            "the instance that owns the key ("
                + owner.activeHost().host()
                + ":"
                + owner.activeHost().port()
                + ") cannot be reached");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
    }
    ReadOnlyKeyValueStore<String, LedgerEntry> store =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.NAME, QueryableStoreTypes.<String, LedgerEntry>keyValueStore()));
    LedgerEntry entry = store.get(LedgerStore.key(tenant, key));
    return entry == null ? null : describe(entry, true);
  }

  /** A request another instance forwarded: answered for this instance alone. */
  private static boolean isForwarded(HttpExchange exchange) {
    return exchange.getRequestHeaders().containsKey("X-Effectledger-Forwarded");
  }

  private static void answerJson(HttpExchange exchange, JsonNode body) throws IOException {
    answer(exchange, 200, "application/json", body.toString());
  }

  void serve(KafkaStreams ledger) {
    serve(ledger, null);
  }

  /** Serves {@code ledger}, and on /v1/policy what {@code policies} (null: not read live) holds. */
  void serve(KafkaStreams ledger, LivePolicies policies) {
    this.livePolicies = policies;
    this.streams = ledger;
    server.start();
  }

  HostInfo address() {
    return self;
  }

  /**
   * The address the other instances know this one by ({@code application.server}), when it is not
   * the one it listens on (a wildcard such as {@code 0.0.0.0}): how it tells itself from the others
   * in Kafka Streams' metadata, so it neither asks itself over HTTP nor counts itself twice.
   */
  /** Where /v1/overview takes the double effects this processor saw from. */
  void doubleEffects(
      java.util.function.Supplier<java.util.List<MicrometerObserver.DoubleEffect>> seen) {
    this.doubleEffects = seen;
  }

  void advertisedAs(String applicationServer) {
    this.self = HostInfo.buildFromEndpoint(applicationServer);
  }

  int port() {
    return server.getAddress().getPort();
  }

  /**
   * {@code /v1/keys/...}: the entry as operators see it ({@link #describe}); {@code
   * /v1/results/...}: the key's answer as a reply ({@link ReplyJson}, result included), for the
   * gateway's callers.
   */
  private void key(HttpExchange exchange, String route, boolean asReply) throws IOException {
    String[] parts = exchange.getRequestURI().getRawPath().substring(route.length()).split("/", -1);
    if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
      answer(exchange, 400, "application/json", "{\"error\":\"use " + route + "{tenant}/{key}\"}");
      return;
    }
    String tenant = URLDecoder.decode(parts[0], StandardCharsets.UTF_8);
    String key = URLDecoder.decode(parts[1], StandardCharsets.UTF_8);
    if (streams.state() != KafkaStreams.State.RUNNING) {
      answer(
          exchange, 503, "application/json", "{\"error\":\"not ready: " + streams.state() + "\"}");
      return;
    }
    KeyQueryMetadata owner =
        streams.queryMetadataForKey(LedgerStore.NAME, key, Serdes.String().serializer());
    boolean forwarded = isForwarded(exchange);
    if (owner != null
        && owner != KeyQueryMetadata.NOT_AVAILABLE
        && !owner.activeHost().equals(self)
        && !forwarded) {
      forward(exchange, owner.activeHost(), route, tenant, key);
      return;
    }
    ReadOnlyKeyValueStore<String, LedgerEntry> store =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.NAME, QueryableStoreTypes.<String, LedgerEntry>keyValueStore()));
    LedgerEntry entry = store.get(LedgerStore.key(tenant, key));
    if (entry == null) {
      answer(exchange, 404, "application/json", "{\"error\":\"no ledger entry for this key\"}");
    } else {
      answer(
          exchange,
          200,
          "application/json",
          (asReply
                  ? ReplyJson.of(Replies.of(entry, true))
                  : describe(entry, "result=1".equals(exchange.getRequestURI().getRawQuery())))
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
    String windowText = null;
    if (query != null) {
      for (String pair : query.split("&")) {
        if (pair.startsWith("window=")) {
          windowText = URLDecoder.decode(pair.substring(7), StandardCharsets.UTF_8);
        }
      }
    }
    Duration window = windowText == null ? null : Durations.parse(windowText).orElse(null);
    if (parts.length != 2 || parts[0].isEmpty() || !parts[1].equals("expiry") || window == null) {
      answer(
          exchange,
          400,
          "application/json",
          "{\"error\":\"use /v1/tools/{tool}/expiry?window=<duration, e.g. 7d>\"}");
      return;
    }
    String tool = URLDecoder.decode(parts[0], StandardCharsets.UTF_8);
    if (streams.state() != KafkaStreams.State.RUNNING) {
      answer(
          exchange, 503, "application/json", "{\"error\":\"not ready: " + streams.state() + "\"}");
      return;
    }
    Instant cutoff = Instant.now().minus(window);
    long settled = 0;
    long expiring = 0;
    ReadOnlyKeyValueStore<String, LedgerEntry> store =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.NAME, QueryableStoreTypes.<String, LedgerEntry>keyValueStore()));
    try (KeyValueIterator<String, LedgerEntry> all = store.all()) {
      while (all.hasNext()) {
        LedgerEntry entry = all.next().value;
        if (entry == null
            || !tool.equals(entry.getTool())
            || (entry.getState() != LedgerState.SUCCEEDED
                && entry.getState() != LedgerState.FAILED)) {
          continue;
        }
        settled++;
        if (entry.getCompletedAt() != null && !entry.getCompletedAt().isAfter(cutoff)) {
          expiring++;
        }
      }
    }
    int instances = 1;
    ArrayNode unreachable = JSON.createArrayNode();
    if (!isForwarded(exchange)) {
      // a scan of each instance's whole store: allow it longer than the console's views
      for (JsonNode counted :
          fanOut(
              exchange.getRequestURI().getRawPath() + "?" + query,
              authorization(exchange),
              unreachable,
              Duration.ofSeconds(30))) {
        settled += counted.path("settled").asLong();
        expiring += counted.path("expiringAtOnce").asLong();
        instances++;
      }
    }
    ObjectNode out =
        JSON.createObjectNode()
            .put("tool", tool)
            .put("window", Durations.format(window))
            .put("settled", settled)
            .put("expiringAtOnce", expiring)
            .put("instances", instances);
    out.set("unreachable", unreachable);
    answer(exchange, 200, "application/json", out.toString());
  }

  /**
   * The entry without its arguments (payloads stay out of operator tools), and with its stored
   * result when {@code withResult} ({@code /v1/keys/...?result=1}, the console's key page: the
   * answer the agent got is what an operator checks against the downstream).
   */
  static ObjectNode describe(LedgerEntry entry, boolean withResult) {
    ObjectNode out =
        JSON.createObjectNode()
            .put("key", entry.getIdempotencyKey())
            .put("tenant", entry.getTenant())
            .put("tool", entry.getTool())
            .put("state", entry.getState().name())
            .put("attempts", entry.getAttempts())
            .put("effectKey", entry.getEffectKey())
            .put("runId", entry.getRunId())
            .put("stepId", entry.getStepId())
            .put("firstSeenAt", entry.getFirstSeenAt().toString())
            .put("lastDispatchedAt", entry.getLastDispatchedAt().toString());
    if (entry.getCompletedAt() != null) {
      out.put("completedAt", entry.getCompletedAt().toString());
    }
    if (entry.getEffectId() != null) {
      out.put("effectId", entry.getEffectId());
    }
    if (entry.getError() != null) {
      out.put("error", entry.getError().getCode());
      out.put("errorMessage", entry.getError().getMessage());
    }
    if (entry.getIncarnation() != null) {
      out.put("incarnation", entry.getIncarnation());
    }
    if (withResult && entry.getResultJson() != null) {
      out.put("result", entry.getResultJson());
    }
    return out;
  }

  private void forward(
      HttpExchange exchange, HostInfo owner, String route, String tenant, String key)
      throws IOException {
    try {
      HttpResponse<String> response =
          askOwner(
              owner,
              route,
              tenant,
              key,
              exchange.getRequestURI().getRawQuery() == null
                  ? ""
                  : "?" + exchange.getRequestURI().getRawQuery(),
              authorization(exchange));
      answer(exchange, response.statusCode(), "application/json", response.body());
    } catch (IOException e) {
      answer(
          exchange,
          502,
          "application/json",
          "{\"error\":\"owner " + owner.host() + ":" + owner.port() + " unreachable\"}");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      answer(exchange, 503, "application/json", "{\"error\":\"interrupted\"}");
    }
  }

  /** Asks {@code owner} for {@code route}'s answer about one key, as a forwarded request. */
  private HttpResponse<String> askOwner(
      HostInfo owner, String route, String tenant, String key, String query, String authorization)
      throws IOException, InterruptedException {
    URI uri =
        URI.create(
            "http://"
                + owner.host()
                + ":"
                + owner.port()
                + route
                + URLEncoder.encode(tenant, StandardCharsets.UTF_8)
                + "/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8)
                + query);
    return forwarder.send(
        HttpRequest.newBuilder(uri)
            .timeout(Duration.ofSeconds(5))
            .header("X-Effectledger-Forwarded", "1")
            .header("Authorization", authorization == null ? "" : authorization)
            .GET()
            .build(),
        HttpResponse.BodyHandlers.ofString());
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
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, bytes.length);
    try (var out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(1);
    handlers.shutdownNow(); // HttpServer.stop leaves its executor's threads running
  }
}
