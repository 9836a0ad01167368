package dev.effectledger.embedded;

import static dev.effectledger.embedded.Exchanges.answer;
import static dev.effectledger.embedded.Exchanges.pause;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A payment-style HTTP API on 127.0.0.1 that counts effects per key, for connector and end-to-end
 * tests. {@code POST /charges} with an {@code Idempotency-Key} header acts once per key when {@link
 * #honoursKeys} is on (a repeat gets the stored answer, a concurrent one 409, other parameters
 * 422), and on every request when it is off. {@code GET /charges?key=K} answers whether K acted. A
 * {@link Fault} injected for a key applies to that key's next request only; a {@link #faultMix
 * seeded mix} gives a share of keys a fault on their first request. {@code GET /effects} lists the
 * effect count of every key, {@code GET /inflight} the requests in progress. With {@link #countBy}
 * it also counts effects by a field of the request's body (the business action a request belongs
 * to, whatever key its caller sent), listed by {@code GET /effects?by=field} (any {@code by=} lists
 * the counts by that one field).
 */
public final class CountingDownstream implements AutoCloseable {

  /** A fault injected on a key's first request. */
  public enum Fault {
    /** 503 with Retry-After: 0, before any effect. */
    UNAVAILABLE_BEFORE_EFFECT,
    /** Acts, then holds the answer past any sensible client timeout. */
    HANG_AFTER_EFFECT,
    /** Acts, then drops the connection without an answer. */
    DROP_AFTER_EFFECT,
    /** Acts, then answers 500. */
    ERROR_AFTER_EFFECT,
    /** Acts slowly (after {@link #slow}, 300 ms unless set), then answers normally. */
    SLOW_SUCCESS,
    /** Answers 409 as if the same key were in progress, before any effect. */
    CONFLICT_IN_PROGRESS,
    /** Answers 429 with Retry-After: 0, before any effect. */
    RATE_LIMITED,
    /** Holds the request (the key in progress) as long as a hang lasts, then acts and answers. */
    STALL_BEFORE_EFFECT,
    /**
     * Drops the connection without an answer and without acting: to a client, the same as {@link
     * #DROP_AFTER_EFFECT}; only a lookup tells them apart.
     */
    DROP_BEFORE_EFFECT,
    /** 503 with Retry-After: 0 after {@link #slow} (300 ms unless set), before any effect. */
    SLOW_UNAVAILABLE
  }

  private record Stored(String bodyHash, String response) {}

  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpServer server;
  private final ExecutorService threads =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "counting-downstream");
            t.setDaemon(true);
            return t;
          });
  private final EffectCounts counts = new EffectCounts();
  private final Map<String, Stored> stored = new ConcurrentHashMap<>();
  private final Map<String, String> lastResponse = new ConcurrentHashMap<>();
  private final Map<String, Boolean> inProgress = new ConcurrentHashMap<>();
  private final Map<String, Fault> faults = new ConcurrentHashMap<>();
  private final Map<String, Map<String, String>> traceHeaders = new ConcurrentHashMap<>();
  private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  private final Duration hang;
  private final AtomicInteger concurrent = new AtomicInteger();
  private final AtomicInteger maxConcurrent = new AtomicInteger();
  private volatile boolean honoursKeys = true;
  private volatile Duration latency = Duration.ZERO;
  private volatile FaultPlan plan = FaultPlan.NONE;
  private volatile Duration slow = Duration.ofMillis(300);

  private CountingDownstream(HttpServer server, Duration hang) {
    this.server = server;
    this.hang = hang;
  }

  /** Starts on a free loopback port; a hanging answer is held for {@code hang}. */
  public static CountingDownstream start(Duration hang) {
    return start(0, hang);
  }

  /**
   * Starts on 127.0.0.1:{@code port} (0 picks a free one); a hanging answer is held for {@code
   * hang}.
   */
  public static CountingDownstream start(int port, Duration hang) {
    return start(new InetSocketAddress("127.0.0.1", port), hang);
  }

  /** Starts on {@code address}; for a container, bind 0.0.0.0. */
  public static CountingDownstream start(InetSocketAddress address, Duration hang) {
    try {
      HttpServer http = JdkHttpServers.create(address, 0);
      CountingDownstream downstream = new CountingDownstream(http, hang);
      http.setExecutor(downstream.threads);
      http.createContext("/charges", downstream::handle);
      http.createContext("/effects", downstream::listEffects);
      http.createContext("/inflight", downstream::inFlight);
      http.start();
      return downstream;
    } catch (IOException e) {
      throw new UncheckedIOException("Could not start the counting downstream", e);
    }
  }

  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/charges";
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** Whether the API dedups by Idempotency-Key (true by default). */
  public CountingDownstream honoursKeys(boolean honours) {
    this.honoursKeys = honours;
    return this;
  }

  /**
   * Counts effects by the text at {@code pointer} (RFC 6901) of each request's body too: how many
   * times one business action took effect, whatever keys its callers sent. A body without it counts
   * under {@code ""}.
   */
  public CountingDownstream countBy(String pointer) {
    counts.countBy(pointer);
    return this;
  }

  /** Effects whose body held {@code value} at the {@link #countBy} pointer. */
  public int effectsBy(String value) {
    return counts.effectsBy(value);
  }

  /** Effects by the value at the {@link #countBy} pointer. */
  public Map<String, Integer> effectsByField() {
    return counts.effectsByField();
  }

  /** Time every effect takes, to make concurrency observable. */
  public CountingDownstream latency(Duration perEffect) {
    this.latency = perEffect;
    return this;
  }

  /** The most requests that were being handled at once. */
  public int maxConcurrent() {
    return maxConcurrent.get();
  }

  /**
   * From now on, {@code percent} of keys (chosen by a hash of the key and {@code seed}, so the same
   * keys every run) meet one of the faults that matter for exactly-once on their first request: 503
   * before the effect, or the answer held, dropped or a 500 after it.
   */
  public CountingDownstream faultPlan(long seed, int percent) {
    this.plan = FaultPlan.evenly(seed, percent);
    return this;
  }

  /**
   * From now on, each fault of {@code percents} meets its share (in percent) of keys on their first
   * request; keys are chosen by a hash of the key and {@code seed}, the same keys every run.
   */
  public CountingDownstream faultMix(long seed, Map<Fault, Integer> percents) {
    this.plan = new FaultPlan(seed, percents);
    return this;
  }

  /**
   * How long a {@link Fault#SLOW_SUCCESS} waits before it acts, and a {@link
   * Fault#SLOW_UNAVAILABLE} before it refuses.
   */
  public CountingDownstream slow(Duration delay) {
    this.slow = delay;
    return this;
  }

  /** Requests being handled now. */
  public int inFlight() {
    return concurrent.get();
  }

  public void inject(String key, Fault fault) {
    faults.put(key, fault);
  }

  /**
   * From now on, requests for {@code key} wait before acting until {@link #releaseHeld} (at most a
   * minute), so a test decides when an effect lands, and in which order effects finish.
   */
  public CountingDownstream holdBeforeEffect(String key) {
    gates.putIfAbsent(key, new CountDownLatch(1));
    return this;
  }

  /** Lets the requests held for {@code key} act. */
  public void releaseHeld(String key) {
    CountDownLatch gate = gates.remove(key);
    if (gate != null) {
      gate.countDown();
    }
  }

  /** The trace headers {@link #traceHeader} remembers. */
  private static final java.util.List<String> TRACE_HEADERS =
      java.util.List.of("traceparent", "X-Trace-Id");

  /**
   * The trace header {@code name} ({@code traceparent} or {@code X-Trace-Id}) the latest request
   * for {@code key} carried; null when none.
   */
  public String traceHeader(String key, String name) {
    return traceHeaders.getOrDefault(key, Map.of()).get(name);
  }

  /** Effects performed for {@code key}. */
  public int effects(String key) {
    return counts.effects(key);
  }

  /** Requests received for {@code key}, effects or not. */
  public int requests(String key) {
    return counts.requests(key);
  }

  public Map<String, Integer> effectsByKey() {
    return counts.effectsByKey();
  }

  public int totalEffects() {
    return counts.total();
  }

  private void handle(HttpExchange exchange) throws IOException {
    maxConcurrent.accumulateAndGet(concurrent.incrementAndGet(), Math::max);
    try (exchange) {
      if ("GET".equals(exchange.getRequestMethod())) {
        lookup(exchange);
        return;
      }
      String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
      if (key == null) {
        answer(exchange, 400, "{\"error\":\"Idempotency-Key header required\"}");
        return;
      }
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      Map<String, String> traced = new java.util.HashMap<>();
      for (String name : TRACE_HEADERS) {
        String value = exchange.getRequestHeaders().getFirst(name);
        if (value != null) {
          traced.put(name, value);
        }
      }
      traceHeaders.put(key, traced);
      int seen = counts.request(key);
      Fault fault = faults.remove(key);
      if (fault == null && seen == 1) {
        fault = plan.faultOf(key);
      }
      if (fault == Fault.SLOW_UNAVAILABLE) {
        pause(slow);
      }
      if (fault == Fault.UNAVAILABLE_BEFORE_EFFECT
          || fault == Fault.RATE_LIMITED
          || fault == Fault.SLOW_UNAVAILABLE) {
        exchange.getResponseHeaders().add("Retry-After", "0");
        answer(exchange, fault == Fault.RATE_LIMITED ? 429 : 503, "{\"error\":\"try later\"}");
        return;
      }
      if (fault == Fault.DROP_BEFORE_EFFECT) {
        return; // no answer: closing the exchange without one drops the connection
      }
      if (fault == Fault.CONFLICT_IN_PROGRESS) {
        answer(exchange, 409, "{\"error\":\"a request with this key is in progress\"}");
        return;
      }
      if (honoursKeys) {
        Stored previous = stored.get(key);
        if (previous != null) {
          answer(
              exchange,
              previous.bodyHash().equals(hash(body)) ? 200 : 422,
              previous.bodyHash().equals(hash(body))
                  ? previous.response()
                  : "{\"error\":\"key reused with other parameters\"}");
          return;
        }
        if (inProgress.putIfAbsent(key, Boolean.TRUE) != null) {
          answer(exchange, 409, "{\"error\":\"a request with this key is in progress\"}");
          return;
        }
      }
      try {
        String response = act(key, body, fault);
        if (fault == Fault.HANG_AFTER_EFFECT) {
          pause(hang);
        } else if (fault == Fault.DROP_AFTER_EFFECT) {
          return; // no answer: closing the exchange without one drops the connection
        } else if (fault == Fault.ERROR_AFTER_EFFECT) {
          answer(exchange, 500, "{\"error\":\"internal error\"}");
          return;
        }
        answer(exchange, 201, response);
      } finally {
        inProgress.remove(key);
      }
    } finally {
      concurrent.decrementAndGet();
    }
  }

  private String act(String key, String body, Fault fault) {
    CountDownLatch gate = gates.get(key);
    if (gate != null) {
      try {
        gate.await(1, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (fault == Fault.SLOW_SUCCESS) {
      pause(slow);
    } else if (fault == Fault.STALL_BEFORE_EFFECT) {
      pause(hang);
    }
    if (!latency.isZero()) {
      pause(latency);
    }
    counts.effect(key, body);
    String response =
        JSON.createObjectNode().put("id", "ch_" + ids.incrementAndGet()).put("key", key).toString();
    if (honoursKeys) {
      stored.put(key, new Stored(hash(body), response));
    }
    lastResponse.put(key, response);
    return response;
  }

  private void listEffects(HttpExchange exchange) throws IOException {
    try (exchange) {
      String query = exchange.getRequestURI().getRawQuery();
      answer(
          exchange,
          200,
          JSON.writeValueAsString(
              query != null && query.startsWith("by=") ? effectsByField() : effectsByKey()));
    }
  }

  private void inFlight(HttpExchange exchange) throws IOException {
    try (exchange) {
      answer(exchange, 200, Integer.toString(concurrent.get()));
    }
  }

  private void lookup(HttpExchange exchange) throws IOException {
    String query = exchange.getRequestURI().getRawQuery();
    String key =
        query == null || !query.startsWith("key=")
            ? ""
            : URLDecoder.decode(query.substring(4), StandardCharsets.UTF_8);
    Stored previous = stored.get(key);
    String last = lastResponse.get(key);
    if (previous != null) {
      answer(exchange, 200, previous.response());
    } else if (last != null) {
      answer(
          exchange, 200,
          last); // a downstream that ignores keys still records them, as metadata to search by
    } else {
      answer(exchange, 404, "{\"error\":\"no charge for key\"}");
    }
  }

  private static String hash(String body) {
    try {
      return JSON.readTree(body).toString();
    } catch (IOException e) {
      return body;
    }
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
