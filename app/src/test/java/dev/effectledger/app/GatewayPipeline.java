package dev.effectledger.app;

import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * What a gateway stands in front of, in one JVM on a test's cluster: the ledger with its HTTP
 * endpoint, an executor for lanes {@code payments} (a payment API that honours keys; {@code
 * charge_card} coalesces, {@code send_email} refuses duplicates in flight and allows an operator's
 * bypass, {@code refund} always fails, {@code reserve} is released after one retryable failure) and
 * {@code risky} ({@code transfer}, on an API that ignores keys, held when ambiguous).
 */
final class GatewayPipeline implements AutoCloseable {

  static final String TOKEN = "token-acme";
  static final String NARROW_TOKEN = "token-narrow";

  /** The token the gateways send to the processor's query API. */
  static final String LEDGER_TOKEN = "ledger-token";

  final CountingDownstream payments;
  final CountingDownstream risky;
  final ToolPolicies policies;
  final String toolsYaml;
  private final String bootstrap;
  private final String registry;
  private final KafkaStreams ledger;
  private final LedgerHttpServer ledgerHttp;
  private final EffectExecutor executor;
  private final Path state;
  final PrometheusMeterRegistry ledgerMetrics;
  final PrometheusMeterRegistry executorMetrics;

  /** How long the payment APIs hold a hanging answer. */
  private static final Duration HANG = Duration.ofSeconds(20);

  /**
   * The tools of the default pipeline: {@code %1$s} is the payment API's URL, {@code %2$s} a URL
   * that answers 404, {@code %3$s} the key-ignoring API's.
   */
  static final String DEFAULT_TOOLS =
      """
          tools:
            charge_card:
              class: irreversible
              pendingTimeout: 10m
              onInFlight: coalesce
              lane: payments
              connector: http
              key: {ignore: [/reason], require: [/amount, /to]}
              settings: {url: "%1$s", timeout: 30s, honoursKeys: true, effectIdPointer: /id}
            send_email:
              class: write-non-idempotent
              pendingTimeout: 10m
              onInFlight: refuse
              bypass: true
              lane: payments
              connector: http
              settings: {url: "%1$s", timeout: 30s, honoursKeys: true, effectIdPointer: /id}
            refund:
              class: write-non-idempotent
              pendingTimeout: 10m
              lane: payments
              connector: http
              settings: {url: "%2$s", timeout: 5s, honoursKeys: true}
            reserve:
              class: irreversible
              pendingTimeout: 10m
              lane: payments
              connector: http
              retry: {maxAttempts: 1}
              settings: {url: "%1$s", timeout: 30s, honoursKeys: true, effectIdPointer: /id}
            transfer:
              class: irreversible
              pendingTimeout: 10m
              onAmbiguous: hold
              lane: risky
              connector: http
              settings: {url: "%3$s", timeout: 5s, honoursKeys: false, effectIdPointer: /id, lookupUrl: "%3$s?key={key}"}
          """;

  private GatewayPipeline(
      String bootstrap, String name, String registry, String toolsTemplate, Duration hang)
      throws Exception {
    this.bootstrap = bootstrap;
    this.registry = registry;
    payments = CountingDownstream.start(hang);
    risky = CountingDownstream.start(Duration.ofSeconds(20)).honoursKeys(false);
    toolsYaml =
        toolsTemplate.formatted(
            payments.url(), payments.url().replace("/charges", "/no-such-api"), risky.url());
    try {
      policies = new ToolPolicyLoader().parse(toolsYaml, name + ".yaml");
    } catch (RuntimeException e) {
      payments.close();
      risky.close();
      throw e;
    }
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      new TopicProvisioner(admin).create(TopicProvisioner.topics(policies), 4, (short) 1, 0);
    }
    state = Files.createTempDirectory(name);
    Properties auth = new Properties();
    auth.setProperty("http.auth.gateways.sha256", Credentials.sha256Hex(LEDGER_TOKEN));
    // the processor's query API wants a token, as deployed: the gateways send theirs
    // the processor's and the executor's meters as the commands register them
    ledgerMetrics = PrometheusMetrics.registry();
    executorMetrics = PrometheusMetrics.registry();
    ledgerHttp =
        new LedgerHttpServer("127.0.0.1", 0, ledgerMetrics, HttpAuth.fromProperties(auth), false);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + ledgerHttp.port());
    ledger =
        LedgerTopology.streams(
            LedgerConfig.of(policies, registry)
                .withIntentPartitions(4)
                .withObserver(new MicrometerObserver(ledgerMetrics, policies.tools().keySet())),
            props);
    ledgerHttp.serve(ledger);
    ledger.start();
    executor =
        EffectExecutor.start(
            ExecutorConfig.of(kafka(), List.of("payments", "risky"), registry),
            Connectors.forLanes(policies, List.of("payments", "risky"), Clock.systemUTC()),
            policies,
            new MicrometerExecutorObserver(executorMetrics));
  }

  static GatewayPipeline start(String bootstrap, String name) throws Exception {
    return new GatewayPipeline(bootstrap, name, "mock://" + name, DEFAULT_TOOLS, HANG);
  }

  /**
   * With the tools of {@code toolsTemplate} instead of {@link #DEFAULT_TOOLS} (the same three
   * placeholders; lanes {@code payments} and {@code risky}), the payment API holding a hanging
   * answer for {@code hang}.
   */
  static GatewayPipeline startWithTools(
      String bootstrap, String name, String toolsTemplate, Duration hang) throws Exception {
    return new GatewayPipeline(bootstrap, name, "mock://" + name, toolsTemplate, hang);
  }

  /** On a Schema Registry at {@code registryUrl} (credentials, if any, in its user info). */
  static GatewayPipeline start(String bootstrap, String name, String registryUrl) throws Exception {
    return new GatewayPipeline(bootstrap, name, registryUrl, DEFAULT_TOOLS, HANG);
  }

  /** The body of {@code POST /v1/tools/{tool}/calls} for {@code arguments} at run and step. */
  static String call(String run, String step, String arguments) {
    return "{\"arguments\":"
        + arguments
        + ",\"step\":{\"run\":\""
        + run
        + "\",\"step\":\""
        + step
        + "\"}}";
  }

  Properties kafka() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return p;
  }

  String registry() {
    return registry;
  }

  String bootstrap() {
    return bootstrap;
  }

  URI ledgerUrl() {
    return URI.create("http://127.0.0.1:" + ledgerHttp.port());
  }

  /** Callers: {@link #TOKEN} (tenant acme, every tool), {@link #NARROW_TOKEN} (send_email only). */
  GatewayConfig gatewayConfig(String instance, URI ledgerUrl) {
    return gatewayConfig(instance, ledgerUrl, policies);
  }

  /** As {@link #gatewayConfig(String, URI)}, the gateway's own file holding {@code tools}. */
  GatewayConfig gatewayConfig(String instance, URI ledgerUrl, ToolPolicies tools) {
    return gatewayConfig(instance, ledgerUrl, tools, kafka());
  }

  /** As {@link #gatewayConfig(String, URI, ToolPolicies)}, with these Kafka settings. */
  GatewayConfig gatewayConfig(
      String instance, URI ledgerUrl, ToolPolicies tools, Properties kafkaSettings) {
    return GatewayConfig.of(
            instance,
            kafkaSettings,
            registry,
            ledgerUrl,
            tools,
            Credentials.of(
                Map.of(
                    Credentials.sha256Hex(TOKEN),
                    new Credentials.Caller("acme-agents", "acme", Set.of()),
                    Credentials.sha256Hex(NARROW_TOKEN),
                    new Credentials.Caller("narrow", "acme", Set.of("send_email")))))
        .withWaits(Duration.ofSeconds(20), Duration.ofSeconds(30))
        .withMaxBodyBytes(4096)
        .withReplyTopic(4, (short) 1)
        .withLedgerToken(LEDGER_TOKEN);
  }

  @Override
  public void close() {
    executor.close();
    ledger.close(Duration.ofSeconds(30));
    ledgerHttp.close();
    payments.close();
    risky.close();
    try {
      Utils.delete(state.toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
