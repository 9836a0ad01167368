package dev.effectledger.gateway;

import dev.effectledger.client.ReplyRouter;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the gateway can take calls ({@code /readyz}): its reply consumer positioned, a broker
 * answering, the ledger's {@code /readyz} answering 200. {@link #probe} runs every second; a call
 * that comes while it is not ready is answered 503 with the reason, and nothing is published. Not
 * being ready while the ledger starts is expected: it is logged only after a grace, or once the
 * gateway had been ready, and then once per reason.
 */
final class Readiness {

  private static final Logger log = LoggerFactory.getLogger(Readiness.class);
  static final Duration PROBE = Duration.ofSeconds(1);
  private static final long STARTUP_GRACE_NANOS = TimeUnit.SECONDS.toNanos(30);

  private final GatewayConfig config;
  private final Admin admin;
  private final HttpClient ledger;
  private final ReplyRouter replies;
  private final long startedAt = System.nanoTime();
  private volatile boolean brokerUp;
  private volatile boolean ledgerUp;
  private volatile String notReady = "starting";
  private boolean everReady; // the probe's thread only
  private String warned; // the probe's thread only

  Readiness(GatewayConfig config, Admin admin, HttpClient ledger, ReplyRouter replies) {
    this.config = config;
    this.admin = admin;
    this.ledger = ledger;
    this.replies = replies;
  }

  /** Why the gateway cannot take calls now; null when it can. */
  String why() {
    if (replies.failure() != null) {
      return "the reply consumer stopped: " + replies.failure().getMessage();
    }
    if (!replies.ready()) {
      return "the reply consumer is not yet positioned on " + config.replyTopic();
    }
    if (!brokerUp) {
      return "no Kafka broker answers at " + config.kafka().getProperty("bootstrap.servers");
    }
    if (!ledgerUp) {
      return "the ledger at " + config.ledgerUrl() + " is not ready (its /readyz)";
    }
    return null;
  }

  /**
   * Whether a caller can attach to a call ({@code GET /v1/calls/{key}}): the reply consumer is
   * positioned and either the broker or the ledger answers.
   */
  boolean canAttach() {
    return replies.ready() && (brokerUp || ledgerUp);
  }

  /** Asks the broker and the ledger, and logs a change. */
  void probe() {
    try {
      brokerUp =
          !admin
              .describeCluster(new DescribeClusterOptions().timeoutMs(2_000))
              .nodes()
              .get(3, TimeUnit.SECONDS)
              .isEmpty();
    } catch (Exception e) {
      brokerUp = false;
    }
    try {
      HttpResponse<Void> r =
          ledger.send(
              HttpRequest.newBuilder(config.ledgerUrl().resolve("/readyz"))
                  .timeout(Duration.ofSeconds(2))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.discarding());
      ledgerUp = r.statusCode() == 200;
    } catch (IOException e) {
      ledgerUp = false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    String why = why();
    if (why == null) {
      if (notReady != null) {
        log.info("Gateway {} is ready", config.instance());
      }
      everReady = true;
      warned = null;
    } else if (!why.equals(warned)
        && (everReady || System.nanoTime() - startedAt > STARTUP_GRACE_NANOS)) {
      log.warn("Gateway {} is not ready, calls are answered 503: {}", config.instance(), why);
      warned = why;
    }
    notReady = why;
  }
}
