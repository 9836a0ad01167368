package dev.effectledger.springai;

import dev.effectledger.client.StepContext;
import java.util.Map;

/**
 * The step a chat call's tool calls belong to, carried in Spring AI's tool context (which the tools
 * get and the model is not sent):
 *
 * <pre>{@code
 * chatClient.prompt().user(text)
 *     .toolContext(LedgerToolContext.step(new StepContext("acme", conversationId, requestId, "")))
 *     .call().content();
 * }</pre>
 */
public final class LedgerToolContext {

  /** The tool-context entry holding the step. */
  public static final String STEP = "effectledger.step";

  private LedgerToolContext() {}

  /** A tool context holding {@code step}; merge it with your own entries. */
  public static Map<String, Object> step(StepContext step) {
    return Map.of(STEP, step);
  }

  static StepContext stepOf(Map<String, Object> context, String tool) {
    if (context.get(STEP) instanceof StepContext step) {
      return step;
    }
    throw new IllegalStateException(
        tool
            + " needs the run and step it belongs to: pass .toolContext(LedgerToolContext.step(new"
            + " StepContext(tenant, runId, stepId, scope))) on the chat call, from your own state,"
            + " never from the model");
  }
}
