package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * An upstream session's transport, seen from inside: each progress notification the upstream sends
 * is handed to a consumer as the transport receives it, in the order it arrives, before the SDK's
 * client session sees it. Everything else is the wrapped transport's.
 *
 * <p>Why not the client's {@code progressConsumer}: the MCP Java SDK's client session ({@code
 * McpClientSession}, 2.1.0) takes each inbound message from its transport in turn ({@code
 * connect(mono -> mono.doOnNext(this::handle))}) and completes a call's response on that thread at
 * once, but hands a notification to a synchronous client's consumers as a task of its own on
 * Reactor's {@code boundedElastic} pool ({@code McpClientFeatures.Async.fromSync}: {@code
 * Mono.fromRunnable(...).subscribeOn(Schedulers.boundedElastic())}). Two notifications of one call
 * can then run in either order, and a call's result can be handed back before its notifications
 * ran. The transport itself keeps the order: over stdio one reader thread emits every line in turn;
 * over Streamable HTTP a request's own event stream is read in turn (its notifications, then its
 * response), by whichever thread reads it. This consumer runs there, so it must not block: it only
 * queues (see {@link ProgressRelay}).
 */
final class ProgressTap extends ForwardingClientTransport {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final TypeRef<McpSchema.ProgressNotification> PROGRESS = new TypeRef<>() {};

  private final Consumer<McpSchema.ProgressNotification> progress;

  /** {@code transport}, whose inbound progress notifications {@code progress} sees first. */
  ProgressTap(McpClientTransport transport, Consumer<McpSchema.ProgressNotification> progress) {
    super(transport);
    this.progress = progress;
  }

  @Override
  public Mono<Void> connect(
      Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
    // ours runs on each message before the session's handler: in the transport's order
    return transport.connect(inbound -> handler.apply(inbound.doOnNext(this::seen)));
  }

  private void seen(McpSchema.JSONRPCMessage message) {
    if (!(message instanceof McpSchema.JSONRPCNotification notification)
        || !McpSchema.METHOD_NOTIFICATION_PROGRESS.equals(notification.method())) {
      return;
    }
    try {
      progress.accept(transport.unmarshalFrom(notification.params(), PROGRESS));
    } catch (RuntimeException e) { // never the session's concern: it goes on with the message
      log.debug("Could not take an upstream's progress notification {}", notification, e);
    }
  }
}
