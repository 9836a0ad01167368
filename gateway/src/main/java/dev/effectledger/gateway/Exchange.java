package dev.effectledger.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.Challenge;
import dev.effectledger.auth.TokenRefused;
import dev.effectledger.schema.Problem;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * One request and its response, answered exactly once: by the route, by the call's answer, by its
 * wait bound, or given up when the caller goes away. Every answer is counted in {@code
 * gateway_requests_total} by tool and status, and timed in {@code gateway_call_wait}.
 */
final class Exchange {

  /** Where every exchange is counted and timed. */
  record Meters(MeterRegistry registry, Timer waits) {
    static Meters on(MeterRegistry registry) {
      return new Meters(
          registry,
          Timer.builder("gateway.call.wait")
              .description("Time from a call's request to its answer")
              .publishPercentiles(0.5, 0.99)
              .register(registry));
    }
  }

  final Request request;
  final Response response;
  final Callback callback;
  final long started = System.nanoTime();
  final AtomicBoolean answered = new AtomicBoolean();
  private final Meters meters;
  volatile String tool = "";

  /** Whether the request's body was read to its end (POST): see {@link #send}. */
  volatile boolean bodyRead;

  volatile Runnable onAbandon = () -> {};

  /** Run once when the exchange ends, answered or abandoned (a call's place among the waiting). */
  volatile Runnable onEnd = () -> {};

  /** The call's span, ended with the exchange; null until the call has one. */
  private volatile Span span;

  private static final AttributeKey<Long> HTTP_STATUS =
      AttributeKey.longKey("http.response.status_code");

  /** Ends {@code callSpan} with the exchange, with the answer's status. */
  void traced(Span callSpan) {
    this.span = callSpan;
    Runnable before = onEnd;
    onEnd =
        () -> {
          before.run();
          callSpan.end();
        };
    if (answered.get()) {
      callSpan.end(); // the caller went away before: its onEnd has run already
    }
  }

  /** Whether an HTTP/1.x caller closes its connection while its call waits: see {@link #waits}. */
  private HangUpWatch hangUp; // guarded by this

  Exchange(Request request, Response response, Callback callback, Meters meters) {
    this.request = request;
    this.response = response;
    this.callback = callback;
    this.meters = meters;
    request.addFailureListener(this::abandoned);
  }

  /** The caller went away before its answer: the call stops waiting, its effect goes on. */
  void abandoned(Throwable failure) {
    if (answered.compareAndSet(false, true)) {
      onAbandon.run();
      onEnd.run();
      count("abandoned");
      callback.failed(failure);
    }
  }

  /**
   * The call now waits for its answer, its body read: a caller that hangs up meanwhile is noticed
   * over HTTP/1.x too ({@link HangUpWatch}), not only when the answer is written.
   */
  synchronized void waits() {
    // Never once answered: Jetty reads the connection again after the answer. The answer marks
    // itself answered before it stops the watch under this lock, so one of the two sees the other.
    if (!answered.get()) {
      hangUp = HangUpWatch.start(request, this::abandoned);
    }
  }

  /** Stops the hang-up watch, once answered; true if the connection must close after it. */
  private synchronized boolean stopWatching() {
    return hangUp != null && hangUp.stop();
  }

  String header(HttpHeader name) {
    return request.getHeaders().get(name);
  }

  List<String> headers(String name) {
    return request.getHeaders().getValuesList(name);
  }

  /** A header passed on as it is (traceparent): absent when missing or longer than 256. */
  String shortHeader(String name) {
    String value = request.getHeaders().get(name);
    return value == null || value.length() > 256 ? null : value;
  }

  /**
   * The caller its bearer token names; empty after answering 401 when there is no token or it is
   * not one of {@code credentials}.
   */
  Optional<Credentials.Caller> authenticate(Credentials credentials) {
    Credentials.Checked checked = credentials.check(header(HttpHeader.AUTHORIZATION));
    Credentials.Caller caller = checked.caller();
    if (caller == null) {
      TokenRefused refused = checked.refused();
      if (refused.reason() == TokenRefused.Reason.KEYS_UNAVAILABLE) {
        problem(
            Problem.of(
                503,
                "unavailable",
                "Service Unavailable",
                refused.getMessage()
                    + "; the gateway cannot check access tokens until it reads them"),
            Map.of("Retry-After", "5"));
        return Optional.empty();
      }
      // with access tokens configured, a refused token is named (RFC 6750 invalid_token)
      boolean accessToken =
          credentials.tokens() != null && refused.reason() != TokenRefused.Reason.MISSING;
      problem(
          Problem.of(
                  401,
                  "unauthorized",
                  "Unauthorized",
                  accessToken
                      ? refused.reason() + ": " + refused.getMessage()
                      : refused.getMessage())
              .field("Authorization"),
          Map.of(
              "WWW-Authenticate",
              accessToken
                  ? "Bearer realm=\"effectledger\", "
                      + Challenge.unauthorized(null, null, refused).substring("Bearer ".length())
                  : "Bearer realm=\"effectledger\""));
      return Optional.empty();
    }
    if (!caller.mayRead() && !caller.mayWrite()) {
      AuthSettings settings = credentials.tokens().settings();
      insufficientScope(
          settings.readScope(),
          "the token has neither " + settings.readScope() + " nor " + settings.writeScope());
      return Optional.empty();
    }
    return Optional.of(caller);
  }

  /** 403: the caller's token lacks {@code scope}. */
  void insufficientScope(String scope, String why) {
    problem(
        Problem.of(403, "insufficient-scope", "Forbidden", why),
        Map.of(
            "WWW-Authenticate",
            "Bearer realm=\"effectledger\", "
                + Challenge.insufficientScope(null, scope, why).substring("Bearer ".length())));
  }

  void send(int status, String type, String body) {
    send(status, type, body.getBytes(StandardCharsets.UTF_8), Map.of());
  }

  void send(int status, String type, byte[] body) {
    send(status, type, body, Map.of());
  }

  void send(int status, String type, byte[] body, Map<String, String> extra) {
    if (!answered.compareAndSet(false, true)) {
      return;
    }
    Span traced = span;
    if (traced != null && traced.isRecording()) {
      traced.setAttribute(HTTP_STATUS, (long) status);
      if (status >= 500) {
        traced.setStatus(StatusCode.ERROR);
      }
    }
    onEnd.run();
    boolean pipelined = stopWatching();
    response.setStatus(status);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, type);
    extra.forEach((k, v) -> response.getHeaders().put(k, v));
    boolean bodyLeft =
        !bodyRead
            && "POST".equals(request.getMethod())
            && request.getLength() != 0
            && request.getConnectionMetaData().getHttpVersion() != HttpVersion.HTTP_2;
    if (bodyLeft || pipelined) {
      // Answered before its body was read (401, 404, 415, ...), or the hang-up watch read the
      // start of the caller's next request, which Jetty will not see: the connection closes after
      // the answer, and says so, so that no client sends its next request on it. (HTTP/2 has no
      // such header: the stream ends and the connection goes on.)
      response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
    response.write(true, ByteBuffer.wrap(body), callback);
  }

  void json(int status, JsonNode body, Map<String, String> extra) {
    count(String.valueOf(status));
    send(status, "application/json", body.toString().getBytes(StandardCharsets.UTF_8), extra);
  }

  void problem(Problem p) {
    problem(p, Map.of());
  }

  void problem(Problem p, Map<String, String> extra) {
    count(String.valueOf(p.status()));
    send(p.status(), Problem.MEDIA_TYPE, p.json().getBytes(StandardCharsets.UTF_8), extra);
  }

  void methodNotAllowed(String allowed) {
    problem(
        Problem.of(
            405,
            "method-not-allowed",
            "Method not allowed",
            request.getMethod() + " is not allowed here; use " + allowed),
        Map.of("Allow", allowed));
  }

  private void count(String status) {
    Counter.builder("gateway.requests")
        .description("Requests by route, tool and status")
        .tag("tool", tool)
        .tag("status", status)
        .register(meters.registry())
        .increment();
    Duration waited = Duration.ofNanos(System.nanoTime() - started);
    Span traced = span;
    if (traced == null) {
      meters.waits().record(waited);
    } else {
      try (Scope scope = traced.makeCurrent()) { // the call's span as the timer's exemplar
        meters.waits().record(waited);
      }
    }
  }
}
