package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.gateway.Gateway;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * Waits on a gateway's readiness that say, when they give up, what the gateway's {@code /readyz}
 * answered (why it is not ready), not only that it was not.
 */
final class GatewayReadiness {

  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private GatewayReadiness() {}

  /** Waits up to {@code atMost} for {@code gateway} ({@code what}, for the message) to be ready. */
  static void awaitReady(String what, Gateway gateway, Duration atMost) {
    awaitReadiness(what, gateway, true, atMost);
  }

  /** Waits up to {@code atMost} for {@code gateway} ({@code what}) to say it is not ready. */
  static void awaitNotReady(String what, Gateway gateway, Duration atMost) {
    awaitReadiness(what, gateway, false, atMost);
  }

  private static void awaitReadiness(String what, Gateway gateway, boolean ready, Duration atMost) {
    await(what + (ready ? " is ready" : " is not ready"))
        .atMost(atMost)
        .untilAsserted(
            () ->
                assertThat(gateway.isReady())
                    .as(() -> what + " ready; its /readyz: " + readyz(gateway))
                    .isEqualTo(ready));
  }

  /**
   * What {@code gateway}'s {@code /readyz} answers (status and body), or why it could not be asked
   * (a TLS gateway this plain client does not trust, for one).
   */
  static String readyz(Gateway gateway) {
    try {
      HttpResponse<String> response =
          HTTP.send(
              HttpRequest.newBuilder(gateway.uri().resolve("/readyz"))
                  .timeout(Duration.ofSeconds(2))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return "HTTP " + response.statusCode() + " " + response.body().strip();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "not asked (interrupted)";
    } catch (Exception e) {
      return "not answered (" + e + ")";
    }
  }
}
