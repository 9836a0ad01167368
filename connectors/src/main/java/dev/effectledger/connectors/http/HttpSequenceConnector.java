package dev.effectledger.connectors.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import java.io.IOException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * A tool that is several HTTP writes in order (charge, then book the shipment): connector {@code
 * http-sequence}, settings {@code steps} (each an {@code http} connector's settings) and {@code
 * correctiveAction}. Step {@code n} is sent with effect key {@code <key>#<n>}, so a downstream that
 * honours keys deduplicates each write on its own.
 *
 * <p>The first step's outcome is the tool's when it does not succeed (nothing else was sent). Once
 * a step has succeeded, a later step that does not is a {@link EffectOutcome.Partial}: the writes
 * done, the one that failed (with its outcome class) and those not sent, and the corrective action;
 * never retried, the ledger holds it for an operator. All steps succeeding is a success whose
 * result lists each step's result; its effect id is the first step's.
 */
public final class HttpSequenceConnector implements Connector {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<HttpConnector> steps;
  private final List<String> urls;
  private final String correctiveAction;

  HttpSequenceConnector(List<HttpConnector> steps, List<String> urls, String correctiveAction) {
    this.steps = List.copyOf(steps);
    this.urls = List.copyOf(urls);
    this.correctiveAction = correctiveAction;
  }

  /**
   * The connector for {@code tool}'s settings.
   *
   * @throws IllegalArgumentException naming every problem of the settings
   */
  public static HttpSequenceConnector from(String tool, JsonNode settings, Clock clock) {
    check(tool, settings);
    List<HttpConnector> connectors = new ArrayList<>();
    List<String> urls = new ArrayList<>();
    for (JsonNode step : settings.get("steps")) {
      connectors.add(new HttpConnector(HttpConnectorSettings.from(tool, step), clock));
      urls.add(step.path("url").asText());
    }
    return new HttpSequenceConnector(connectors, urls, settings.get("correctiveAction").asText());
  }

  /** Checks the settings without connecting to anything. */
  public static void check(String tool, JsonNode settings) {
    List<String> problems = new ArrayList<>();
    JsonNode steps = settings.path("steps");
    if (!steps.isArray() || steps.size() < 2) {
      problems.add(
          "tools."
              + tool
              + ".settings.steps: give two or more steps, each an http connector's settings");
    } else {
      for (int i = 0; i < steps.size(); i++) {
        try {
          HttpConnectorSettings.from(tool, steps.get(i));
        } catch (IllegalArgumentException e) {
          problems.add("tools." + tool + ".settings.steps[" + i + "]: " + e.getMessage());
        }
      }
    }
    if (!settings.path("correctiveAction").isTextual()
        || settings.path("correctiveAction").asText().isBlank()) {
      problems.add(
          "tools."
              + tool
              + ".settings.correctiveAction: say what an operator does when only some steps took"
              + " effect");
    }
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(String.join("\n", problems));
    }
  }

  @Override
  public Capabilities capabilities() {
    boolean honoured = steps.stream().allMatch(s -> s.capabilities().honoursKeys());
    return new Capabilities(honoured, false, false);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    ArrayNode done = JSON.createArrayNode();
    String firstEffectId = null;
    for (int i = 0; i < steps.size(); i++) {
      EffectOutcome outcome = steps.get(i).execute(step(request, i + 1));
      if (outcome instanceof EffectOutcome.Succeeded s) {
        ObjectNode node = done.addObject().put("step", i + 1).put("url", urls.get(i));
        node.set("result", parse(s.resultJson()));
        if (s.effectId() != null) {
          node.put("effectId", s.effectId());
        }
        firstEffectId = firstEffectId == null ? s.effectId() : firstEffectId;
        continue;
      }
      if (i == 0) {
        return outcome; // nothing took effect before it
      }
      return partial(done, i, outcome);
    }
    ObjectNode result = JSON.createObjectNode();
    result.set("steps", done);
    return new EffectOutcome.Succeeded(result.toString(), firstEffectId);
  }

  private EffectOutcome.Partial partial(ArrayNode done, int failedIndex, EffectOutcome failed) {
    String outcomeClass =
        failed instanceof EffectOutcome.Ambiguous
            ? "ambiguous"
            : failed instanceof EffectOutcome.Retryable ? "not-done" : "failed";
    ObjectNode report = JSON.createObjectNode();
    report.set("done", done);
    report
        .putObject("failed")
        .put("step", failedIndex + 1)
        .put("url", urls.get(failedIndex))
        .put("outcome", outcomeClass)
        .put("code", failed.code());
    ArrayNode notDone = report.putArray("notDone");
    for (int j = failedIndex + 1; j < steps.size(); j++) {
      notDone.addObject().put("step", j + 1).put("url", urls.get(j));
    }
    report.put("correctiveAction", correctiveAction);
    return new EffectOutcome.Partial(
        "steps 1-"
            + failedIndex
            + " of "
            + steps.size()
            + " took effect; step "
            + (failedIndex + 1)
            + " "
            + (outcomeClass.equals("ambiguous") ? "may have" : "did not")
            + " ("
            + failed.code()
            + "); "
            + (steps.size() - failedIndex - 1)
            + " not sent",
        report.toString(),
        correctiveAction);
  }

  private static EffectRequest step(EffectRequest request, int n) {
    return new EffectRequest(
        request.effectKey() + "#" + n,
        request.idempotencyKey(),
        request.tenant(),
        request.tool(),
        request.arguments(),
        request.attempt(),
        request.traceId());
  }

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      return JSON.getNodeFactory().textNode(json);
    }
  }

  @Override
  public void close() {
    steps.forEach(HttpConnector::close);
  }
}
