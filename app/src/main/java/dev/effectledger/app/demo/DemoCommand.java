package dev.effectledger.app.demo;

import dev.effectledger.app.LedgerHttpServer;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code effectledger demo}: the whole system in one JVM on an embedded broker, driven by a
 * simulated agent workload that retries at all four layers against faulty downstreams, ending with
 * a table and a non-zero exit if any action took effect other than once or any reply is missing.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description =
        "Run broker, ledger, executors, downstreams and a simulated agent workload in-process; print what took effect.")
public final class DemoCommand implements Callable<Integer> {

  @Option(
      names = "--actions",
      defaultValue = "1500",
      description = "logical actions to run (default: ${DEFAULT-VALUE})")
  int actions;

  @Option(
      names = "--fault-percent",
      defaultValue = "10",
      description = "share of calls whose downstream misbehaves once (default: ${DEFAULT-VALUE})")
  int faultPercent;

  @Option(
      names = "--timeout",
      defaultValue = "PT5M",
      description = "how long the workload may take, ISO-8601 (default: ${DEFAULT-VALUE})")
  Duration timeout;

  /** How the simulated agents reach the ledger. */
  enum Via {
    kafka,
    gateway,
    mcp
  }

  @Option(
      names = "--via",
      defaultValue = "kafka",
      description =
          "kafka: agents use the Java client; gateway: agents call two HTTP gateways (the restarted"
              + " orchestrator the second one); mcp: an MCP client calls an MCP server's write tool"
              + " through the MCP gateway (default: ${DEFAULT-VALUE})")
  Via via;

  @Option(
      names = "--work-dir",
      paramLabel = "DIR",
      description =
          "where the demo keeps the ledger's state while it runs (default: the system's temporary"
              + " folder); what it makes there is removed when it ends")
  Path workDir;

  static final String REGISTRY = "mock://demo";
  static final List<String> LANES = List.of("payments", "events", "notify");

  @Override
  public Integer call() throws Exception {
    if (actions < 1 || faultPercent < 0 || faultPercent > 100) {
      System.err.println(
          "effectledger demo: --actions must be at least 1 and --fault-percent within 0..100");
      return 2;
    }
    if (via == Via.mcp) {
      return new McpDemo(actions, faultPercent, timeout, this::say)
          .run(stateDir("effectledger-mcp-demo"));
    }
    Path stateDir = stateDir("effectledger-demo");
    try {
      say("starting an embedded KRaft broker");
      try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
          CountingDownstream payments = CountingDownstream.start(Duration.ofSeconds(2));
          CountingDownstream receipts =
              CountingDownstream.start(Duration.ofSeconds(2)).honoursKeys(false)) {
        ToolPolicies policies =
            new ToolPolicyLoader()
                .parse(DemoWorkload.toolsYaml(payments.url(), receipts.url()), "demo tools");
        kafka.createTopics(DemoWorkload.topics(policies));
        Properties kafkaProps = new Properties();
        kafkaProps.put("bootstrap.servers", kafka.bootstrapServers());
        Properties streamsProps = new Properties();
        streamsProps.putAll(kafkaProps);
        streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, "effectledger-demo");
        streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        LedgerHttpServer http =
            via == Via.gateway
                ? new LedgerHttpServer("127.0.0.1", 0, PrometheusMetrics.registry())
                : null;
        if (http != null) {
          streamsProps.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + http.port());
        }
        say("starting the ledger topology (exactly_once_v2) and an executor for lanes " + LANES);
        try (KafkaStreams ledger =
                LedgerTopology.streams(LedgerConfig.of(policies, REGISTRY), streamsProps);
            EffectExecutor executor =
                EffectExecutor.start(
                    ExecutorConfig.of(kafkaProps, LANES, REGISTRY),
                    McpConnectors.all().create(policies, LANES, Clock.systemUTC()),
                    policies);
            AutoCloseable ledgerHttp = http == null ? () -> {} : http;
            Agents agents = agents(kafka, kafkaProps, policies, http)) {
          ledger.start();
          if (http != null) {
            http.serve(ledger);
            agents.awaitReady(timeout);
          }
          DemoCounters counters = new DemoCounters(kafka.bootstrapServers(), REGISTRY);
          DemoWorkload workload =
              new DemoWorkload(
                  actions,
                  faultPercent,
                  payments,
                  receipts,
                  agents.agent(),
                  agents.restarted(),
                  kafka.bootstrapServers());
          say(
              "running "
                  + actions
                  + " logical actions; each call is retried by the tool wrapper, some re-emitted by the model,"
                  + " some replayed after an orchestrator crash; "
                  + faultPercent
                  + "% meet a downstream fault");
          DemoWorkload.Result result = workload.run(timeout, this::say);
          say("reconciling actions held as UNKNOWN with the downstreams");
          try (Reconciler reconciler =
              new Reconciler(
                  kafkaProps,
                  REGISTRY,
                  McpConnectors.all().create(policies, List.of("notify"), Clock.systemUTC()),
                  Reconciler.lanesOf(policies),
                  Duration.ZERO,
                  Clock.systemUTC())) {
            result = workload.reconcile(reconciler, result, timeout);
          }
          DemoWorkload.Report report = counters.report(result, payments, receipts);
          report.print(System.out);
          return report.exactlyOnce() ? 0 : 1;
        }
      }
    } finally {
      Utils.delete(stateDir.toFile()); // the ledger's RocksDB stores: nothing of a demo is kept
    }
  }

  /** A new state directory for this run, under {@code --work-dir} when given. */
  private Path stateDir(String prefix) throws java.io.IOException {
    return workDir == null
        ? Files.createTempDirectory(prefix)
        : Files.createTempDirectory(Files.createDirectories(workDir), prefix);
  }

  /** The workload's two agents, and the gateways they call when {@code --via gateway}. */
  private record Agents(ToolCalls agent, ToolCalls restarted, List<Gateway> gateways)
      implements AutoCloseable {

    void awaitReady(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (!gateways.stream().allMatch(Gateway::isReady)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "the demo's gateways were not ready within " + timeout + "; raise --timeout");
        }
        Thread.sleep(100);
      }
    }

    @Override
    public void close() {
      agent.close();
      restarted.close();
      gateways.forEach(Gateway::close);
    }
  }

  private Agents agents(
      EmbeddedKafkaCluster kafka,
      Properties kafkaProps,
      ToolPolicies policies,
      LedgerHttpServer http) {
    if (via == Via.kafka) {
      return new Agents(client(kafka), client(kafka), List.of());
    }
    // A token made for this run; the gateways keep only its SHA-256, mapped to the demo's tenant.
    String token = UUID.randomUUID().toString();
    Credentials credentials =
        Credentials.of(
            Map.of(
                Credentials.sha256Hex(token),
                new Credentials.Caller("demo", DemoWorkload.TENANT, Set.of())));
    List<Gateway> gateways = new ArrayList<>();
    for (String instance : List.of("demo-gw-1", "demo-gw-2")) {
      gateways.add(
          Gateway.start(
              GatewayConfig.of(
                      instance,
                      kafkaProps,
                      REGISTRY,
                      URI.create("http://127.0.0.1:" + http.port()),
                      policies,
                      credentials)
                  .withWaits(Duration.ofSeconds(10), Duration.ofSeconds(30))
                  .withReplyTopic(4, (short) 1)));
    }
    say(
        "agents call the HTTP gateways at "
            + gateways.get(0).uri()
            + " and (after the orchestrator restarts) "
            + gateways.get(1).uri());
    return new Agents(
        new GatewayToolCalls(gateways.get(0).uri(), token, policies, Duration.ofMinutes(2)),
        new GatewayToolCalls(gateways.get(1).uri(), token, policies, Duration.ofMinutes(2)),
        gateways);
  }

  private static ToolCallClient client(EmbeddedKafkaCluster kafka) {
    return ToolCallClient.builder()
        .bootstrapServers(kafka.bootstrapServers())
        .schemaRegistryUrl(REGISTRY)
        .keyRules(
            "charge_card",
            KeyRules.builder()
                .ignore("/reason")
                .require("/amount", "/currency", "/customer")
                .build())
        .keyRules("send_receipt", KeyRules.builder().require("/customer").build())
        .keyRules("publish_order_event", KeyRules.builder().require("/order").build())
        .timeout(Duration.ofMinutes(2))
        .build();
  }

  private void say(String line) {
    System.out.println("[demo] " + line);
    System.out.flush();
  }
}
