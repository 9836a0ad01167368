package dev.effectledger.springai;

import dev.effectledger.client.AgentToolRouting;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Which tools go through the ledger ({@link AgentToolRouting}: the applied policy's class, else the
 * names given here), scopes per tool, and how long a call still running is waited on.
 */
public final class ToolRouting {

  private final Set<String> ledgered;
  private final Set<String> direct;
  private final Map<String, Function<String, String>> scopes;
  private final Duration attach;
  private final AgentToolRouting rule;

  private ToolRouting(
      Set<String> ledgered,
      Set<String> direct,
      Map<String, Function<String, String>> scopes,
      Duration attach) {
    this.ledgered = Set.copyOf(ledgered);
    this.direct = Set.copyOf(direct);
    this.scopes = Map.copyOf(scopes);
    this.attach = attach;
    this.rule = new AgentToolRouting(this.ledgered, this.direct, attach);
  }

  /** By the applied policy alone. */
  public static ToolRouting byPolicy() {
    return new ToolRouting(Set.of(), Set.of(), Map.of(), Duration.ofMinutes(2));
  }

  /** Also: {@code tools} go through the ledger while no applied policy names them. */
  public ToolRouting ledgered(Set<String> tools) {
    return new ToolRouting(tools, direct, scopes, attach);
  }

  /**
   * Also: {@code tools} are not the ledger's (an agent used as a tool) and run their own callback
   * while the applied policy does not name them; once it does, its class decides.
   */
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

  AgentToolRouting.Route route(ToolCalls client, String tool) {
    return rule.route(client, tool);
  }

  StepContext scoped(String tool, StepContext step, String arguments) {
    Function<String, String> scope = scopes.get(tool);
    return scope == null
        ? step
        : new StepContext(step.tenant(), step.runId(), step.stepId(), scope.apply(arguments));
  }

  CallResult call(ToolCalls client, ToolCall call) {
    return rule.call(client, call);
  }

  static String unknownText(String tool) {
    return AgentToolRouting.unknownText(
        tool, "effectledger.tools.ledgered or effectledger.tools.direct");
  }
}
