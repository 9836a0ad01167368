package dev.effectledger.app.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.client.CallError;
import dev.effectledger.client.CallOptions;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.CallResults;
import dev.effectledger.client.DerivedKey;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link ToolCalls} over the HTTP gateway, as an agent in any language would call it: {@code POST
 * /v1/tools/{tool}/calls} with a bearer token and {@code Prefer: wait}, then {@code GET
 * /v1/calls/{key}} while the answer is 202 or 409, and again after {@code Retry-After} on 503. What
 * {@code effectledger demo --via gateway} drives its workload through. Asynchronous on the JDK's
 * client: a waiting call holds no thread.
 */
final class GatewayToolCalls implements ToolCalls {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long LONGEST_WAIT_SECONDS = 30;

  private final URI base;
  private final String token;
  private final ToolPolicies policies;
  private final Duration timeout;
  private final HttpClient http;

  GatewayToolCalls(URI base, String token, ToolPolicies policies, Duration timeout) {
    this.base = base;
    this.token = token;
    this.policies = policies;
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  }

  /** The key the gateway derives: the same algorithm, with the tool's key rules from tools.yaml. */
  @Override
  public DerivedKey keyOf(ToolCall call) {
    KeyRules rules =
        Optional.ofNullable(policies.tools().get(call.tool()))
            .map(ToolPolicy::key)
            .map(k -> new KeyRules(k.ignore(), k.require()))
            .orElse(KeyRules.NONE);
    return IdempotencyKeys.derive(call.step(), call.tool(), call.argumentsJson(), rules);
  }

  @Override
  public CompletableFuture<CallResult> invoke(ToolCall call, CallOptions options) {
    long deadline = System.nanoTime() + timeout.toNanos();
    return post(call, deadline);
  }

  private CompletableFuture<CallResult> post(ToolCall call, long deadline) {
    ObjectNode body = JSON.createObjectNode();
    try {
      body.set("arguments", JSON.readTree(call.argumentsJson()));
    } catch (IOException e) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException("arguments are not JSON: " + e.getMessage(), e));
    }
    body.putObject("step")
        .put("run", call.step().runId())
        .put("step", call.step().stepId())
        .put("scope", call.step().businessScope());
    HttpRequest request =
        request(
                "/v1/tools/" + URLEncoder.encode(call.tool(), StandardCharsets.UTF_8) + "/calls",
                deadline)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
            .build();
    return send(request, call, deadline, () -> post(call, deadline));
  }

  private CompletableFuture<CallResult> attach(String location, ToolCall call, long deadline) {
    if (System.nanoTime() >= deadline) {
      return CompletableFuture.completedFuture(
          new CallResult.StillRunning(
              keyOf(call).key(), call, CallResult.StillRunning.Reason.TIMED_OUT));
    }
    HttpRequest request = request(location, deadline).GET().build();
    return send(request, call, deadline, () -> attach(location, call, deadline));
  }

  private HttpRequest.Builder request(String path, long deadline) {
    long seconds =
        Math.max(
            0,
            Math.min(
                LONGEST_WAIT_SECONDS,
                TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime())));
    return HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(seconds + 10))
        .header("Authorization", "Bearer " + token)
        .header("Prefer", "wait=" + seconds);
  }

  private CompletableFuture<CallResult> send(
      HttpRequest request,
      ToolCall call,
      long deadline,
      java.util.function.Supplier<CompletableFuture<CallResult>> again) {
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .handle(
            (response, failure) -> {
              if (failure != null) {
                // The connection broke (a gateway restarting): the same call again is safe.
                return later(Duration.ofMillis(500), deadline, call, again);
              }
              return answer(response, call, deadline, again);
            })
        .thenCompose(f -> f);
  }

  private CompletableFuture<CallResult> answer(
      HttpResponse<String> response,
      ToolCall call,
      long deadline,
      java.util.function.Supplier<CompletableFuture<CallResult>> again) {
    JsonNode body;
    try {
      body = JSON.readTree(response.body());
    } catch (IOException e) {
      return CompletableFuture.failedFuture(
          new IllegalStateException(
              "the gateway answered "
                  + response.statusCode()
                  + " with a body that is not JSON: "
                  + response.body()));
    }
    // Every answer names its key; derive it only for one that does not.
    String key = body.hasNonNull("key") ? body.get("key").asText() : keyOf(call).key();
    int status = response.statusCode();
    if (status == 503) {
      return later(retryAfter(response), deadline, call, again);
    }
    // 200 and 202 carry the reply; a problem that answers for the ledger carries it as "call".
    JsonNode replyJson = status == 200 || status == 202 ? body : body.get("call");
    if (replyJson == null) {
      return done(new CallResult.Rejected(key, problem(body)));
    }
    ToolResult reply = ReplyJson.parse(replyJson, call.step().tenant());
    boolean duplicateInFlight =
        reply.getError() != null && "DUPLICATE_IN_FLIGHT".equals(reply.getError().getCode());
    if (reply.getStatus() == ResultStatus.IN_FLIGHT || duplicateInFlight) {
      // Still running (202 at the wait bound), or the same call running under a refuse policy
      // (409): wait for its answer, as the Java client does.
      return attach(location(response, key), call, deadline);
    }
    return done(CallResults.of(reply));
  }

  private CompletableFuture<CallResult> later(
      Duration delay,
      long deadline,
      ToolCall call,
      java.util.function.Supplier<CompletableFuture<CallResult>> again) {
    if (System.nanoTime() + delay.toNanos() >= deadline) {
      return CompletableFuture.failedFuture(
          new IllegalStateException(
              "the gateway at "
                  + base
                  + " stayed unavailable until the call's timeout; nothing was published"));
    }
    return CompletableFuture.supplyAsync(
            again, CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS))
        .thenCompose(f -> f);
  }

  private static Duration retryAfter(HttpResponse<String> response) {
    return response
        .headers()
        .firstValue("Retry-After")
        .map(
            s -> {
              try {
                return Duration.ofSeconds(Long.parseLong(s.trim()));
              } catch (NumberFormatException e) {
                return Duration.ofSeconds(1);
              }
            })
        .orElse(Duration.ofSeconds(1));
  }

  private static String location(HttpResponse<String> response, String key) {
    return response.headers().firstValue("Location").orElse("/v1/calls/" + encode(key));
  }

  private static String encode(String key) {
    return URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** A problem of the gateway's own (bad input, credentials): its {@code code}, or its type. */
  private static CallError problem(JsonNode problem) {
    String type = problem.path("type").asText("");
    String code =
        problem.path("code").asText(type.substring(type.lastIndexOf(':') + 1).toUpperCase());
    return new CallError(
        code.isEmpty() ? "HTTP_" + problem.path("status").asInt() : code,
        problem.path("detail").asText(),
        problem.path("retriable").asBoolean(false),
        problem.path("correctiveAction").asText(""));
  }

  private static CompletableFuture<CallResult> done(CallResult result) {
    return CompletableFuture.completedFuture(result);
  }

  @Override
  public void close() {
    // The JDK client frees its connections when collected; calls in flight complete or fail.
  }
}
