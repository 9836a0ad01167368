package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.spec.McpSchema;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The progress of pass-through calls whose agent asked for it, relayed from the upstream back to
 * that agent. Agents' progress tokens are unique per session only, so each such call goes upstream
 * with a token of the gateway's own ({@link #open}), and what the upstream reports under it reaches
 * the agent under the agent's token until the call ends ({@link #close}).
 */
final class ProgressRelay {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  /** The calls being relayed, by the token sent upstream. */
  private final Map<String, Relay> byToken = new ConcurrentHashMap<>();

  /**
   * One agent's progress. The SDK's client may hand notifications over on several threads, out of
   * their order; MCP requires progress to increase, so one that does not is dropped.
   */
  private static final class Relay {
    private final Consumer<McpSchema.ProgressNotification> agent;
    private final Object agentToken;
    private double last = Double.NEGATIVE_INFINITY; // guarded by this

    Relay(Consumer<McpSchema.ProgressNotification> agent, Object agentToken) {
      this.agent = agent;
      this.agentToken = agentToken;
    }

    synchronized void send(McpSchema.ProgressNotification notification) {
      double progress = notification.progress() == null ? 0 : notification.progress();
      if (progress <= last) {
        return;
      }
      last = progress;
      agent.accept(
          new McpSchema.ProgressNotification(
              agentToken,
              notification.progress(),
              notification.total(),
              notification.message(),
              notification.meta()));
    }
  }

  /**
   * Relays to {@code agent}, under {@code agentToken}, the progress reported under the token this
   * returns: the one to send upstream instead of the agent's.
   */
  String open(Consumer<McpSchema.ProgressNotification> agent, Object agentToken) {
    String upstreamToken = "effectledger-" + UUID.randomUUID();
    byToken.put(upstreamToken, new Relay(agent, agentToken));
    return upstreamToken;
  }

  /** The call sent upstream with {@code upstreamToken} ended: nothing more is relayed for it. */
  void close(String upstreamToken) {
    byToken.remove(upstreamToken);
  }

  /** An upstream's progress, to the agent of the call it names, if that call is still running. */
  void relay(McpSchema.ProgressNotification notification) {
    Relay relay =
        notification.progressToken() == null
            ? null
            : byToken.get(notification.progressToken().toString());
    if (relay == null) {
      return;
    }
    try {
      relay.send(notification);
    } catch (RuntimeException e) {
      log.debug("Could not relay progress to an agent that went away", e);
    }
  }
}
