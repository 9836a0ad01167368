package dev.effectledger.mcp.gateway;

import dev.effectledger.mcp.connector.McpSession;
import dev.effectledger.mcp.gateway.Upstreams.Upstream;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.ClientCapabilities;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each agent's own sessions with the upstreams (mcp.yaml {@code agents.sessions: own}, the
 * default), for what it asks straight of an upstream: read calls, resource reads, prompts,
 * completions and interactive writes performed as pass-through.
 *
 * <p>An agent's session with an upstream is opened at its first such request there, declaring what
 * the agent declared to the gateway (sampling, elicitation, roots), so the upstream offers the
 * agent what it would offer it directly. An upstream's request on it (sampling, elicitation) goes
 * to that agent, on the stream of one of the agent's requests in flight on that upstream (the
 * gateway cannot tell which of several caused it: the MCP Java SDK's client hands a request to one
 * handler per session, with no link to a call; all of them reach the same agent), else on the
 * agent's own stream. {@code roots/list} is answered with the agent's roots, as the agent last told
 * the gateway. The upstream's log messages on it go to that agent only.
 *
 * <p>Closed when the agent ends its session (an HTTP {@code DELETE}), after {@code agents.idle}
 * without a request, and with the gateway. The gateway's own session with each upstream ({@link
 * Upstreams}) lists what is served; it declares sampling, elicitation and roots too (so tools that
 * need them are listed), refuses their requests (no agent is on that line) and lists no roots.
 */
final class AgentLinks implements AutoCloseable {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  /** One agent's session with one upstream. */
  private final class Link {
    final String agent;
    final Upstream upstream;
    final ClientCapabilities capabilities;
    final McpSchema.Implementation clientInfo;
    final McpSession session;
    final Deque<McpSyncServerExchange> inFlight = new ConcurrentLinkedDeque<>();
    volatile UpstreamTasks upstreamTasks; // the session's transport, as last opened
    volatile List<McpSchema.Root> roots; // null until read from the agent
    long lastUsed = System.nanoTime(); // guarded by the AgentLinks

    /** Cheap: nothing is asked of the agent or the upstream until the session opens. */
    Link(String agent, Upstream upstream, McpSyncServerExchange first) {
      this.agent = agent;
      this.upstream = upstream;
      this.capabilities = first.getClientCapabilities();
      this.clientInfo = first.getClientInfo();
      this.session =
          new McpSession(
              upstream.name + " (agent session " + agent + ")",
              upstream.settings,
              this::declare,
              transport -> {
                UpstreamTasks wrapped =
                    new UpstreamTasks(
                        new ProgressTap(transport, progress), upstream.taskSupport::putAll);
                upstreamTasks = wrapped;
                return wrapped;
              },
              opened -> {});
    }

    /**
     * What the agent declared, with handlers that ask the agent; run when the session opens, on the
     * thread of the request that opens it (no lock held).
     */
    private void declare(McpClient.SyncSpec spec) {
      ClientCapabilities agentHas = capabilities;
      McpSchema.ClientCapabilities.RootCapabilities rootCapability = null;
      McpSchema.ClientCapabilities.Sampling sampling = null;
      McpSchema.ClientCapabilities.Elicitation elicitation = null;
      if (agentHas != null) {
        if (agentHas.sampling() != null) {
          sampling = agentHas.sampling();
          spec.sampling(
              request ->
                  asking(
                      to ->
                          to.createMessage(
                              withTask(
                                  request,
                                  to,
                                  McpSchema.CreateMessageRequest::meta,
                                  AgentLinks::withMeta))));
        }
        if (agentHas.elicitation() != null) {
          elicitation = agentHas.elicitation();
          // elicitation: {} is form elicitation
          if (elicitation.form() != null || elicitation.url() == null) {
            spec.elicitation(
                request ->
                    asking(
                        to ->
                            to.createElicitation(
                                withTask(
                                    request,
                                    to,
                                    McpSchema.ElicitFormRequest::meta,
                                    (r, m) ->
                                        new McpSchema.ElicitFormRequest(
                                            r.message(), r.requestedSchema(), m)))));
          }
          if (elicitation.url() != null) {
            spec.urlElicitation(
                request ->
                    asking(
                        to ->
                            to.createElicitation(
                                withTask(
                                    request,
                                    to,
                                    McpSchema.ElicitUrlRequest::meta,
                                    (r, m) ->
                                        new McpSchema.ElicitUrlRequest(
                                            r.message(), r.url(), r.elicitationId(), m)))));
          }
        }
        if (agentHas.roots() != null) {
          rootCapability = new McpSchema.ClientCapabilities.RootCapabilities(true);
          List<McpSchema.Root> known = roots;
          if (known == null) {
            McpSyncServerExchange opening = inFlight.peekLast();
            known = opening == null ? List.of() : rootsOf(opening);
            roots = known;
          }
          spec.roots(known);
        }
      }
      spec.capabilities(new ClientCapabilities(null, rootCapability, sampling, elicitation))
          .loggingConsumer(message -> relayLog(this, message));
    }

    /**
     * A request of the upstream, asked of the agent; while it waits, a task whose call it came
     * during is {@code input_required}.
     */
    private <T> T asking(java.util.function.Function<McpSyncServerExchange, T> ask) {
      McpSyncServerExchange to = toAgent();
      String task = taskOf(to);
      if (task != null) {
        tasks.waitingForInput(task, true);
      }
      try {
        return ask.apply(to);
      } finally {
        if (task != null) {
          tasks.waitingForInput(task, false);
        }
      }
    }

    /** Where a request of the upstream goes: the agent, on a stream it reads. */
    private McpSyncServerExchange toAgent() {
      McpSyncServerExchange during = inFlight.peekLast();
      if (during != null) {
        return during;
      }
      AgentSessions to = agents;
      McpSyncServerExchange own = to == null ? null : to.exchange(agent, capabilities, clientInfo);
      if (own == null) {
        throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
            .message("the agent's session with the gateway has ended")
            .build();
      }
      return own;
    }
  }

  /** An agent's request on its session with an upstream: closed once it is answered. */
  final class Use implements AutoCloseable {
    private final Link link; // null: the shared session
    private final Upstream upstream;
    private final McpSession session;
    private final McpSyncServerExchange exchange;

    private Use(Link link, Upstream upstream, McpSession session, McpSyncServerExchange exchange) {
      this.link = link;
      this.upstream = upstream;
      this.session = session;
      this.exchange = exchange;
    }

    /** The session the request goes on. */
    McpSession session() {
      return session;
    }

    /** That session's transport, calling tools as tasks (once the session is open). */
    UpstreamTasks tasks() {
      return link != null ? link.upstreamTasks : upstream.tasks;
    }

    @Override
    public void close() {
      if (link != null) {
        synchronized (AgentLinks.this) {
          link.inFlight.removeLastOccurrence(exchange);
          link.lastUsed = System.nanoTime();
        }
      }
    }
  }

  private final McpGatewayConfig config;
  private final Consumer<McpSchema.ProgressNotification> progress;
  private final Map<String, Map<String, Link>> byAgent = new HashMap<>(); // guarded by this
  private final ScheduledExecutorService sweeper =
      Executors.newSingleThreadScheduledExecutor(
          GatewayThreads.daemons("mcp-gateway-agent-sessions"));
  private volatile AgentSessions agents;
  private volatile InputWaits tasks = (task, waiting) -> {};
  private boolean closed; // guarded by this

  /** Told while an upstream's request made during a task's call waits for the agent. */
  interface InputWaits {
    void waitingForInput(String task, boolean waiting);
  }

  /**
   * @param progress told of the upstreams' progress notifications on the agents' sessions, as
   *     {@link Upstreams.Events#progress} is
   */
  AgentLinks(McpGatewayConfig config, Consumer<McpSchema.ProgressNotification> progress) {
    this.config = config;
    this.progress = progress;
    long every = Math.max(100, Math.min(config.agentIdle().toMillis() / 4, 30_000));
    sweeper.scheduleWithFixedDelay(
        () -> {
          try {
            closeIdle();
          } catch (RuntimeException e) { // a sweep that threw must not end the sweeps
            log.warn("Closing idle agent sessions with the upstreams", e);
          }
        },
        every,
        every,
        TimeUnit.MILLISECONDS);
  }

  /**
   * The gateway's own (listing) session with an upstream declares what an agent may: with {@code
   * agents.sessions: own}, sampling, elicitation and roots, refusing each request (no agent is on
   * that line) and listing no roots; with {@code shared}, nothing.
   */
  static McpClient.SyncSpec declareForListing(McpGatewayConfig config, McpClient.SyncSpec spec) {
    if (config.agentSessions() != McpGatewayConfig.AgentSessionMode.OWN) {
      return spec;
    }
    return spec.capabilities(
            new ClientCapabilities(
                null,
                new McpSchema.ClientCapabilities.RootCapabilities(false),
                new McpSchema.ClientCapabilities.Sampling(),
                new McpSchema.ClientCapabilities.Elicitation()))
        .sampling(
            request -> {
              throw noAgent("sampling");
            })
        .elicitation(
            request -> {
              throw noAgent("elicitation");
            });
  }

  private static McpError noAgent(String what) {
    return McpError.builder(McpSchema.ErrorCodes.INVALID_REQUEST)
        .message(
            what
                + " is not answered on the Effect Ledger MCP gateway's own session (it lists;"
                + " agents' calls go on sessions of their own, where their requests are relayed)")
        .build();
  }

  /**
   * Serving: the agents' sessions, for requests and logs outside their calls, and their tasks, told
   * while a request waits for their agent.
   */
  void serving(AgentSessions agents, InputWaits tasks) {
    this.agents = agents;
    this.tasks = tasks;
  }

  /**
   * A request of the agent of {@code exchange} on {@code upstream}: on the agent's own session with
   * it (opened when first needed), or the gateway's shared one ({@code agents.sessions: shared}).
   */
  Use use(Upstream upstream, McpSyncServerExchange exchange) {
    String agent = exchange.sessionId();
    if (config.agentSessions() == McpGatewayConfig.AgentSessionMode.SHARED || agent == null) {
      return new Use(null, upstream, upstream.session, exchange);
    }
    synchronized (this) {
      if (closed) {
        throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
            .message("the gateway is closing")
            .build();
      }
      Link link =
          byAgent
              .computeIfAbsent(agent, a -> new HashMap<>())
              .computeIfAbsent(upstream.name, name -> new Link(agent, upstream, exchange));
      // in flight from here: not idle, so not closed by the sweeper while it is used
      link.inFlight.addLast(exchange);
      link.lastUsed = System.nanoTime();
      return new Use(link, upstream, link.session, exchange);
    }
  }

  /** The links of {@code agent} now (empty when none). */
  private synchronized List<Link> linksOf(String agent) {
    Map<String, Link> links = byAgent.get(agent);
    return links == null ? List.of() : List.copyOf(links.values());
  }

  /** The agent's roots changed: its sessions with the upstreams list the new ones. */
  void rootsChanged(String agent, List<McpSchema.Root> roots) {
    if (agent == null) {
      return;
    }
    for (Link link : linksOf(agent)) {
      List<McpSchema.Root> before = link.roots == null ? List.of() : link.roots;
      link.roots = List.copyOf(roots);
      McpSyncClient client = link.session.current();
      if (client == null) {
        continue; // a session opened later declares the new roots
      }
      try {
        for (McpSchema.Root root : before) {
          if (roots.stream().noneMatch(r -> r.uri().equals(root.uri()))) {
            client.removeRoot(root.uri()); // tells the upstream the list changed
          }
        }
        for (McpSchema.Root root : roots) {
          if (before.stream().noneMatch(r -> r.uri().equals(root.uri()))) {
            client.addRoot(root);
          }
        }
      } catch (RuntimeException e) {
        log.debug(
            "Could not tell upstream {} that agent {}'s roots changed",
            link.upstream.name,
            agent,
            e);
      }
    }
  }

  /** The agent ended its session with the gateway: its sessions with the upstreams close. */
  void ended(String agent) {
    Map<String, Link> links;
    synchronized (this) {
      links = agent == null ? null : byAgent.remove(agent);
    }
    if (links != null) {
      links.values().forEach(AgentLinks::close);
    }
  }

  private void closeIdle() {
    long idle = config.agentIdle().toNanos();
    long now = System.nanoTime();
    List<Link> idleLinks = new ArrayList<>();
    synchronized (this) {
      for (Map<String, Link> links : byAgent.values()) {
        links
            .values()
            .removeIf(
                link -> {
                  boolean unused = link.inFlight.isEmpty() && now - link.lastUsed > idle;
                  if (unused) {
                    idleLinks.add(link);
                  }
                  return unused;
                });
      }
      byAgent.values().removeIf(Map::isEmpty);
    }
    for (Link link : idleLinks) {
      log.debug("Closing agent {}'s idle session with upstream {}", link.agent, link.upstream.name);
      close(link);
    }
  }

  private static void close(Link link) {
    try {
      link.session.close();
    } catch (RuntimeException e) { // one session's trouble never stops the others' closing
      log.debug("Closing agent {}'s session with upstream {}", link.agent, link.upstream.name, e);
    }
  }

  private void relayLog(Link link, McpSchema.LoggingMessageNotification message) {
    AgentSessions to = agents;
    McpSchema.LoggingMessageNotification relayed =
        PassThrough.relayed(link.upstream.name, message, config.logging());
    if (to != null && relayed != null) {
      to.logTo(link.agent, relayed);
    }
  }

  /** The agent's roots, or none when it does not answer. */
  private static List<McpSchema.Root> rootsOf(McpSyncServerExchange exchange) {
    List<McpSchema.Root> roots = new ArrayList<>();
    try {
      String cursor = null;
      do {
        McpSchema.ListRootsResult page =
            cursor == null ? exchange.listRoots() : exchange.listRoots(cursor);
        roots.addAll(page.roots());
        cursor = page.nextCursor();
      } while (cursor != null);
    } catch (RuntimeException e) {
      log.debug("Agent {} did not list its roots", exchange.sessionId(), e);
    }
    return List.copyOf(roots);
  }

  /** The longest an upstream's request may wait for its agent: its upstream's call timeout. */
  static Duration requestTimeout(List<Upstream> upstreams) {
    return upstreams.stream()
        .map(u -> u.settings.timeout())
        .max(Duration::compareTo)
        .orElse(Duration.ofSeconds(30));
  }

  /** The task a request's exchange belongs to ({@link AgentTasks} puts it in its context). */
  private static String taskOf(McpSyncServerExchange exchange) {
    Object task =
        exchange.transportContext() == null
            ? null
            : exchange.transportContext().get(AgentTasks.TASK_CONTEXT);
    return task == null ? null : task.toString();
  }

  /**
   * {@code request} as the agent is asked it: during a task's call, its {@code _meta} names the
   * task ({@value AgentTasks#RELATED_TASK}), as MCP asks of requests made for a task.
   */
  private static <R> R withTask(
      R request,
      McpSyncServerExchange to,
      java.util.function.Function<R, Map<String, Object>> meta,
      java.util.function.BiFunction<R, Map<String, Object>, R> rebuilt) {
    String task = taskOf(to);
    if (task == null) {
      return request;
    }
    Map<String, Object> withTask =
        new HashMap<>(meta.apply(request) == null ? Map.of() : meta.apply(request));
    withTask.put(AgentTasks.RELATED_TASK, Map.of("taskId", task));
    return rebuilt.apply(request, withTask);
  }

  private static McpSchema.CreateMessageRequest withMeta(
      McpSchema.CreateMessageRequest request, Map<String, Object> meta) {
    McpSchema.CreateMessageRequest.Builder copy =
        McpSchema.CreateMessageRequest.builder()
            .messages(request.messages())
            .modelPreferences(request.modelPreferences())
            .systemPrompt(request.systemPrompt())
            .includeContext(request.includeContext())
            .temperature(request.temperature())
            .stopSequences(request.stopSequences())
            .metadata(request.metadata())
            .meta(meta);
    if (request.maxTokens() != null) {
      copy.maxTokens(request.maxTokens());
    }
    return copy.build();
  }

  @Override
  public void close() {
    List<String> all;
    synchronized (this) {
      closed = true;
      all = new ArrayList<>(byAgent.keySet());
    }
    sweeper.shutdownNow();
    all.forEach(this::ended);
  }
}
