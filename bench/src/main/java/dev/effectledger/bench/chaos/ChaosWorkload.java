package dev.effectledger.bench.chaos;

import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import java.util.ArrayList;
import java.util.List;

/**
 * The chaos run's logical actions, derived from the sizes alone so that the harness and every agent
 * process agree on them without talking: agent {@code a}'s action {@code i} charges {@code 1 + i}
 * to {@code cus_a_i} under step {@code step-i}; every {@code repeatEvery}-th action is meant to run
 * twice, under a second step.
 */
public record ChaosWorkload(int agents, int actionsPerAgent, int repeatEvery) {

  public static final String TOOL = "charge_card";
  public static final String TENANT = "acme";
  public static final KeyRules RULES =
      KeyRules.builder().ignore("/reason").require("/amount", "/to").build();

  /** One logical action and the steps it is meant to take effect under (two for a meant repeat). */
  public record Action(int agent, int index, List<StepContext> steps, String arguments) {

    /**
     * The same call as the model re-emits it: fields reordered, the amount as 12.0, another reason.
     */
    public String reformatted() {
      return "{ \"to\": \"cus_"
          + agent
          + "_"
          + index
          + "\", \"amount\": "
          + (1 + index)
          + ".0, \"reason\": \"reworded\" }";
    }

    public String key(StepContext step) {
      return IdempotencyKeys.derive(step, TOOL, arguments, RULES).key();
    }
  }

  public List<Action> actions(int agent) {
    List<Action> actions = new ArrayList<>(actionsPerAgent);
    for (int i = 0; i < actionsPerAgent; i++) {
      List<StepContext> steps = new ArrayList<>(List.of(step(agent, "step-" + i, i)));
      if (i % repeatEvery == 0) {
        steps.add(step(agent, "step-" + i + "-again", i));
      }
      actions.add(
          new Action(
              agent,
              i,
              List.copyOf(steps),
              "{\"amount\":"
                  + (1 + i)
                  + ",\"to\":\"cus_"
                  + agent
                  + "_"
                  + i
                  + "\",\"reason\":\"r\"}"));
    }
    return actions;
  }

  public List<Action> all() {
    List<Action> all = new ArrayList<>(agents * actionsPerAgent);
    for (int a = 0; a < agents; a++) {
      all.addAll(actions(a));
    }
    return all;
  }

  /** The run id of agent {@code agent}'s steps. */
  static String runId(int agent) {
    return "agent-" + agent;
  }

  private static StepContext step(int agent, String stepId, int index) {
    return new StepContext(TENANT, runId(agent), stepId, "customer:" + index);
  }
}
