package dev.effectledger.springai;

import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * Which tools go through the ledger: the applied policy's class ({@code read} runs the tool's own
 * callback, every other class the ledger), else, while no applied policy names a tool, the names
 * given here (as key rules given to the client in code); scopes per tool; how long a call still
 * running is waited on.
 */
public final class ToolRouting {

  enum Route {
    LEDGER,
    DIRECT,
    UNKNOWN
  }

  private final Set<String> ledgered;
  private final Set<String> direct;
  private final Map<String, Function<String, String>> scopes;
  private final Duration attach;

  private ToolRouting(
      Set<String> ledgered,
      Set<String> direct,
      Map<String, Function<String, String>> scopes,
      Duration attach) {
    this.ledgered = Set.copyOf(ledgered);
    this.direct = Set.copyOf(direct);
    this.scopes = Map.copyOf(scopes);
    this.attach = attach;
  }

  /** By the applied policy alone. */
  public static ToolRouting byPolicy() {
    return new ToolRouting(Set.of(), Set.of(), Map.of(), Duration.ofMinutes(2));
  }

  /** Also: {@code tools} go through the ledger while no applied policy names them. */
  public ToolRouting ledgered(Set<String> tools) {
    return new ToolRouting(tools, direct, scopes, attach);
  }

  /** Also: {@code tools} run their own callback whatever the policy says (not the ledger's). */
  public ToolRouting direct(Set<String> tools) {
    return new ToolRouting(ledgered, tools, scopes, attach);
  }

  /** Also: the business scope of {@code tool}'s calls, from their arguments' JSON. */
  public ToolRouting scope(String tool, Function<String, String> fromArguments) {
    Map<String, Function<String, String>> next = new HashMap<>(scopes);
    next.put(tool, fromArguments);
    return new ToolRouting(ledgered, direct, next, attach);
  }

  /** Also: how long a call still running is waited on before the model is told so. */
  public ToolRouting attach(Duration wait) {
    return new ToolRouting(ledgered, direct, scopes, wait);
  }

  Route route(ToolCalls client, String tool) {
    if (direct.contains(tool)) {
      return Route.DIRECT;
    }
    Optional<String> policyClass = client.toolClassOf(tool);
    if (policyClass.isPresent()) {
      return policyClass.get().equals("read") ? Route.DIRECT : Route.LEDGER;
    }
    return ledgered.contains(tool) ? Route.LEDGER : Route.UNKNOWN;
  }

  StepContext scoped(String tool, StepContext step, String arguments) {
    Function<String, String> scope = scopes.get(tool);
    return scope == null
        ? step
        : new StepContext(step.tenant(), step.runId(), step.stepId(), scope.apply(arguments));
  }

  CallResult call(ToolCalls client, ToolCall call) {
    long deadline = System.nanoTime() + attach.toNanos();
    CallResult result = LedgerToolCallback.await(client, call);
    // On a timeout only: a client closed meanwhile answers at once, and would spin.
    while (result instanceof CallResult.StillRunning running
        && running.reason() == CallResult.StillRunning.Reason.TIMED_OUT
        && System.nanoTime() < deadline) {
      result = LedgerToolCallback.attach(client, running);
    }
    return result;
  }

  static String unknownText(String tool) {
    return tool
        + " is not in Effect Ledger's tool policy, so it was not run: add it to the ledger's"
        + " tools.yaml (class read for a tool without effects), or name it in"
        + " effectledger.tools.ledgered or effectledger.tools.direct";
  }
}
