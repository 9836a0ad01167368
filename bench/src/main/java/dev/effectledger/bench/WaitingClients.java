package dev.effectledger.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The callers of {@link GatewayBench}'s waiting measurement, in a JVM of their own: {@code N} calls
 * at once to a tool no executor runs, each asking to wait 300 s. Ends when its parent destroys it.
 */
final class WaitingClients {

  private WaitingClients() {}

  public static void main(String[] args) throws Exception {
    URI gateway = URI.create(args[0]);
    String token = args[1];
    int calls = Integer.parseInt(args[2]);
    HttpClient http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(30))
            .build();
    AtomicInteger failed = new AtomicInteger();
    for (int i = 0; i < calls; i++) {
      http.sendAsync(
              HttpRequest.newBuilder(gateway.resolve("/v1/tools/parked_call/calls"))
                  .timeout(Duration.ofSeconds(600))
                  .header("Authorization", "Bearer " + token)
                  .header("Content-Type", "application/json")
                  .header("Prefer", "wait=300")
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"arguments\":{\"n\":"
                              + i
                              + "},\"step\":{\"run\":\"parked\",\"step\":\"s-"
                              + i
                              + "\"}}"))
                  .build(),
              HttpResponse.BodyHandlers.discarding())
          .whenComplete(
              (r, e) -> {
                if (e != null && failed.incrementAndGet() == 1) {
                  System.out.println("[waiting-clients] a call failed: " + e);
                }
              });
      if (i % 500 == 499) {
        TimeUnit.MILLISECONDS.sleep(50); // let connections open
      }
    }
    TimeUnit.MINUTES.sleep(10);
  }
}
