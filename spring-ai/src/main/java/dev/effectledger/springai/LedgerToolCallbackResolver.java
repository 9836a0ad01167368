package dev.effectledger.springai;

import dev.effectledger.client.ToolCalls;
import java.util.function.Supplier;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.resolution.ToolCallbackResolver;

/**
 * Spring AI's {@link ToolCallbackResolver} with the tools it finds routed by the ledger ({@link
 * LedgerToolCallback}): Spring AI asks it for tools by name when resolution falls back to the
 * application's tool beans ({@code spring.ai.tools.resolution.fallback.enabled}).
 */
final class LedgerToolCallbackResolver implements ToolCallbackResolver {

  private final ToolCallbackResolver delegate;
  private final Supplier<ToolCalls> client;
  private final Supplier<ToolRouting> routing;

  LedgerToolCallbackResolver(
      ToolCallbackResolver delegate, Supplier<ToolCalls> client, Supplier<ToolRouting> routing) {
    this.delegate = delegate;
    this.client = client;
    this.routing = routing;
  }

  @Override
  public ToolCallback resolve(String toolName) {
    ToolCallback found = delegate.resolve(toolName);
    return found == null ? null : LedgerToolCallback.wrap(found, client.get(), routing.get());
  }
}
