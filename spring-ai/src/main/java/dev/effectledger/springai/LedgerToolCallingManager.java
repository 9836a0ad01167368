package dev.effectledger.springai;

import dev.effectledger.client.ToolCalls;
import java.util.List;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.model.tool.ToolExecutionResult;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;

/**
 * Spring AI's {@link ToolCallingManager} with every tool a request carries routed by the ledger
 * ({@link LedgerToolCallback}), however it was attached: {@code .tools(bean)}, {@code
 * .toolCallbacks(...)}, a client's defaults. The Boot auto-configuration wraps the application's
 * manager with it, which runs the tool calls of every ChatClient Boot builds; without Boot, give it
 * to the client ({@code ToolCallingAdvisor.builder().toolCallingManager(...)}).
 */
public final class LedgerToolCallingManager implements ToolCallingManager {

  private final ToolCallingManager delegate;
  private final ToolCalls client;
  private final ToolRouting routing;

  public LedgerToolCallingManager(
      ToolCallingManager delegate, ToolCalls client, ToolRouting routing) {
    this.delegate = delegate;
    this.client = client;
    this.routing = routing;
  }

  @Override
  public List<ToolDefinition> resolveToolDefinitions(ToolCallingChatOptions options) {
    return delegate.resolveToolDefinitions(options);
  }

  @Override
  public ToolExecutionResult executeToolCalls(Prompt prompt, ChatResponse response) {
    if (prompt.getOptions() instanceof ToolCallingChatOptions options
        && options.getToolCallbacks() != null) {
      List<ToolCallback> routed =
          options.getToolCallbacks().stream()
              .map(c -> LedgerToolCallback.wrap(c, client, routing))
              .toList();
      prompt = new Prompt(prompt.getInstructions(), options.mutate().toolCallbacks(routed).build());
    }
    return delegate.executeToolCalls(prompt, response);
  }
}
