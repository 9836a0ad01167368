package dev.effectledger.app.demo;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.mcp.gateway.McpGatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * {@code effectledger demo --via mcp}: an agent calls an MCP server's write tool through the MCP
 * gateway, in one JVM: an embedded broker, the ledger, an executor with the {@code mcp} connector,
 * the counting MCP server and the gateway; eight agents at once, each the MCP Java SDK's client.
 * Each action is called, re-emitted by the model, called again after a reconnect (a new MCP
 * session) and replayed by a restarted orchestrator (the run in {@code _meta}); a share of actions
 * meets a dropped connection after the effect (held, then settled by the reconciler's lookup tool).
 * It ends with a table and fails unless every action took effect exactly once.
 */
final class McpDemo {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TENANT = "acme";
  private static final int AGENTS = 8;

  private final int actions;
  private final int faultPercent;
  private final Duration timeout;
  private final Consumer<String> say;

  McpDemo(int actions, int faultPercent, Duration timeout, Consumer<String> say) {
    this.actions = actions;
    this.faultPercent = faultPercent;
    this.timeout = timeout;
    this.say = say;
  }

  /** Runs the demo with the ledger's state in {@code stateDir}, which it removes at the end. */
  int run(Path stateDir) throws Exception {
    try {
      return runIn(stateDir);
    } finally {
      Utils.delete(stateDir.toFile()); // the ledger's RocksDB stores: nothing of a demo is kept
    }
  }

  private int runIn(Path stateDir) throws Exception {
    say.accept("starting an embedded KRaft broker and a sample MCP server (create_charge)");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
        CountingMcpServer upstream = CountingMcpServer.startHttp(0)) {
      ToolPolicies policies =
          new ToolPolicyLoader()
              .parse(
                  """
          tools:
            create_charge:
              class: irreversible
              pendingTimeout: 10m
              onInFlight: coalesce
              onAmbiguous: hold
              lane: mcp
              connector: mcp
              settings: {url: "%s", timeout: 10s, effectIdPointer: /id, lookupTool: find_charge}
          """
                      .formatted(upstream.url()),
                  "mcp demo tools");
      kafka.createTopics(DemoWorkload.topics(policies));
      Properties kafkaProps = new Properties();
      kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
      Properties streamsProps = new Properties();
      streamsProps.putAll(kafkaProps);
      streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "effectledger-mcp-demo");
      streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
      streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
      McpGatewayConfig gatewayConfig =
          McpGatewayConfig.parse(
              JSON.readTree(
                  JSON.writeValueAsString(
                      Map.of(
                          "listen", Map.of("port", 0),
                          "tenant", TENANT,
                          "run", Map.of("header", "X-Agent-Run"),
                          "wait", "60s",
                          "kafka", Map.of("bootstrap.servers", kafka.bootstrapServers()),
                          "schemaRegistryUrl", DemoCommand.REGISTRY,
                          "upstreams", Map.of("payments", Map.of("url", upstream.url()))))),
              Path.of("."));
      say.accept("starting the ledger, an executor for lane mcp and the MCP gateway");
      try (KafkaStreams ledger =
              LedgerTopology.streams(
                  LedgerConfig.of(policies, DemoCommand.REGISTRY), streamsProps);
          EffectExecutor executor =
              EffectExecutor.start(
                  ExecutorConfig.of(kafkaProps, List.of("mcp"), DemoCommand.REGISTRY),
                  McpConnectors.all().create(policies, List.of("mcp"), Clock.systemUTC()),
                  policies)) {
        ledger.start();
        try (McpGateway gateway = McpGateway.startHttp(gatewayConfig, policies)) {
          say.accept("the agent calls " + gateway.url());
          return workload(gateway.url(), upstream, policies, kafkaProps);
        }
      }
    }
  }

  private int workload(
      String url, CountingMcpServer upstream, ToolPolicies policies, Properties kafkaProps)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    AtomicInteger calls = new AtomicInteger();
    AtomicInteger replays = new AtomicInteger();
    AtomicInteger held = new AtomicInteger();
    List<Integer> faulty = new ArrayList<>();
    for (int i = 0; i < actions; i++) {
      if (faultPercent > 0 && Math.floorMod(i * 37 + 11, 100) < faultPercent) {
        faulty.add(i);
        upstream.inject(keyOf(i), CountingMcpServer.Fault.DROP_AFTER);
      }
    }
    // agents at once, as a fleet of them would be: a dropped connection meets the calls of others
    // in flight too, which then are ambiguous (held, then settled) like the ones it was meant for
    int agents = Math.max(1, Math.min(AGENTS, actions));
    AtomicInteger called = new AtomicInteger();
    int quarter = Math.max(1, actions / 4);
    ExecutorService pool = Executors.newFixedThreadPool(agents);
    try {
      List<Future<?>> working = new ArrayList<>();
      for (int w = 0; w < agents; w++) {
        int first = w;
        working.add(
            pool.submit(
                () -> {
                  try (McpSyncClient session = agent(url);
                      McpSyncClient reconnected = agent(url)) {
                    for (int i = first; i < actions; i += agents) {
                      // the call, the model re-emitting it, the call again after a reconnect
                      for (McpSyncClient agent : List.of(session, session, reconnected)) {
                        CallToolResult answer = agent.callTool(call(i));
                        calls.incrementAndGet();
                        if (held(answer)) {
                          held.incrementAndGet();
                        } else if (replayed(answer)) {
                          replays.incrementAndGet();
                        }
                      }
                      int n = called.incrementAndGet();
                      if (n % quarter == 0) {
                        say.accept(n + " of " + actions + " actions called three times each");
                      }
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> agent : working) {
        agent.get();
      }
      say.accept("the orchestrator restarts and replays every action (the run in _meta)");
      Map<String, Connector> connectors =
          McpConnectors.all().create(policies, List.of("mcp"), Clock.systemUTC());
      List<Integer> open = new ArrayList<>();
      for (int i = 0; i < actions; i++) {
        open.add(i);
      }
      try (Reconciler reconciler =
          new Reconciler(
              kafkaProps,
              DemoCommand.REGISTRY,
              connectors,
              Reconciler.lanesOf(policies),
              Duration.ZERO,
              Clock.systemUTC())) {
        while (!open.isEmpty() && System.nanoTime() < deadline) {
          List<Integer> round = open;
          List<Integer> still = new CopyOnWriteArrayList<>();
          List<Future<?>> replaying = new ArrayList<>();
          for (int w = 0; w < agents; w++) {
            int first = w;
            replaying.add(
                pool.submit(
                    () -> {
                      try (McpSyncClient restarted = agent(url)) {
                        for (int j = first; j < round.size(); j += agents) {
                          int i = round.get(j);
                          CallToolResult answer = restarted.callTool(call(i));
                          calls.incrementAndGet();
                          if (held(answer) || Boolean.TRUE.equals(answer.isError())) {
                            still.add(i);
                          } else {
                            if (replayed(answer)) {
                              replays.incrementAndGet();
                            }
                          }
                        }
                      }
                      return null;
                    }));
          }
          for (Future<?> agent : replaying) {
            agent.get();
          }
          open = new ArrayList<>(still);
          if (!open.isEmpty()) {
            say.accept(
                open.size() + " actions held; the reconciler asks the MCP server (find_charge)");
            reconciler.reconcileOnce();
            Thread.sleep(500);
          }
        }
      } finally {
        connectors.values().forEach(Connector::close);
      }
      return report(upstream, calls.get(), replays.get(), held.get(), faulty.size(), open.size());
    } finally {
      pool.shutdownNow();
    }
  }

  private int report(
      CountingMcpServer upstream, int calls, int replays, int held, int faulty, int unsettled) {
    int exactlyOnce = 0;
    List<String> wrong = new ArrayList<>();
    for (int i = 0; i < actions; i++) {
      int effects = upstream.effects(keyOf(i));
      if (effects == 1) {
        exactlyOnce++;
      } else {
        wrong.add("action " + i + ": " + effects + " effects");
      }
    }
    PrintStream out = System.out;
    out.println();
    out.printf("%-44s %8s%n", "MCP round trip", "");
    out.printf("%-44s %8d%n", "actions", actions);
    out.printf("%-44s %8d%n", "tools/call through the gateway", calls);
    out.printf("%-44s %8d%n", "answered replayed (no second effect)", replays);
    out.printf("%-44s %8d%n", "connections dropped after the effect", faulty);
    out.printf("%-44s %8d%n", "answered held (EFFECT_HELD), then settled", held);
    out.printf("%-44s %8d%n", "effects at the MCP server", upstream.effectCount());
    out.printf("%-44s %8d%n", "actions that took effect exactly once", exactlyOnce);
    out.printf("%-44s %8d%n", "actions still unsettled at --timeout", unsettled);
    wrong.forEach(w -> out.println("  NOT ONCE: " + w));
    boolean once = wrong.isEmpty() && unsettled == 0;
    out.println(
        once
            ? "every action took effect exactly once"
            : "SOME ACTIONS DID NOT TAKE EFFECT EXACTLY ONCE (see above)");
    return once ? 0 : 1;
  }

  private static String keyOf(int i) {
    try {
      return IdempotencyKeys.derive(
              new StepContext(TENANT, run(i), "mcp:create_charge", ""),
              "create_charge",
              JSON.writeValueAsString(arguments(i)),
              KeyRules.NONE)
          .key();
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String run(int i) {
    return "mcp-demo-run-" + i;
  }

  private static Map<String, Object> arguments(int i) {
    return Map.of("amount", 100 + i, "to", "cus_" + i);
  }

  /** The call of action {@code i}, its run in {@code _meta} (as an orchestrator sends it). */
  private static CallToolRequest call(int i) {
    return CallToolRequest.builder()
        .name("create_charge")
        .arguments(arguments(i))
        .meta(Map.of(McpMeta.RUN_ID, run(i)))
        .build();
  }

  private static boolean held(CallToolResult answer) {
    return Boolean.TRUE.equals(answer.isError())
        && answer.structuredContent() instanceof Map<?, ?> s
        && "EFFECT_HELD".equals(s.get("code"));
  }

  private static boolean replayed(CallToolResult answer) {
    return answer.meta() != null && Boolean.TRUE.equals(answer.meta().get(McpMeta.REPLAYED));
  }

  private static McpSyncClient agent(String url) {
    return McpHttpClients.open(url, Map.of(), Duration.ofSeconds(90));
  }
}
