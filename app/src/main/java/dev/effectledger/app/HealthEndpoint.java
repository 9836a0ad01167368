package dev.effectledger.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.embedded.JdkHttpServers;
import dev.effectledger.gateway.PrometheusMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.function.Supplier;

/**
 * {@code /healthz} (200 while the process serves), {@code /readyz} (200 while {@code notReady}
 * answers null, else 503 with its reason) and, when given, {@code /metrics} for a command that has
 * no other HTTP endpoint (the executor), so an orchestrator can probe and scrape it. On the JDK's
 * server: two fixed answers need no framework.
 */
final class HealthEndpoint implements AutoCloseable {

  private final HttpServer server;

  private HealthEndpoint(HttpServer server) {
    this.server = server;
  }

  /**
   * Listens on {@code host:port} (0 picks a free port).
   *
   * @param notReady null when ready, else why not
   */
  static HealthEndpoint start(String host, int port, String setting, Supplier<String> notReady) {
    return start(host, port, setting, notReady, null);
  }

  /**
   * As {@link #start(String, int, String, Supplier)}, with {@code /metrics} from {@code metrics}
   * (none when null), in the format the scraper asks for ({@link PrometheusMetrics#scrape}).
   */
  static HealthEndpoint start(
      String host,
      int port,
      String setting,
      Supplier<String> notReady,
      PrometheusMeterRegistry metrics) {
    HttpServer server;
    try {
      server = JdkHttpServers.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot listen on " + host + ":" + port + " (" + setting + "): " + e.getMessage(), e);
    }
    server.createContext("/healthz", ex -> answer(ex, 200, "ok\n", TEXT));
    server.createContext(
        "/readyz",
        ex -> {
          String reason = notReady.get();
          answer(
              ex,
              reason == null ? 200 : 503,
              reason == null ? "ready\n" : "not ready: " + reason + "\n",
              TEXT);
        });
    if (metrics != null) {
      server.createContext(
          "/metrics",
          ex -> {
            PrometheusMetrics.Scrape scrape =
                PrometheusMetrics.scrape(metrics, ex.getRequestHeaders().getFirst("Accept"));
            answer(ex, 200, scrape.body(), scrape.contentType());
          });
    }
    server.start();
    return new HealthEndpoint(server);
  }

  int port() {
    return server.getAddress().getPort();
  }

  private static final String TEXT = "text/plain; charset=utf-8";

  private static void answer(HttpExchange exchange, int status, String body, String type)
      throws IOException {
    JdkHttpServers.answer(exchange, status, type, body);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
