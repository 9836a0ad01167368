package dev.effectledger.springai;

import dev.effectledger.client.AgentToolRouting;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.ModelText;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import java.util.Map;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.ai.tool.metadata.ToolMetadata;

/**
 * A Spring AI {@link ToolCallback} whose effect goes through Effect Ledger: a read tool (the
 * applied policy's class {@code read}) calls the wrapped callback; every other tool is called
 * through the ledger with the step from the {@link ToolContext} ({@link LedgerToolContext#step}),
 * and its own callback is not called (its effect runs in the ledger's executor, once). The
 * definition and metadata are the wrapped callback's: the model sees the same schema, the key is
 * never part of it, and the model's tool-call id (which Spring AI does not hand to callbacks) is
 * not used. A call that did not succeed throws a {@link ToolExecutionException} whose message is
 * what the model reads (Spring AI's default processor answers the model with it); a call without a
 * step throws {@link IllegalStateException}, which fails the chat call: no key, no effect.
 */
public final class LedgerToolCallback implements ToolCallback {

  private final ToolCallback delegate;
  private final ToolCalls client;
  private final ToolRouting routing;

  private LedgerToolCallback(ToolCallback delegate, ToolCalls client, ToolRouting routing) {
    this.delegate = delegate;
    this.client = client;
    this.routing = routing;
  }

  /** {@code callback} routed by the ledger; a callback wrapped already is returned as it is. */
  public static ToolCallback wrap(ToolCallback callback, ToolCalls client, ToolRouting routing) {
    return callback instanceof LedgerToolCallback
        ? callback
        : new LedgerToolCallback(callback, client, routing);
  }

  /** Each of {@code callbacks} routed by the ledger. */
  public static ToolCallback[] wrap(
      ToolCallback[] callbacks, ToolCalls client, ToolRouting routing) {
    ToolCallback[] out = new ToolCallback[callbacks.length];
    for (int i = 0; i < callbacks.length; i++) {
      out[i] = wrap(callbacks[i], client, routing);
    }
    return out;
  }

  @Override
  public ToolDefinition getToolDefinition() {
    return delegate.getToolDefinition();
  }

  @Override
  public ToolMetadata getToolMetadata() {
    return delegate.getToolMetadata();
  }

  @Override
  public String call(String toolInput) {
    return call(toolInput, null);
  }

  @Override
  public String call(String toolInput, ToolContext toolContext) {
    String name = getToolDefinition().name();
    AgentToolRouting.Route route = routing.route(client, name);
    if (route == AgentToolRouting.Route.DIRECT) {
      return delegate.call(toolInput, toolContext);
    }
    if (route == AgentToolRouting.Route.UNKNOWN) {
      throw new ToolExecutionException(
          getToolDefinition(), new IllegalStateException(ToolRouting.unknownText(name)));
    }
    StepContext step =
        LedgerToolContext.stepOf(toolContext == null ? Map.of() : toolContext.getContext(), name);
    step = routing.scoped(name, step, toolInput);
    CallResult result = routing.call(client, ToolCall.of(step, name, toolInput));
    if (result instanceof CallResult.Succeeded s) {
      return s.resultJson();
    }
    throw new ToolExecutionException(
        getToolDefinition(), new IllegalStateException(ModelText.of(name, result)));
  }

  @Override
  public String toString() {
    return "LedgerToolCallback[" + getToolDefinition().name() + "]";
  }
}
