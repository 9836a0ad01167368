package dev.effectledger.app;

import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.FairShare;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger gateway}: the HTTP front door. */
@Command(
    name = "gateway",
    mixinStandardHelpOptions = true,
    description =
        "Serve tool calls over HTTP (POST /v1/tools/{tool}/calls, GET /v1/calls/{key}) in front of the ledger.")
final class GatewayCommand implements Callable<Integer> {

  static final String INSTANCE = "gateway.instance";
  static final String HOST = "gateway.host";
  static final String LIMITS = "gateway.limits.";
  static final String PORT = "gateway.port";
  static final String LEDGER_URL = "gateway.ledger.url";
  static final String LEDGER_TOKEN = "gateway.ledger.token";
  static final String WAIT_DEFAULT = "gateway.wait.default";
  static final String WAIT_MAX = "gateway.wait.max";
  static final String BODY_MAX = "gateway.body.max.bytes";
  static final String REPLY_PARTITIONS = "gateway.reply.partitions";
  static final String REPLY_REPLICATION = "gateway.reply.replication";
  static final String REPLY_THREADS = "gateway.reply.threads";
  static final String TLS_KEYSTORE = "gateway.tls.keystore.path";
  static final String TLS_PASSWORD = "gateway.tls.keystore.password";
  static final String TLS_TYPE = "gateway.tls.keystore.type";

  @Option(
      names = "--config",
      required = true,
      description =
          "properties file (see config/gateway.properties); EFFECTLEDGER_* and KAFKA_BOOTSTRAP_SERVERS override it")
  Path config;

  @Option(names = "--tools", description = "tools.yaml; overrides tools.file")
  Path tools;

  @Override
  public Integer call() throws Exception {
    AppConfig cfg = AppConfig.load(config, System.getenv());
    GatewayConfig gatewayConfig = gatewayConfig(cfg, cfg.policies(tools));
    Gateway gateway = Gateway.start(gatewayConfig);
    Lifecycle lifecycle = new Lifecycle("gateway", gateway);
    System.out.println(
        "effectledger gateway "
            + gatewayConfig.instance()
            + ": "
            + gateway.uri()
            + " (replies on "
            + gatewayConfig.replyTopic()
            + "; /readyz answers 200 once Kafka and the ledger at "
            + gatewayConfig.ledgerUrl()
            + " are reachable)");
    lifecycle.awaitStop();
    return 0;
  }

  static GatewayConfig gatewayConfig(AppConfig cfg, ToolPolicies policies) {
    Credentials credentials = Credentials.fromProperties(cfg.withPrefix("gateway.credentials."));
    AuthSettings auth = AuthSettings.read(name -> cfg.get("gateway.auth." + name), "gateway.auth.");
    if (auth != null) {
      credentials = credentials.withTokens(AccessTokens.of(auth));
    }
    if (credentials.isEmpty()) {
      throw new IllegalArgumentException(
          "No credentials: add gateway.credentials.<name>.sha256 and .tenant, or gateway.auth.issuer"
              + " and .audience for access tokens (see config/gateway.properties)");
    }
    String instance = cfg.get(INSTANCE);
    if (instance == null || instance.isBlank()) {
      throw new IllegalArgumentException(
          "Config is missing "
              + INSTANCE
              + ": this instance's name, unique per instance (its replies come on tool-results.<name>)");
    }
    GatewayConfig.Tls tls = null;
    if (cfg.get(TLS_KEYSTORE) != null) {
      String password = cfg.get(TLS_PASSWORD);
      if (password == null) {
        throw new IllegalArgumentException(
            "Config is missing " + TLS_PASSWORD + ": the password of " + TLS_KEYSTORE);
      }
      tls = new GatewayConfig.Tls(Path.of(cfg.get(TLS_KEYSTORE)), password, cfg.get(TLS_TYPE));
    }
    return GatewayConfig.of(
            instance,
            cfg.kafka(),
            cfg.get(AppConfig.SCHEMA_REGISTRY_URL),
            URI.create(cfg.get(LEDGER_URL, "http://127.0.0.1:8080")),
            policies,
            credentials)
        .withListen(cfg.get(HOST, "127.0.0.1"), cfg.getInt(PORT, 8088))
        .withWaits(
            cfg.getDuration(WAIT_DEFAULT, Duration.ofSeconds(10)),
            cfg.getDuration(WAIT_MAX, Duration.ofSeconds(60)))
        .withMaxBodyBytes(cfg.getInt(BODY_MAX, 1024 * 1024))
        .withReplyTopic(cfg.getInt(REPLY_PARTITIONS, 8), (short) cfg.getInt(REPLY_REPLICATION, 3))
        .withReplyThreads(cfg.getInt(REPLY_THREADS, GatewayConfig.REPLY_THREADS))
        .withLedgerToken(cfg.get(LEDGER_TOKEN))
        .withTls(tls)
        .withFairShare(FairShare.read(cfg.withPrefix(LIMITS), LIMITS));
  }
}
