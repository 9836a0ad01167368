package dev.effectledger.app.agents;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Java side of the agent-runtime eval (the TypeScript side is clients/typescript/test-agents,
 * harness.ts): requests meaning one payment each, the renderings a scripted model re-plans them
 * with, the hand-written tool that pays without the ledger, and the table rows from the payment
 * API's counts per invoice.
 */
public final class EvalRequests {

  /** What a request's scripted model does; see harness.ts. */
  public enum Scenario {
    REPLAN,
    PARALLEL,
    SUBAGENTS
  }

  /** One tool call a scripted model emits. */
  public record Call(String tool, String arguments) {}

  public record Request(String id, String invoice, int amount, Scenario scenario, int replans) {
    /**
     * What the main agent's scripted model emits on its {@code turn} (0 first) for this request:
     * tool calls, or none when it answers in text.
     */
    public List<Call> mainTurn(int turn) {
      switch (scenario) {
        case REPLAN:
          if (turn == 0) {
            return List.of(new Call("get_invoice", "{\"invoice\":\"" + invoice + "\"}"));
          }
          return turn <= 1 + replans
              ? List.of(new Call("pay_invoice", payArguments(turn - 1)))
              : List.of();
        case PARALLEL:
          return turn == 0
              ? List.of(
                  new Call("pay_invoice", payArguments(0)),
                  new Call("pay_invoice", payArguments(0)))
              : List.of();
        default:
          return turn == 0
              ? List.of(
                  new Call("billing_agent", "{\"task\":\"pay invoice " + invoice + "\"}"),
                  new Call("collections_agent", "{\"task\":\"settle invoice " + invoice + "\"}"))
              : List.of();
      }
    }

    /** What a subagent's scripted model emits: it pays (its own rendering), then reports. */
    public List<Call> subagentTurn(int rendering, int turn) {
      return turn == 0 ? List.of(new Call("pay_invoice", payArguments(rendering))) : List.of();
    }

    /** What the user says; the scripted models read the invoice back from it. */
    public String userText() {
      return "Please pay invoice " + invoice + " (" + amount + " EUR). [scenario " + scenario + "]";
    }

    /** The n-th rendering of the payment: keys in another order, another memo; one action. */
    public String payArguments(int n) {
      String memo =
          List.of("paying as asked", "settling " + invoice, "retrying the payment", "one more try")
              .get(n % 4);
      ObjectNode args = JSON.createObjectNode();
      if (n % 2 == 0) {
        args.put("invoice", invoice).put("amount", amount).put("currency", "EUR").put("memo", memo);
      } else {
        args.put("memo", memo).put("currency", "EUR").put("amount", amount).put("invoice", invoice);
      }
      return args.toString();
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern INVOICE = Pattern.compile("invoice (\\S+) ");
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private final Map<String, Request> byInvoice = new LinkedHashMap<>();

  public EvalRequests(String tag, int count, long seed) {
    Random random = new Random(seed);
    Scenario[] scenarios = Scenario.values();
    for (int i = 0; i < count; i++) {
      Request r =
          new Request(
              tag + "-req-" + i,
              tag + "-inv-" + i,
              100 + random.nextInt(9900),
              scenarios[i % scenarios.length],
              1 + random.nextInt(3));
      byInvoice.put(r.invoice(), r);
    }
  }

  public List<Request> all() {
    return new ArrayList<>(byInvoice.values());
  }

  /** The request a user text stands for. */
  public Request of(String userText) {
    Matcher m = INVOICE.matcher(userText);
    Request r = m.find() ? byInvoice.get(m.group(1)) : null;
    if (r == null) {
      throw new IllegalArgumentException("scripted model: no request in " + userText);
    }
    return r;
  }

  /**
   * The tool without the ledger: POST to the payment API keyed by the model's tool-call id, that
   * key again after a timeout or a 5xx (three tries), as a careful hand-written tool does.
   */
  public static String payDirectly(String paymentsUrl, String argumentsJson, String toolCallId) {
    String last = "";
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        HttpResponse<String> response =
            HTTP.send(
                HttpRequest.newBuilder(URI.create(paymentsUrl))
                    .timeout(Duration.ofMillis(1500))
                    .header("Content-Type", "application/json")
                    .header("Idempotency-Key", toolCallId)
                    .POST(HttpRequest.BodyPublishers.ofString(argumentsJson))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() < 300) {
          return response.body();
        }
        last = "HTTP " + response.statusCode();
        if (response.statusCode() < 500
            && response.statusCode() != 409
            && response.statusCode() != 429) {
          break;
        }
      } catch (IOException e) {
        last = e.toString();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      pause();
    }
    throw new IllegalStateException("pay_invoice failed: " + last);
  }

  private static void pause() {
    try {
      Thread.sleep(200); // the hand-written tool's back-off between tries
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The rows of one runtime and mode (the shape harness.ts prints), from effects per invoice. */
  public ArrayNode rows(
      String runtime,
      String mode,
      Map<String, Integer> effectsByInvoice,
      Map<String, String> errors) {
    Map<Scenario, ObjectNode> byScenario = new LinkedHashMap<>();
    for (Request r : byInvoice.values()) {
      ObjectNode row =
          byScenario.computeIfAbsent(
              r.scenario(),
              s -> {
                ObjectNode n = JSON.createObjectNode();
                n.put("runtime", runtime).put("mode", mode).put("scenario", s.name().toLowerCase());
                n.put("requests", 0).put("once", 0).put("more", 0).put("none", 0).put("effects", 0);
                n.putArray("errors");
                return n;
              });
      int effects = effectsByInvoice.getOrDefault(r.invoice(), 0);
      row.put("requests", row.get("requests").asInt() + 1);
      row.put("effects", row.get("effects").asInt() + effects);
      String bucket = effects == 1 ? "once" : effects > 1 ? "more" : "none";
      row.put(bucket, row.get(bucket).asInt() + 1);
      if (errors.containsKey(r.id())) {
        ((ArrayNode) row.get("errors")).add(r.id() + ": " + errors.get(r.id()));
      }
    }
    ArrayNode out = JSON.createArrayNode();
    byScenario.values().forEach(out::add);
    return out;
  }
}
