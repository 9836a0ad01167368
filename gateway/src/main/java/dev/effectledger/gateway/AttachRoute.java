package dev.effectledger.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.PendingReply;
import dev.effectledger.client.ReplyRouter;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.QueryString;
import dev.effectledger.schema.ReplyJson;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.util.URIUtil;

/**
 * {@code GET /v1/calls/{key}}: attaches a caller to a call by its key, from any gateway instance.
 * It asks the ledger's query API ({@code /v1/results/{tenant}/{key}}) every {@link #POLL} and hears
 * the key's final replies on the instance's reply topic, until the call settles or the wait ends.
 */
final class AttachRoute {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration POLL = Duration.ofMillis(200);

  /**
   * How long a key the ledger does not know is waited for before 404: a call published a moment ago
   * (a 202's Location, or through another instance) is on the intents topic but not yet in the
   * ledger (found by ClientsIT: a GET right after a 202 was answered 404).
   */
  private static final Duration UNKNOWN_GRACE = Duration.ofSeconds(3);

  static final long INVALID_INTENT = -2;

  private final GatewayConfig config;
  private final Readiness readiness;
  private final ReplyRouter replies;
  private final HttpClient ledger;
  private final ScheduledExecutorService timers;

  AttachRoute(
      GatewayConfig config,
      Readiness readiness,
      ReplyRouter replies,
      HttpClient ledger,
      ScheduledExecutorService timers) {
    this.config = config;
    this.readiness = readiness;
    this.replies = replies;
    this.ledger = ledger;
    this.timers = timers;
  }

  void get(Exchange ex, String rawKey) {
    String key;
    try {
      key = URIUtil.decodePath(rawKey);
    } catch (IllegalArgumentException e) {
      key = "";
    }
    Optional<Credentials.Caller> caller = ex.authenticate(config.credentials());
    if (caller.isEmpty()) {
      return;
    }
    if (key.isEmpty()
        || key.length() > HeaderSyntax.MAX_KEY_LENGTH
        || !key.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
      ex.problem(
          Problem.of(
                  400, "invalid-key", "Invalid key", "a key is 1 to 255 printable ASCII characters")
              .field("{key}"));
      return;
    }
    Duration wait = HeaderSyntax.wait(ex.headers("Prefer"), config.defaultWait(), config.maxWait());
    long intent = intentOf(ex.request.getHttpURI().getQuery());
    if (intent == INVALID_INTENT) {
      ex.problem(
          Problem.of(
                  400,
                  "invalid-query",
                  "Invalid query",
                  "intent is the offset of the call's intent, a whole number from a 202's Location")
              .field("intent"));
      return;
    }
    if (!readiness.canAttach()) {
      HttpMapping.unavailable(ex, readiness.why());
      return;
    }
    new Attach(ex, caller.get(), key, intent, wait).poll();
  }

  /**
   * The {@code intent} of a {@code GET /v1/calls/{key}} query (a 202's Location): the offset of the
   * call's intent; -1 when absent, {@link #INVALID_INTENT} when not a whole number.
   */
  static long intentOf(String query) {
    String value = QueryString.parse(query).get("intent");
    if (value == null) {
      return -1;
    }
    if (value.isEmpty() || value.length() > 19 || !value.chars().allMatch(Character::isDigit)) {
      return INVALID_INTENT;
    }
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      return INVALID_INTENT;
    }
  }

  /**
   * A caller attached to a call by key: polls the ledger until the call settles or the wait ends.
   * With the offset of the call's intent (a 202's Location), a release of the key answers it only
   * if the ledger made it after reading that intent (the rule of {@link PendingReply}, applied here
   * directly: an attached call knows its offset from the start); without, any final reply of the
   * key does.
   */
  private final class Attach implements ReplyRouter.Listener {
    final Exchange ex;
    final Credentials.Caller caller;
    final String key;
    final long intent;
    final long deadline;
    final long unknownUntil;
    final Runnable stopListening;
    volatile ToolResult latest;

    Attach(Exchange ex, Credentials.Caller caller, String key, long intent, Duration wait) {
      this.ex = ex;
      this.caller = caller;
      this.key = key;
      this.intent = intent;
      long now = System.nanoTime();
      this.deadline = now + wait.toNanos();
      this.unknownUntil = now + Math.min(wait.toNanos(), UNKNOWN_GRACE.toNanos());
      this.stopListening = replies.listen(key, this);
      ex.onAbandon = stopListening;
      ex.waits();
    }

    @Override
    public void onReply(ToolResult reply, String forRequest, Long through) {
      if (through != null && intent >= 0 && intent > through) {
        return; // a release of the key's earlier life: the call's intent starts its next one
      }
      if ((reply.getStatus() == ResultStatus.SUCCEEDED || reply.getStatus() == ResultStatus.FAILED)
          && reply.getTenant().equals(caller.tenant())) {
        stopListening.run();
        HttpMapping.answer(ex, ToolResult.newBuilder(reply).setReplayed(true).build(), intent);
      }
    }

    void poll() {
      if (ex.answered.get()) {
        return;
      }
      URI uri =
          config
              .ledgerUrl()
              .resolve(
                  "/v1/results/"
                      + URLEncoder.encode(caller.tenant(), StandardCharsets.UTF_8)
                      + "/"
                      + URLEncoder.encode(key, StandardCharsets.UTF_8));
      HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5));
      if (config.ledgerToken() != null) {
        request.header("Authorization", "Bearer " + config.ledgerToken());
      }
      ledger
          .sendAsync(request.GET().build(), HttpResponse.BodyHandlers.ofString())
          .whenComplete(this::read);
    }

    private void read(HttpResponse<String> response, Throwable error) {
      if (error != null || response.statusCode() == 503 || response.statusCode() == 502) {
        stopListening.run();
        HttpMapping.unavailable(ex, "the ledger at " + config.ledgerUrl() + " did not answer");
        return;
      }
      if (response.statusCode() == 401 || response.statusCode() == 403) {
        stopListening.run();
        ex.problem(
            Problem.of(
                502,
                "ledger-refused-gateway",
                "The ledger refused the gateway",
                "the processors' query API wants a token: set gateway.ledger.token to one of their"
                    + " http.auth.<name> tokens"));
        return;
      }
      if (response.statusCode() == 404) {
        if (latest == null && System.nanoTime() - unknownUntil >= 0) {
          stopListening.run();
          ex.problem(
              Problem.of(
                      404,
                      "unknown-call",
                      "Unknown call",
                      "no call with this key for your tenant (never published, or its window ended)")
                  .key(key));
          return;
        }
      } else if (response.statusCode() == 200) {
        ToolResult reply;
        try {
          reply = ReplyJson.parse(JSON.readTree(response.body()), caller.tenant());
        } catch (IOException | IllegalArgumentException e) {
          stopListening.run();
          ex.problem(
              Problem.of(502, "ledger-answer", "Bad answer from the ledger", e.getMessage()));
          return;
        }
        latest = reply;
        if (reply.getStatus() != ResultStatus.IN_FLIGHT) {
          stopListening.run();
          HttpMapping.answer(ex, reply, intent);
          return;
        }
      } else {
        stopListening.run();
        ex.problem(
            Problem.of(
                502,
                "ledger-answer",
                "Bad answer from the ledger",
                "the ledger answered HTTP " + response.statusCode()));
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        stopListening.run();
        ex.json(
            202,
            latest == null
                ? JSON.createObjectNode().put("key", key).put("status", "IN_FLIGHT")
                : ReplyJson.of(latest),
            HttpMapping.stillRunning(key, intent));
        return;
      }
      timers.schedule(this::poll, Math.min(POLL.toNanos(), left), TimeUnit.NANOSECONDS);
    }
  }
}
