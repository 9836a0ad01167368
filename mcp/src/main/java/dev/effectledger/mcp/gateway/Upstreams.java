package dev.effectledger.mcp.gateway;

import dev.effectledger.mcp.connector.McpConnectorSettings;
import dev.effectledger.mcp.connector.McpSession;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.ListToolsResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's upstream MCP servers: one {@link McpSession} each (opened when first needed, and
 * again after a lost one), what each lists (every page), and listing an upstream again after its
 * list change or reconnect and every {@code refresh}. Its monitor guards what the upstreams list
 * and what the gateway serves from it ({@link ServedCatalog} applies under it too).
 */
final class Upstreams {

  /** What the upstreams' sessions tell the gateway, on the SDK's threads or the refresher's. */
  interface Events {
    /**
     * An upstream's progress of a pass-through call, in the order its session's transport received
     * it, before that session hands on what came after it (the call's result); on the thread
     * reading the upstream, so it must not block.
     */
    void progress(McpSchema.ProgressNotification notification);

    /** Resources of {@code upstream} that changed, as its client read them again. */
    void resourcesUpdated(Upstream upstream, List<McpSchema.ResourceContents> read);

    /** A log message {@code upstream} sent. */
    void log(Upstream upstream, McpSchema.LoggingMessageNotification message);

    /**
     * Upstreams were listed (again), under the {@link Upstreams}' monitor: serve what they list.
     */
    void listed();
  }

  /** One upstream: its session and what it lists (guarded by the {@link Upstreams}). */
  static final class Upstream {
    final String name;
    McpConnectorSettings settings;
    McpSession session;

    /** The gateway's own session's transport, as last opened: calls tools as tasks. */
    volatile UpstreamTasks tasks;

    /** Each tool's {@code execution.taskSupport} as the upstream last listed it. */
    final Map<String, String> taskSupport = new java.util.concurrent.ConcurrentHashMap<>();

    final AtomicInteger opens = new AtomicInteger();
    McpSchema.ServerCapabilities capabilities;
    String instructions;
    List<Tool> tools = List.of();
    List<McpSchema.Resource> resources = List.of();
    List<McpSchema.ResourceTemplate> templates = List.of();
    List<McpSchema.Prompt> prompts = List.of();

    Upstream(String name) {
      this.name = name;
    }

    boolean has(Predicate<McpSchema.ServerCapabilities> capability) {
      return capabilities != null && capability.test(capabilities);
    }
  }

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  private final McpGatewayConfig config;
  private final Events events;
  private final Map<String, Upstream> byName = new LinkedHashMap<>();
  private volatile boolean closed;

  /**
   * Refreshes after an upstream's list change or reconnect, and every {@code refresh} (an upstream
   * that does not notify, or whose notification stream was lost): one at a time, off the SDK's
   * threads.
   */
  private final ScheduledExecutorService refresher =
      Executors.newSingleThreadScheduledExecutor(GatewayThreads.daemons("mcp-gateway-refresh"));

  /** The configured upstreams' sessions, not yet opened. */
  Upstreams(McpGatewayConfig config, Events events) {
    this.config = config;
    this.events = events;
    config
        .upstreams()
        .forEach(
            (name, node) -> {
              Upstream upstream = new Upstream(name);
              upstream.settings =
                  McpConnectorSettings.from("upstream " + name, McpGatewayConfig.withTool(node));
              upstream.session =
                  new McpSession(
                      name,
                      upstream.settings,
                      spec ->
                          AgentLinks.declareForListing(config, spec)
                              .toolsChangeConsumer(changed -> refreshLater(upstream))
                              .resourcesChangeConsumer(changed -> refreshLater(upstream))
                              .promptsChangeConsumer(changed -> refreshLater(upstream))
                              .resourcesUpdateConsumer(
                                  read -> events.resourcesUpdated(upstream, read))
                              .loggingConsumer(message -> events.log(upstream, message)),
                      // progress from the transport, not the client's consumer: in its order
                      transport -> {
                        UpstreamTasks tasks =
                            new UpstreamTasks(
                                new ProgressTap(transport, events::progress),
                                upstream.taskSupport::putAll);
                        upstream.tasks = tasks;
                        return tasks;
                      },
                      opened -> {
                        // a new session after a lost one: what it lists may have changed, and
                        // its subscriptions and log level are the old session's
                        if (upstream.opens.incrementAndGet() > 1) {
                          refreshLater(upstream);
                        }
                      });
              byName.put(name, upstream);
            });
  }

  /**
   * Lists every upstream, then tells {@link Events#listed}, and from then on lists them again every
   * {@code refresh}; throws (with the sessions closed) when an upstream cannot be listed.
   */
  void start() {
    try {
      synchronized (this) {
        for (Upstream upstream : byName.values()) {
          list(upstream);
        }
        events.listed();
      }
      long every = config.refresh().toMillis();
      if (every > 0) {
        refresher.scheduleWithFixedDelay(
            () -> byName.values().forEach(this::refreshNow), every, every, TimeUnit.MILLISECONDS);
      }
    } catch (RuntimeException e) {
      byName.values().forEach(u -> u.session.close());
      refresher.shutdownNow();
      throw e;
    }
  }

  /** The upstream named {@code name}. */
  Upstream get(String name) {
    return byName.get(name);
  }

  /** Every upstream, in the configured order. */
  List<Upstream> all() {
    return List.copyOf(byName.values());
  }

  /**
   * Reads what {@code upstream} lists now (every page), subscribes to its resources where it takes
   * subscriptions and sets the level of the log messages it sends; throws, naming the upstream and
   * what to do, when it cannot.
   */
  private synchronized void list(Upstream upstream) {
    McpSession session = upstream.session;
    McpSyncClient client;
    try {
      client = session.client();
    } catch (RuntimeException e) {
      throw unreachable(upstream, e);
    }
    try {
      McpSchema.ServerCapabilities capabilities = client.getServerCapabilities();
      upstream.capabilities = capabilities;
      upstream.instructions = client.getServerInstructions();
      List<Tool> tools =
          pages(client::listTools, ListToolsResult::tools, ListToolsResult::nextCursor);
      List<McpSchema.Resource> resourceList = List.of();
      List<McpSchema.ResourceTemplate> templateList = List.of();
      List<McpSchema.Prompt> promptList = List.of();
      if (upstream.has(c -> c.resources() != null)) {
        resourceList =
            pages(
                client::listResources,
                McpSchema.ListResourcesResult::resources,
                McpSchema.ListResourcesResult::nextCursor);
        try {
          templateList =
              pages(
                  client::listResourceTemplates,
                  McpSchema.ListResourceTemplatesResult::resourceTemplates,
                  McpSchema.ListResourceTemplatesResult::nextCursor);
        } catch (McpError e) { // a server with resources need not have templates
          log.debug("Upstream {} lists no resource templates", upstream.name, e);
        }
        if (upstream.has(c -> Boolean.TRUE.equals(c.resources().subscribe()))) {
          for (McpSchema.Resource resource : resourceList) {
            try {
              client.subscribeResource(new McpSchema.SubscribeRequest(resource.uri()));
            } catch (McpError e) {
              log.debug(
                  "Upstream {} refused a subscription to {}", upstream.name, resource.uri(), e);
            }
          }
        }
      }
      if (upstream.has(c -> c.prompts() != null)) {
        promptList =
            pages(
                client::listPrompts,
                McpSchema.ListPromptsResult::prompts,
                McpSchema.ListPromptsResult::nextCursor);
      }
      if (config.logging() != null && upstream.has(c -> c.logging() != null)) {
        try {
          client.setLoggingLevel(config.logging());
        } catch (McpError e) {
          log.debug("Upstream {} refused the log level {}", upstream.name, config.logging(), e);
        }
      }
      upstream.tools = tools;
      upstream.resources = resourceList;
      upstream.templates = templateList;
      upstream.prompts = promptList;
    } catch (McpError e) {
      throw unreachable(upstream, e);
    } catch (RuntimeException e) {
      session.discard(client);
      throw unreachable(upstream, e);
    }
  }

  /** Every item of a paged MCP list: {@code page} asked with each cursor until there is none. */
  static <P, T> List<T> pages(
      Function<String, P> page, Function<P, List<T>> items, Function<P, String> next) {
    List<T> listed = new ArrayList<>();
    String cursor = null;
    do {
      P got = page.apply(cursor);
      listed.addAll(items.apply(got));
      cursor = next.apply(got);
    } while (cursor != null);
    return listed;
  }

  private static IllegalStateException unreachable(Upstream upstream, RuntimeException e) {
    return new IllegalStateException(
        "Could not list what upstream "
            + upstream.name
            + " at "
            + upstream.session.where()
            + " serves ("
            + e.getMessage()
            + "); start it, or fix upstreams."
            + upstream.name
            + " in the MCP gateway's configuration",
        e);
  }

  /** After a list change or reconnect of {@code upstream}, off the thread that noticed it. */
  private void refreshLater(Upstream upstream) {
    if (closed) {
      return;
    }
    try {
      refresher.execute(() -> refreshNow(upstream));
    } catch (RejectedExecutionException e) {
      log.debug("Closing: no refresh of upstream {}", upstream.name);
    }
  }

  private void refreshNow(Upstream upstream) {
    try {
      synchronized (this) {
        if (closed) {
          return;
        }
        list(upstream);
        events.listed();
      }
    } catch (RuntimeException e) {
      log.warn(
          "{}. The gateway serves what it listed before until it lists the upstream again",
          e.getMessage());
    }
  }

  /** No more refreshes: the first step of closing the gateway. */
  void stopRefreshing() {
    closed = true;
    refresher.shutdownNow();
  }

  /** Closes the upstreams' sessions: the last step of closing the gateway. */
  void closeSessions() {
    byName.values().forEach(u -> u.session.close());
  }
}
