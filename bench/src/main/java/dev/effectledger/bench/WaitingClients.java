package dev.effectledger.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.client.StringRequestContent;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.http2.client.HTTP2Client;
import org.eclipse.jetty.http2.client.transport.HttpClientTransportOverHTTP2;

/**
 * The callers of {@link GatewayBench}'s waiting measurement, in a JVM of their own: {@code N} calls
 * at once to a tool no executor runs, each asking to wait 300 s, over HTTP/1.1 (a connection each)
 * or HTTP/2 ({@code 2}: h2c, streams on a few connections). Ends when its parent destroys it.
 */
final class WaitingClients {

  private WaitingClients() {}

  public static void main(String[] args) throws Exception {
    URI gateway = URI.create(args[0]);
    String token = args[1];
    int calls = Integer.parseInt(args[2]);
    boolean http2 = args.length > 3 && args[3].equals("2");
    AtomicInteger failed = new AtomicInteger();
    if (http2) {
      viaHttp2(gateway, token, calls, failed);
    } else {
      viaHttp11(gateway, token, calls, failed);
    }
    TimeUnit.MINUTES.sleep(10);
  }

  private static String body(int i, String run) {
    return "{\"arguments\":{\"n\":"
        + i
        + "},\"step\":{\"run\":\""
        + run
        + "\",\"step\":\"s-"
        + i
        + "\"}}";
  }

  private static void failed(AtomicInteger failed, Throwable e) {
    if (e != null && failed.incrementAndGet() == 1) {
      System.out.println("[waiting-clients] a call failed: " + e);
    }
  }

  private static void viaHttp11(URI gateway, String token, int calls, AtomicInteger failed)
      throws Exception {
    HttpClient http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(30))
            .build();
    for (int i = 0; i < calls; i++) {
      http.sendAsync(
              HttpRequest.newBuilder(gateway.resolve("/v1/tools/parked_call/calls"))
                  .timeout(Duration.ofSeconds(600))
                  .header("Authorization", "Bearer " + token)
                  .header("Content-Type", "application/json")
                  .header("Prefer", "wait=300")
                  .POST(HttpRequest.BodyPublishers.ofString(body(i, "parked-h1")))
                  .build(),
              HttpResponse.BodyHandlers.discarding())
          .whenComplete((r, e) -> failed(failed, e));
      if (i % 500 == 499) {
        TimeUnit.MILLISECONDS.sleep(50); // let connections open
      }
    }
  }

  private static void viaHttp2(URI gateway, String token, int calls, AtomicInteger failed)
      throws Exception {
    org.eclipse.jetty.client.HttpClient http =
        new org.eclipse.jetty.client.HttpClient(
            new HttpClientTransportOverHTTP2(new HTTP2Client()));
    http.setMaxRequestsQueuedPerDestination(calls + 1);
    http.setIdleTimeout(TimeUnit.MINUTES.toMillis(10));
    http.start();
    for (int i = 0; i < calls; i++) {
      http.newRequest(gateway.resolve("/v1/tools/parked_call/calls"))
          .method(HttpMethod.POST)
          .headers(
              h -> h.put(HttpHeader.AUTHORIZATION, "Bearer " + token).put("Prefer", "wait=300"))
          .timeout(600, TimeUnit.SECONDS)
          .body(new StringRequestContent("application/json", body(i, "parked-h2")))
          .send(result -> failed(failed, result.getFailure()));
      if (i % 500 == 499) {
        TimeUnit.MILLISECONDS.sleep(50);
      }
    }
  }
}
