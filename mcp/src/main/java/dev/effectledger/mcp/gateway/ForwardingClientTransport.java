package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.List;
import java.util.function.Consumer;
import reactor.core.publisher.Mono;

/**
 * An upstream session's transport that does what the wrapped one does; a subclass changes what it
 * needs ({@link ProgressTap}, {@link UpstreamTasks}: what arrives, before the SDK's client sees
 * it).
 */
abstract class ForwardingClientTransport implements McpClientTransport {

  final McpClientTransport transport;

  ForwardingClientTransport(McpClientTransport transport) {
    this.transport = transport;
  }

  @Override
  public void setExceptionHandler(Consumer<Throwable> handler) {
    transport.setExceptionHandler(handler);
  }

  @Override
  public Mono<Void> sendMessage(McpSchema.JSONRPCMessage message) {
    return transport.sendMessage(message);
  }

  @Override
  public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
    return transport.unmarshalFrom(data, typeRef);
  }

  @Override
  public List<String> protocolVersions() {
    return transport.protocolVersions();
  }

  @Override
  public Mono<Void> closeGracefully() {
    return transport.closeGracefully();
  }

  @Override
  public void close() {
    transport.close();
  }
}
