package dev.effectledger.app;

import dev.effectledger.app.console.Console;
import dev.effectledger.app.console.ConsoleActions;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.topology.CoPartitioning;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger processor}: the ledger topology with its HTTP endpoint. */
@Command(
    name = "processor",
    mixinStandardHelpOptions = true,
    description = {
      "Run the ledger topology against a Kafka cluster, with /v1/keys, /healthz, /readyz and"
          + " /metrics on http.host:http.port (127.0.0.1:8080 in config/processor.properties).",
      "The operator console is at /console on the same port (per-tool figures, the held queue,"
          + " settling held keys, bypass approvals): with http.auth.* tokens set it asks for one"
          + " (role operator to act), without it is open on a loopback address only;"
          + " console.enabled=false turns it off. See docs/operations.md#the-operator-console."
    })
final class ProcessorCommand implements Callable<Integer> {

  @Option(
      names = "--config",
      required = true,
      description =
          "properties file (see config/processor.properties); EFFECTLEDGER_* and KAFKA_BOOTSTRAP_SERVERS override it")
  Path config;

  @Option(names = "--tools", description = "tools.yaml; overrides tools.file")
  Path tools;

  @Override
  public Integer call() throws Exception {
    AppConfig cfg = AppConfig.load(config, System.getenv());
    AppConfig.advertisedServer(
        cfg.get(AppConfig.HTTP_HOST, "127.0.0.1"),
        cfg.get(AppConfig.HTTP_ADVERTISED_HOST),
        0); // before anything starts
    ToolPolicies policies = cfg.policies(tools);
    Properties kafka = cfg.kafka();
    kafka.putIfAbsent(StreamsConfig.APPLICATION_ID_CONFIG, "effectledger");
    InstanceIdentity identity = null;
    if (!kafka.containsKey(
        org.apache.kafka.clients.consumer.ConsumerConfig.GROUP_INSTANCE_ID_CONFIG)) {
      // static membership kept in the state directory, as Kafka Streams keeps its process id: a
      // restart on the same state.dir takes its tasks back at once (issue 52: 44 s without)
      identity =
          InstanceIdentity.claim(
              Path.of(
                      kafka.getProperty(
                          StreamsConfig.STATE_DIR_CONFIG,
                          Path.of(System.getProperty("java.io.tmpdir"), "kafka-streams")
                              .toString()))
                  .resolve(kafka.getProperty(StreamsConfig.APPLICATION_ID_CONFIG) + "-instance"),
              "processor");
      kafka.put(
          org.apache.kafka.clients.consumer.ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, identity.id());
    }
    InstanceIdentity heldIdentity = identity;
    KafkaReachable.await(kafka, "processor", cfg.startupWait(), System.err);
    int partitions;
    try (Admin admin = Admin.create(kafka)) {
      TopicProvisioner topics = new TopicProvisioner(admin);
      if (cfg.getBoolean(AppConfig.TOPICS_CREATE, false)) {
        topics.create(
            TopicProvisioner.topics(policies),
            cfg.getInt(AppConfig.TOPICS_PARTITIONS, 8),
            (short) cfg.getInt(AppConfig.TOPICS_REPLICATION, 3),
            cfg.getInt(AppConfig.TOPICS_MIN_ISR, 0));
      }
      topics.check(
          TopicProvisioner.topics(policies),
          kafka.getProperty(StreamsConfig.APPLICATION_ID_CONFIG));
      partitions = CoPartitioning.verify(admin);
      if (cfg.getBoolean(AppConfig.POLICY_LIVE, true)) {
        CoPartitioning.verifyPolicy(admin, partitions);
      }
    }
    PrometheusMeterRegistry registry = PrometheusMetrics.registry();
    LedgerHttpServer http =
        new LedgerHttpServer(
            cfg.get(AppConfig.HTTP_HOST, "127.0.0.1"),
            cfg.getInt(AppConfig.HTTP_PORT, 8080),
            registry,
            cfg.httpAuth(),
            cfg.getBoolean(AppConfig.HTTP_AUTH_METRICS, false));
    String advertised =
        AppConfig.advertisedServer(
            cfg.get(AppConfig.HTTP_HOST, "127.0.0.1"),
            cfg.get(AppConfig.HTTP_ADVERTISED_HOST),
            http.port());
    kafka.put(StreamsConfig.APPLICATION_SERVER_CONFIG, advertised);
    http.advertisedAs(advertised);
    LivePolicies live = new LivePolicies(AppliedPolicy.seed(policies, cfg.policySource(tools)));
    // tools added by `tools apply` get series of their own
    MicrometerObserver observer =
        new MicrometerObserver(registry, () -> live.newest().policies().tools().keySet());
    http.doubleEffects(observer::doubleEffects);
    LedgerConfig ledgerConfig =
        cfg.ledgerConfig(policies).withIntentPartitions(partitions).withObserver(observer);
    List<String> bypassable =
        policies.tools().values().stream()
            .filter(ToolPolicy::bypassAllowed)
            .map(ToolPolicy::name)
            .toList();
    if (!ledgerConfig.bypassApprovals().verifying() && !bypassable.isEmpty()) {
      System.err.println(
          "effectledger processor: tools "
              + bypassable
              + " allow bypass and no "
              + AppConfig.BYPASS_SIGNER_PREFIX
              + "<name> is configured, so any producer of intents can run a settled key again."
              + " Configure a signer: effectledger approve keygen (docs/tool-policy.md#bypass)");
    }
    KafkaStreams streams =
        LedgerTopology.streams(
            ledgerConfig,
            SchemaRegistries.forUrl(ledgerConfig.schemaRegistryUrl(), kafka),
            live,
            kafka);
    streams.setUncaughtExceptionHandler(
        new StreamThreadFailures(10, Duration.ofMinutes(5), Clock.systemUTC()));
    KafkaStreamsMetrics streamsMetrics = new KafkaStreamsMetrics(streams);
    streamsMetrics.bindTo(registry);
    StoreLags storeLags = StoreLags.bind(streams, registry);
    // Under exactly_once_v2, a transaction of the ledger's that a broker crash left hanging on its
    // changelogs would stop restoration for good: the sweep ends it as its coordinator decided.
    AutoCloseable ledgerSweep =
        StreamsConfig.AT_LEAST_ONCE.equals(
                kafka.getProperty(StreamsConfig.PROCESSING_GUARANTEE_CONFIG))
            ? () -> {}
            : LedgerSweep.start(kafka);
    ConsoleActions consoleActions = console(cfg, http, kafka, ledgerConfig, live);
    Lifecycle lifecycle =
        new Lifecycle(
            "processor",
            http,
            // a derived identity leaves on a clean stop (its tasks move at once, as without
            // one); after kill -9 it is back as the same member before its session expires
            () ->
                streams.close(
                    org.apache.kafka.streams.CloseOptions.timeout(Duration.ofSeconds(30))
                        .withGroupMembershipOperation(
                            heldIdentity != null
                                ? org.apache.kafka.streams.CloseOptions.GroupMembershipOperation
                                    .LEAVE_GROUP
                                : org.apache.kafka.streams.CloseOptions.GroupMembershipOperation
                                    .REMAIN_IN_GROUP)),
            streamsMetrics,
            storeLags,
            ledgerSweep,
            consoleActions == null ? () -> {} : consoleActions,
            () -> {
              if (heldIdentity != null) {
                heldIdentity.close();
              }
            });
    http.serve(streams, live);
    streams.start();
    System.out.println(
        "effectledger processor: "
            + policies.tools().size()
            + " tools; http://"
            + http.address().host()
            + ":"
            + http.port()
            + " (/readyz answers 200 once Kafka Streams is RUNNING"
            + (consoleActions == null ? "" : "; the console is at /console")
            + ")");
    return lifecycle.awaitStop(
        () ->
            streams.state() == KafkaStreams.State.ERROR
                ? "Kafka Streams stopped in state ERROR (its error is logged above)"
                : streams.state() == KafkaStreams.State.NOT_RUNNING
                        || streams.state() == KafkaStreams.State.PENDING_SHUTDOWN
                    ? "Kafka Streams shut down: stream threads kept dying (the causes are logged above)"
                    : null);
  }

  /**
   * Serves the operator console on {@code http} unless {@code console.enabled=false}; returns what
   * to close at the end, or null.
   */
  static ConsoleActions console(
      AppConfig cfg,
      LedgerHttpServer http,
      Properties kafka,
      LedgerConfig ledgerConfig,
      LivePolicies live) {
    if (!cfg.getBoolean(AppConfig.CONSOLE_ENABLED, true)) {
      return null;
    }
    String signer = cfg.get(AppConfig.CONSOLE_SIGNER);
    String keyFile = cfg.get(AppConfig.CONSOLE_SIGNER_KEY);
    java.security.PrivateKey key = null;
    if ((signer == null) != (keyFile == null)) {
      throw new IllegalArgumentException(
          "give both "
              + AppConfig.CONSOLE_SIGNER
              + " and "
              + AppConfig.CONSOLE_SIGNER_KEY
              + " (effectledger approve keygen makes the pair), or neither");
    }
    if (keyFile != null) {
      try {
        key =
            dev.effectledger.schema.BypassApprovals.privateKey(
                java.nio.file.Files.readString(
                    Path.of(keyFile), java.nio.charset.StandardCharsets.US_ASCII));
      } catch (java.io.IOException | IllegalArgumentException e) {
        throw new IllegalArgumentException(
            AppConfig.CONSOLE_SIGNER_KEY
                + " "
                + keyFile
                + " cannot be read as a signer's private key (effectledger approve keygen): "
                + e.getMessage());
      }
    }
    Duration ttl = cfg.getDuration(AppConfig.CONSOLE_SESSION_TTL, Duration.ofHours(8));
    Duration lookback = cfg.getDuration(AppConfig.CONSOLE_AUDIT_LOOKBACK, Duration.ofDays(7));
    java.util.function.Supplier<ToolPolicies> policies = () -> live.newest().policies();
    ConsoleActions actions =
        new ConsoleActions(
            kafka,
            ledgerConfig.schemaRegistryUrl(),
            policies,
            signer,
            key,
            lookback,
            Clock.systemUTC());
    String executors = cfg.get(AppConfig.CONSOLE_EXECUTORS, "");
    http.console(
        new Console(
            http,
            cfg.httpAuth(),
            cfg.get(AppConfig.HTTP_HOST, "127.0.0.1"),
            actions,
            java.util.Arrays.stream(executors.split(","))
                .map(String::trim)
                .filter(u -> !u.isEmpty())
                .map(u -> u.endsWith("/") ? u.substring(0, u.length() - 1) : u)
                .toList(),
            policies,
            ttl,
            Clock.systemUTC(),
            cfg.consoleSignIn(),
            cfg.consoleSignInRedirect()));
    return actions;
  }
}
