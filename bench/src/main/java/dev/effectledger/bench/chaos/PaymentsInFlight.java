package dev.effectledger.bench.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The payment API's requests in progress, as the chaos run reads them before an executor kill. */
final class PaymentsInFlight {

  private PaymentsInFlight() {}

  /**
   * Waits until the payment API has at least {@code wanted} requests in progress, or {@code limit};
   * returns how many it had.
   */
  static int await(HttpClient http, int downstreamPort, int wanted, Duration limit)
      throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    int seen = 0;
    while (System.nanoTime() < deadline) {
      try {
        seen =
            Integer.parseInt(
                http.send(
                        HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + downstreamPort + "/inflight"))
                            .timeout(Duration.ofSeconds(2))
                            .build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body()
                    .trim());
      } catch (IOException | NumberFormatException e) {
        seen = 0;
      }
      if (seen >= wanted) {
        return seen;
      }
      Thread.sleep(20); // polling the payment API's in-flight count
    }
    return seen;
  }
}
