package dev.effectledger.app;

import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.connectors.executor.ExecutorObserver;
import dev.effectledger.gateway.PrometheusMetrics;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.ToolPolicies;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger executor}: runs the effects of some lanes. */
@Command(
    name = "executor",
    mixinStandardHelpOptions = true,
    description = "Consume dispatch lanes and perform each effect through its tool's connector.")
final class ExecutorCommand implements Callable<Integer> {

  @Option(
      names = "--config",
      required = true,
      description =
          "properties file (see config/executor.properties); EFFECTLEDGER_* and KAFKA_BOOTSTRAP_SERVERS override it")
  Path config;

  @Option(
      names = "--lanes",
      required = true,
      split = ",",
      description = "lanes to consume, e.g. payments,tickets")
  List<String> lanes;

  @Option(names = "--tools", description = "tools.yaml; overrides tools.file")
  Path tools;

  @Override
  public Integer call() throws Exception {
    AppConfig cfg = AppConfig.load(config, System.getenv());
    ToolPolicies policies = cfg.policies(tools);
    ExecutorConfig executorConfig = executorConfig(cfg, lanes);
    InstanceIdentity identity = null;
    if (executorConfig.instanceId() == null) {
      // a restart takes back its predecessor's identity: it fences it at once (issue 52)
      identity = InstanceIdentity.claim(stateDir(cfg), executorConfig.groupId());
      executorConfig = executorConfig.withInstanceId(identity.id()).withLeaveGroupOnClose(true);
    }
    KafkaReachable.await(cfg.kafka(), "executor", cfg.startupWait(), System.err);
    String httpPort = cfg.get(AppConfig.EXECUTOR_HTTP_PORT);
    PrometheusMeterRegistry metrics = httpPort == null ? null : PrometheusMetrics.registry();
    EffectExecutor executor =
        EffectExecutor.start(
            executorConfig,
            McpConnectors.all().create(policies, lanes, Clock.systemUTC()),
            policies,
            metrics == null ? ExecutorObserver.NONE : new MicrometerExecutorObserver(metrics));
    HealthEndpoint health =
        httpPort == null
            ? null
            : HealthEndpoint.start(
                cfg.get(AppConfig.EXECUTOR_HTTP_HOST, "127.0.0.1"),
                cfg.getInt(AppConfig.EXECUTOR_HTTP_PORT, 0),
                AppConfig.EXECUTOR_HTTP_PORT,
                () -> executor.isRunning() ? null : "the executor stopped: " + executor.failure(),
                metrics);
    // The shutdown hook before anything else that takes time: the executor runs effects and /readyz
    // answers from here on, and a SIGTERM while tool-policy was read used to end the JVM without
    // closing the executor (status 143; ProcessesIT, 2026-11-28).
    InstanceIdentity held = identity;
    AutoCloseable release =
        () -> {
          if (held != null) {
            held.close();
          }
        };
    Lifecycle lifecycle =
        health == null
            ? new Lifecycle("executor", executor, release)
            : new Lifecycle("executor", executor, health, release);
    // After the health endpoint: reading tool-policy takes a moment, and /readyz answers meanwhile.
    long policyVersion =
        cfg.getBoolean(AppConfig.POLICY_LIVE, true)
            ? executor.followPolicy(p -> McpConnectors.all().create(p, lanes, Clock.systemUTC()))
            : 0;
    System.out.println(
        "effectledger executor: lanes "
            + lanes
            + ", "
            + executorConfig.concurrency()
            + " effects at once"
            + ", instance "
            + executorConfig.instanceId()
            + (identity == null ? "" : " (kept in " + stateDir(cfg) + ")")
            + (health == null ? "" : ", health on port " + health.port())
            + (policyVersion == 0 ? "" : ", tool policy version " + policyVersion));
    return lifecycle.awaitStop(
        () ->
            executor.isRunning() ? null : "the executor stopped on its own: " + executor.failure());
  }

  /** Where an executor without an instance id keeps the identity a restart takes back. */
  static Path stateDir(AppConfig cfg) {
    String dir = cfg.get(AppConfig.EXECUTOR_STATE_DIR);
    return dir != null
        ? Path.of(dir)
        : Path.of(System.getProperty("java.io.tmpdir"), "effectledger-executor");
  }

  /**
   * The executor's settings from {@code cfg}.
   *
   * @throws IllegalArgumentException naming the setting that is wrong
   */
  static ExecutorConfig executorConfig(AppConfig cfg, List<String> lanes) {
    ExecutorConfig executorConfig =
        ExecutorConfig.of(cfg.kafka(), lanes, cfg.get(AppConfig.SCHEMA_REGISTRY_URL))
            .withGroupId(cfg.get(AppConfig.EXECUTOR_GROUP, "effectledger-executor"))
            .withConcurrency(cfg.getInt(AppConfig.EXECUTOR_CONCURRENCY, 32))
            .withInstanceId(cfg.get(AppConfig.EXECUTOR_INSTANCE_ID));
    int commitMs =
        cfg.getInt(
            AppConfig.EXECUTOR_COMMIT_INTERVAL, (int) executorConfig.commitInterval().toMillis());
    if (commitMs <= 0) {
      throw new IllegalArgumentException(
          "Config "
              + AppConfig.EXECUTOR_COMMIT_INTERVAL
              + "="
              + commitMs
              + " must be a positive number of milliseconds");
    }
    executorConfig = executorConfig.withCommitInterval(Duration.ofMillis(commitMs));
    int minCommitMs =
        cfg.getInt(
            AppConfig.EXECUTOR_MIN_COMMIT_INTERVAL,
            (int) executorConfig.minCommitInterval().toMillis());
    if (minCommitMs < 0) {
      throw new IllegalArgumentException(
          "Config "
              + AppConfig.EXECUTOR_MIN_COMMIT_INTERVAL
              + "="
              + minCommitMs
              + " must be 0 or more milliseconds (set it to "
              + AppConfig.EXECUTOR_COMMIT_INTERVAL
              + " to commit only on that interval)");
    }
    return executorConfig.withMinCommitInterval(Duration.ofMillis(minCommitMs));
  }
}
