package dev.effectledger.embedded;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.time.Duration;

/** How {@link CountingDownstream} answers an exchange, and how it waits when simulating latency. */
final class Exchanges {

  private Exchanges() {}

  /** Answers {@code body} as JSON with {@code status}. */
  static void answer(HttpExchange exchange, int status, String body) throws IOException {
    JdkHttpServers.answer(exchange, status, "application/json", body);
  }

  static void pause(Duration duration) {
    try {
      Thread.sleep(duration.toMillis()); // simulated downstream latency, not synchronisation
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
