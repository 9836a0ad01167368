package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpAsyncServerExchange;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpLoggableSession;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpServerSession;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import io.modelcontextprotocol.spec.McpServerTransportProviderBase;
import io.modelcontextprotocol.spec.McpStreamableServerSession;
import io.modelcontextprotocol.spec.McpStreamableServerTransportProvider;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The agents' sessions with the gateway, each with the logging level its agent set ({@code
 * logging/setLevel}): an upstream's log message goes to each session whose level it reaches.
 *
 * <p>Why this class: the MCP Java SDK's server (2.1.0) keeps each session's level and honours it
 * only for messages sent through that session's request exchange; sending to every agent ({@code
 * notifyClients}) ignores it, and the server lists no sessions. So the gateway hands the SDK its
 * transport wrapped ({@link #watch}): every session the SDK starts is seen here, and held weakly,
 * so a session the transport dropped is forgotten with it.
 */
final class AgentSessions {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  private final Set<McpLoggableSession> sessions =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /** What each agent said on initialize (its capabilities and name), by session id. */
  private final Map<String, McpSchema.InitializeRequest> initialized = new ConcurrentHashMap<>();

  /** What the agent said on initialize over stdio (one session). */
  private volatile McpSchema.InitializeRequest stdio;

  /** {@code transport} (Streamable HTTP) as the SDK's server is given it: sessions seen here. */
  McpStreamableServerTransportProvider watch(McpStreamableServerTransportProvider transport) {
    final class Streamable extends Delegating implements McpStreamableServerTransportProvider {
      Streamable() {
        super(transport);
      }

      @Override
      public void setSessionFactory(McpStreamableServerSession.Factory factory) {
        transport.setSessionFactory(
            initialize -> {
              McpStreamableServerSession.McpStreamableServerSessionInit init =
                  factory.startSession(initialize);
              initialized.put(init.session().getId(), initialize);
              sessions.add(init.session());
              return init;
            });
      }
    }
    return new Streamable();
  }

  /** {@code transport} (stdio: one session) as the SDK's server is given it. */
  McpServerTransportProvider watch(McpServerTransportProvider transport) {
    final class Single extends Delegating implements McpServerTransportProvider {
      Single() {
        super(transport);
      }

      @Override
      public void setSessionFactory(McpServerSession.Factory factory) {
        transport.setSessionFactory(
            channel -> {
              McpServerSession session = factory.create(channel);
              sessions.add(session);
              return session;
            });
      }
    }
    return new Single();
  }

  /** Everything but the session factory, as the wrapped transport does it. */
  private abstract static class Delegating implements McpServerTransportProviderBase {
    private final McpServerTransportProviderBase to;

    Delegating(McpServerTransportProviderBase to) {
      this.to = to;
    }

    @Override
    public Mono<Void> notifyClients(String method, Object params) {
      return to.notifyClients(method, params);
    }

    @Override
    public Mono<Void> notifyClient(String sessionId, String method, Object params) {
      return to.notifyClient(sessionId, method, params);
    }

    @Override
    public Mono<Void> closeGracefully() {
      return to.closeGracefully();
    }

    @Override
    public void close() {
      to.close();
    }

    @Override
    public List<String> protocolVersions() {
      return to.protocolVersions();
    }
  }

  /**
   * Sends {@code message} to every session whose agent's level it reaches (the SDK's default for a
   * session that set none: info); a session that cannot take it now (no stream open to it) misses
   * it, as an MCP log message is not kept for later.
   */
  void log(McpSchema.LoggingMessageNotification message) {
    List<McpLoggableSession> now;
    synchronized (sessions) {
      now = new ArrayList<>(sessions);
    }
    for (McpLoggableSession session : now) {
      if (session.isNotificationForLevelAllowed(message.level())) {
        session
            .sendNotification(McpSchema.METHOD_NOTIFICATION_MESSAGE, message)
            .subscribe(done -> {}, e -> log.debug("Could not relay a log message to an agent", e));
      }
    }
  }

  /**
   * Sends {@code message} to the agent of session {@code id} if its level reaches it (an upstream's
   * log message on that agent's own session with it).
   */
  void logTo(String id, McpSchema.LoggingMessageNotification message) {
    McpLoggableSession session = byId(id);
    if (session != null && session.isNotificationForLevelAllowed(message.level())) {
      session
          .sendNotification(McpSchema.METHOD_NOTIFICATION_MESSAGE, message)
          .subscribe(done -> {}, e -> log.debug("Could not relay a log message to an agent", e));
    }
  }

  /**
   * An exchange with the agent of session {@code id} outside its requests (over Streamable HTTP on
   * the stream the agent keeps open for what the server sends on its own); null when the session is
   * not known.
   */
  McpSyncServerExchange exchange(
      String id, McpSchema.ClientCapabilities capabilities, McpSchema.Implementation clientInfo) {
    McpLoggableSession session = byId(id);
    if (session == null) {
      return null;
    }
    return new McpSyncServerExchange(
        new McpAsyncServerExchange(
            id, session, capabilities, clientInfo, McpTransportContext.EMPTY));
  }

  /** Over stdio: what the agent said on initialize, read off the line before the SDK reads it. */
  void initializedStdio(McpSchema.InitializeRequest request) {
    stdio = request;
  }

  /** The agent of session {@code id} ended it: forget what it said. */
  void ended(String id) {
    initialized.remove(id);
  }

  /**
   * An exchange with the agent of session {@code id} (null: the stdio session) outside its
   * requests, with the capabilities it declared on initialize and {@code context} (what the request
   * that asked for it told); null when the session is not known.
   */
  McpSyncServerExchange exchange(String id, McpTransportContext context) {
    McpSchema.InitializeRequest said = id == null ? stdio : initialized.get(id);
    String sessionId = id;
    if (id == null) {
      synchronized (sessions) {
        sessionId =
            sessions.stream()
                .filter(McpServerSession.class::isInstance)
                .map(s -> ((McpServerSession) s).getId())
                .findFirst()
                .orElse(null);
      }
    }
    if (said == null || sessionId == null) {
      return null;
    }
    McpLoggableSession session = byId(sessionId);
    if (session == null) {
      return null;
    }
    return new McpSyncServerExchange(
        new McpAsyncServerExchange(
            sessionId, session, said.capabilities(), said.clientInfo(), context));
  }

  private McpLoggableSession byId(String id) {
    synchronized (sessions) {
      for (McpLoggableSession session : sessions) {
        String sessionId =
            session instanceof McpStreamableServerSession streamable
                ? streamable.getId()
                : session instanceof McpServerSession single ? single.getId() : null;
        if (id.equals(sessionId)) {
          return session;
        }
      }
    }
    return null;
  }
}
