package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.app.console.ConsoleActions;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * A ledger with its console, an executor and two counting downstreams, wired as {@code effectledger
 * processor} wires them (its properties file, through {@link ProcessorCommand#console}): tokens for
 * an operator ({@link #OPERATOR_TOKEN}, alice) and a viewer ({@link #VIEWER_TOKEN}, victor), a
 * signer the ledger trusts whose key the console signs with, and the executor's health endpoint
 * shown in the console.
 */
final class ConsolePipeline implements AutoCloseable {

  static final String OPERATOR_TOKEN = "alice-secret-token";
  static final String VIEWER_TOKEN = "victor-secret-token";

  final CountingDownstream payments;
  final CountingDownstream risky;
  final ToolPolicies policies;
  final KeyPair signer = BypassApprovals.generate();
  private final String bootstrap;
  private final String registry;
  private final KafkaStreams ledger;
  private final LedgerHttpServer http;
  private final EffectExecutor executor;
  private final HealthEndpoint executorHealth;
  private final ConsoleActions actions;
  private final ToolCallClient client;

  ConsolePipeline(String bootstrap, String name, Path dir) throws Exception {
    this(bootstrap, name, dir, List.of());
  }

  /** With {@code settings} (lines of the processor's properties) added to its file. */
  ConsolePipeline(String bootstrap, String name, Path dir, List<String> settings) throws Exception {
    this.bootstrap = bootstrap;
    this.registry = "mock://" + name;
    payments = CountingDownstream.start(Duration.ofSeconds(20));
    risky = CountingDownstream.start(Duration.ofSeconds(20)).honoursKeys(false);
    String toolsYaml =
        """
        tools:
          send_email:
            class: write-non-idempotent
            pendingTimeout: 10m
            onInFlight: refuse
            bypass: true
            lane: payments
            connector: http
            settings: {url: "%1$s", timeout: 30s, honoursKeys: true, effectIdPointer: /id}
          transfer:
            class: irreversible
            pendingTimeout: 10m
            onAmbiguous: hold
            lane: risky
            connector: http
            settings: {url: "%2$s", timeout: 5s, honoursKeys: false, effectIdPointer: /id, lookupUrl: "%2$s?key={key}"}
          wire:
            class: irreversible
            pendingTimeout: 10m
            onAmbiguous: hold
            lane: risky
            connector: http
            settings: {url: "%2$s", timeout: 5s, honoursKeys: false, effectIdPointer: /id, lookupUrl: "http://127.0.0.1:%3$d/lookup?key={key}"}
        """
            .formatted(payments.url(), risky.url(), deadPort());
    policies = new ToolPolicyLoader().parse(toolsYaml, name + ".yaml");
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      new TopicProvisioner(admin).create(TopicProvisioner.topics(policies), 4, (short) 1, 0);
    }
    PrometheusMeterRegistry executorMetrics = PrometheusMetrics.registry();
    executor =
        EffectExecutor.start(
            ExecutorConfig.of(kafka(), List.of("payments", "risky"), registry),
            Connectors.forLanes(policies, List.of("payments", "risky"), Clock.systemUTC()),
            policies,
            new MicrometerExecutorObserver(executorMetrics));
    executorHealth =
        HealthEndpoint.start(
            "127.0.0.1",
            0,
            AppConfig.EXECUTOR_HTTP_PORT,
            () -> executor.isRunning() ? null : "stopped",
            executorMetrics);

    Path keyFile = dir.resolve("console-signer.key");
    Files.writeString(
        keyFile, BypassApprovals.encode(signer.getPrivate()), StandardCharsets.US_ASCII);
    Path config = dir.resolve("processor.properties");
    Files.writeString(
        config,
        String.join(
            "\n",
            "bootstrap.servers=" + bootstrap,
            "schema.registry.url=" + registry,
            "http.host=127.0.0.1",
            "http.auth.alice.sha256=" + Credentials.sha256Hex(OPERATOR_TOKEN),
            "http.auth.alice.role=operator",
            "http.auth.victor.sha256=" + Credentials.sha256Hex(VIEWER_TOKEN),
            "http.auth.victor.role=viewer",
            "ledger.bypass.signer.console=" + BypassApprovals.encode(signer.getPublic()),
            "console.approvals.signer=console",
            "console.approvals.key.file=" + keyFile,
            "console.executors=http://127.0.0.1:" + executorHealth.port(),
            String.join("\n", settings),
            ""));
    AppConfig cfg = AppConfig.load(config, Map.of());
    PrometheusMeterRegistry ledgerMetrics = PrometheusMetrics.registry();
    http = new LedgerHttpServer("127.0.0.1", 0, ledgerMetrics, cfg.httpAuth(), false);
    LedgerConfig ledgerConfig =
        cfg.ledgerConfig(policies)
            .withIntentPartitions(4)
            .withObserver(new MicrometerObserver(ledgerMetrics, policies.tools().keySet()));
    Properties props = kafka();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
    props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state").toString());
    props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + http.port());
    LivePolicies live = new LivePolicies(dev.effectledger.policy.AppliedPolicy.seed(policies, ""));
    ledger =
        LedgerTopology.streams(
            ledgerConfig,
            dev.effectledger.schema.serde.SchemaRegistries.forUrl(registry),
            live,
            props);
    actions = ProcessorCommand.console(cfg, http, props, ledgerConfig, live);
    http.serve(ledger, live);
    ledger.start();
    await("the console pipeline's ledger is RUNNING")
        .atMost(Duration.ofSeconds(60))
        .untilAsserted(
            () ->
                assertThat(ledger.state())
                    .as("the ledger's state")
                    .isEqualTo(KafkaStreams.State.RUNNING));
    client =
        ToolCallClient.builder()
            .kafka(kafka())
            .schemaRegistryUrl(registry)
            .timeout(Duration.ofSeconds(30))
            .build();
  }

  /** A loopback port nothing listens on: a lookup there cannot tell. */
  private static int deadPort() throws java.io.IOException {
    try (var socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  Properties kafka() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return p;
  }

  String registry() {
    return registry;
  }

  URI console() {
    return URI.create("http://127.0.0.1:" + http.port() + "/console");
  }

  int port() {
    return http.port();
  }

  /** One agent call through the Java client, waited for. */
  ToolResult call(String tool, String step, String arguments, String bypass) throws Exception {
    ToolCall call = ToolCall.of(StepContext.of("acme", "run-1", step), tool, arguments);
    return client.callAndWait(bypass == null ? call : call.withBypass(bypass));
  }

  String keyOf(String tool, String step, String arguments) {
    return client.keyOf(ToolCall.of(StepContext.of("acme", "run-1", step), tool, arguments)).key();
  }

  @Override
  public void close() {
    client.close();
    executor.close();
    ledger.close(Duration.ofSeconds(30));
    actions.close();
    http.close();
    executorHealth.close();
    payments.close();
    risky.close();
  }
}
