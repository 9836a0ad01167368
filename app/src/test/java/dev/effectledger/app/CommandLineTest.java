package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.gateway.Credentials;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.topology.LedgerConfig;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CommandLineTest {

  @TempDir Path dir;

  private static CommandRun run(String... args) {
    return CommandRun.of(args);
  }

  @ParameterizedTest(name = "effectledger {0} --help")
  @ValueSource(
      strings = {
        "",
        "demo",
        "processor",
        "executor",
        "gateway",
        "broker",
        "downstream",
        "tools",
        "tools validate",
        "tools diff",
        "reconcile",
        "approve",
        "approve keygen",
        "status"
      })
  void shouldPrintHelpForEveryCommand(String command) {
    String[] args = (command.isEmpty() ? "--help" : command + " --help").split(" ");

    CommandRun help = run(args);

    assertThat(help.status()).isZero();
    assertThat(help.out())
        .startsWith("Usage: effectledger" + (command.isEmpty() ? "" : " " + command));
  }

  @Test
  void shouldListTheCommandsInTopLevelHelp() {
    assertThat(run("--help").out())
        .contains(
            "demo", "processor", "executor", "gateway", "broker", "tools", "reconcile", "status");
  }

  @Test
  void shouldNameTheConsoleInTheProcessorsHelp() {
    assertThat(run("processor", "--help").out())
        .contains("/console")
        .contains("console.enabled=false");
  }

  @Test
  void shouldValidateTheExamplePolicyFile() {
    CommandRun valid = run("tools", "validate", "../config/tools.yaml");

    assertThat(valid.status()).isZero();
    assertThat(valid.out()).contains("7 tools, valid");
  }

  @Test
  void shouldListEveryProblemOfAPolicyFileAtOnceConnectorSettingsIncluded() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("tools.yaml"),
            """
        tools:
          charge:
            class: write-idempotent
            window: 3 days
            connector: http
            settings: {url: "http://127.0.0.1:9/charges"}
          refund:
            class: write-idempotent
            connector: http
            settings: {}
        """);

    CommandRun validate = run("tools", "validate", file.toString());

    assertThat(validate.status()).isEqualTo(1);
    assertThat(validate.out())
        .contains("2 problem(s)")
        .contains("tools.charge.window: '3 days' is not a positive duration")
        .contains("tools.refund.settings.url: missing");
  }

  @Test
  void shouldWarnOfARetryHorizonBeyondTheDownstreamsKeyWindow() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("tools.yaml"),
            """
        tools:
          charge: {class: write-idempotent, connector: log, settings: {file: effects.log}, pendingTimeout: 10h, downstreamKeyWindow: 24h}
        """);

    CommandRun validated = run("tools", "validate", file.toString());

    assertThat(validated.status()).isZero(); // valid: a warning does not refuse the file
    assertThat(validated.out())
        .contains("1 tools, valid, 1 warning(s)")
        .contains(
            "warning: tools.charge: the downstream keeps keys for 1d, but the ledger may send");
  }

  @Test
  void shouldRefuseADiffThatWeakensThePromiseUnlessAllowed() throws Exception {
    Path old =
        Files.writeString(
            dir.resolve("old.yaml"),
            """
        tools:
          pay: {class: irreversible, connector: log, settings: {file: e.log}, window: 30d}
          mail: {class: write-non-idempotent, connector: log, settings: {file: e.log}}
        """);
    Path shrunk =
        Files.writeString(
            dir.resolve("new.yaml"),
            """
        tools:
          pay: {class: irreversible, connector: log, settings: {file: e.log}, window: 7d}
          mail: {class: write-non-idempotent, connector: log, settings: {file: e.log}, lane: mail}
        """);

    CommandRun refused = run("tools", "diff", old.toString(), shrunk.toString());
    CommandRun allowed = run("tools", "diff", old.toString(), shrunk.toString(), "--allow-shrink");
    CommandRun same = run("tools", "diff", old.toString(), old.toString());
    CommandRun invalid = run("tools", "diff", old.toString(), dir.resolve("none.yaml").toString());

    assertThat(refused.status()).isEqualTo(1);
    assertThat(refused.out())
        .contains(
            "pay: window 30d -> 7d: completed entries older than 7d expire at once, and a retry of"
                + " one is a new action; give --processor to count the entries that would expire"
                + " [weakens]")
        .contains("mail: lane default -> mail: dispatches already in tool-dispatch.default")
        .contains("run again with --allow-shrink");
    assertThat(allowed.status()).isZero();
    assertThat(allowed.out()).contains("[weakens]").contains("accepted (--allow-shrink)");
    assertThat(same.status()).isZero();
    assertThat(same.out()).contains("no changes");
    assertThat(invalid.status()).isEqualTo(2);
  }

  @Test
  void shouldMintApprovalsThatOnlyAProcessorTrustingTheSignerAccepts() throws Exception {
    Path keyFile = dir.resolve("ops.key");
    CommandRun keygen = run("approve", "keygen", "--signer", "ops", "--out", keyFile.toString());
    assertThat(keygen.status()).isZero();
    String line =
        keygen
            .out()
            .lines()
            .filter(l -> l.startsWith("ledger.bypass.signer.ops="))
            .findFirst()
            .orElseThrow();
    Properties processor = new Properties();
    processor.load(new java.io.StringReader(line));
    processor.setProperty("bootstrap.servers", "127.0.0.1:9092");
    processor.setProperty("schema.registry.url", "mock://approve");
    Path props = Files.writeString(dir.resolve("processor.properties"), "");
    try (var w = Files.newBufferedWriter(props)) {
      processor.store(w, null);
    }
    AppConfig config = AppConfig.load(props, Map.of());
    assertThat(config.kafka()).doesNotContainKey("ledger.bypass.signer.ops"); // not a Kafka setting

    CommandRun approve =
        run(
            "approve",
            "--signer",
            "ops",
            "--key-file",
            keyFile.toString(),
            "--tenant",
            "acme",
            "--key",
            "k-123",
            "--operator",
            "alice",
            "--reason",
            "INC-42",
            "--expires",
            "15m");

    assertThat(approve.status()).isZero();
    String token = approve.out().trim();
    var trusted = config.bypassApprovals();
    assertThat(trusted.verifying()).isTrue();
    assertThat(trusted.verify(token, "acme", "k-123", java.time.Instant.now()))
        .isInstanceOfSatisfying(
            dev.effectledger.schema.BypassApprovals.Verdict.Valid.class,
            v -> assertThat(v.approval().operator()).isEqualTo("alice"));
    assertThat(trusted.verify(token, "acme", "k-123", java.time.Instant.now().plusSeconds(16 * 60)))
        .isInstanceOf(dev.effectledger.schema.BypassApprovals.Verdict.Invalid.class);
    // a second keygen does not overwrite a signer's key
    assertThat(run("approve", "keygen", "--signer", "ops", "--out", keyFile.toString()).status())
        .isEqualTo(2);
  }

  @Test
  void shouldPrintEachProblemOfABadPolicyFile() throws Exception {
    Path bad =
        Files.writeString(
            dir.resolve("tools.yaml"),
            """
        tools:
          pay: {class: irreversible, connector: http, onAmbiguous: redispatch, settings: {url: "ftp://x"}}
          mail: {class: maybe, connector: log}
        """);

    CommandRun invalid = run("tools", "validate", bad.toString());

    assertThat(invalid.status()).isEqualTo(1);
    assertThat(invalid.out())
        .contains("2 problem(s)")
        .contains("tools.pay.onAmbiguous: 'redispatch' conflicts with class 'irreversible'")
        .contains("tools.mail.class: 'maybe' is not a tool class");
  }

  @Test
  void shouldRejectUnknownCommandWithUsage() {
    CommandRun unknown = run("fly");

    assertThat(unknown.status()).isEqualTo(2);
    assertThat(unknown.err()).contains("Unmatched argument").contains("Usage: effectledger");
  }

  @Test
  void shouldSayWhereTheProcessorConfigIsMissing() {
    CommandRun missing = run("processor", "--config", dir.resolve("nope.properties").toString());

    assertThat(missing.status()).isEqualTo(2);
    assertThat(missing.err()).contains("Cannot read config file").contains("nope.properties");
  }

  @Test
  void shouldReportStatusCommandUnreachableEndpoint() {
    CommandRun status = run("status", "v1:abc", "--url", "http://127.0.0.1:1");

    assertThat(status.status()).isEqualTo(2);
    assertThat(status.err()).contains("cannot reach http://127.0.0.1:1");
  }

  @Test
  void shouldOverrideFileSettingsFromEnvironmentAndKeepOwnKeysFromKafka() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("p.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\nhttp.port=8080\nsecurity.protocol=SASL_SSL\n");

    AppConfig config =
        AppConfig.load(
            file,
            Map.of(
                "EFFECTLEDGER_HTTP_PORT",
                "9000",
                "KAFKA_BOOTSTRAP_SERVERS",
                "b:9093",
                "EFFECTLEDGER_SASL_MECHANISM",
                "PLAIN",
                "PATH",
                "/usr/bin"));

    assertThat(config.getInt(AppConfig.HTTP_PORT, 0)).isEqualTo(9000);
    Properties kafka = config.kafka();
    assertThat(kafka)
        .containsEntry("bootstrap.servers", "b:9093")
        .containsEntry("security.protocol", "SASL_SSL")
        .containsEntry("sasl.mechanism", "PLAIN")
        .doesNotContainKey("http.port")
        .doesNotContainKey("schema.registry.url");
  }

  @Test
  void shouldRefuseConfigWithoutBootstrapServers() throws Exception {
    Path file = Files.writeString(dir.resolve("p.properties"), "schema.registry.url=mock://x\n");

    Assertions.assertThatThrownBy(() -> AppConfig.load(file, Map.of()))
        .hasMessageContaining("bootstrap.servers")
        .hasMessageContaining("KAFKA_BOOTSTRAP_SERVERS");
  }

  @Test
  void shouldReadTheLedgerSettingsAndKeepThemFromKafka() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("p.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "max.arguments.bytes=262144\nledger.punctuation.interval=2s\nledger.purge.interval=5m\nledger.punctuation.budget=300ms\n"
                + "ledger.store.caching=true\n");

    AppConfig config = AppConfig.load(file, Map.of());
    LedgerConfig ledger = config.ledgerConfig(ToolPolicies.of());
    assertThat(LedgerConfig.of(ToolPolicies.of(), "mock://x").storeCaching())
        .as("no record cache unless told otherwise")
        .isFalse();
    assertThat(ledger.storeCaching()).isTrue();

    assertThat(ledger.maxArgumentsBytes()).isEqualTo(262_144);
    assertThat(ledger.pendingCheckInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(ledger.purgeInterval()).isEqualTo(Duration.ofMinutes(5));
    assertThat(ledger.punctuationBudget()).isEqualTo(Duration.ofMillis(300));
    assertThat(config.kafka())
        .doesNotContainKeys(
            "max.arguments.bytes",
            "ledger.punctuation.interval",
            "ledger.purge.interval",
            "ledger.punctuation.budget",
            "ledger.store.caching");
  }

  @Test
  void shouldReadTheExecutorCommitIntervalAndRefuseOneThatIsNotPositive() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("e.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\nexecutor.commit.interval.ms=10\n");
    AppConfig config = AppConfig.load(file, Map.of());

    assertThat(ExecutorCommand.executorConfig(config, List.of("payments")).commitInterval())
        .isEqualTo(Duration.ofMillis(10));
    assertThat(config.kafka()).doesNotContainKey("executor.commit.interval.ms");
    Path unset =
        Files.writeString(
            dir.resolve("e2.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n");
    assertThat(
            ExecutorCommand.executorConfig(AppConfig.load(unset, Map.of()), List.of("payments"))
                .commitInterval())
        .as("the documented default")
        .isEqualTo(
            ExecutorConfig.of(new Properties(), List.of("payments"), "mock://x").commitInterval());
    Path zero =
        Files.writeString(
            dir.resolve("e3.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\nexecutor.commit.interval.ms=0\n");
    Assertions.assertThatThrownBy(
            () ->
                ExecutorCommand.executorConfig(AppConfig.load(zero, Map.of()), List.of("payments")))
        .hasMessageContaining("executor.commit.interval.ms=0")
        .hasMessageContaining("positive");
  }

  @Test
  void shouldReadTheExecutorMinimumCommitIntervalAndRefuseANegativeOne() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("m.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "executor.commit.interval.ms=50\nexecutor.commit.min.interval.ms=50\n");
    ExecutorConfig read =
        ExecutorCommand.executorConfig(AppConfig.load(file, Map.of()), List.of("payments"));

    assertThat(read.minCommitInterval()).isEqualTo(Duration.ofMillis(50));
    assertThat(read.commitsEarly()).as("at the commit interval: commits only on it").isFalse();
    Path unset =
        Files.writeString(
            dir.resolve("m2.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n");
    ExecutorConfig defaults =
        ExecutorCommand.executorConfig(AppConfig.load(unset, Map.of()), List.of("payments"));
    assertThat(defaults.minCommitInterval())
        .as("the documented default")
        .isEqualTo(Duration.ofMillis(10));
    assertThat(defaults.commitsEarly()).isTrue();
    Path negative =
        Files.writeString(
            dir.resolve("m3.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\nexecutor.commit.min.interval.ms=-1\n");
    Assertions.assertThatThrownBy(
            () ->
                ExecutorCommand.executorConfig(
                    AppConfig.load(negative, Map.of()), List.of("payments")))
        .hasMessageContaining("executor.commit.min.interval.ms=-1");
  }

  @Test
  void shouldReadTheExampleGatewayConfigAndKeepGatewaySettingsFromKafka() throws Exception {
    AppConfig config = AppConfig.load(Path.of("../config/gateway.properties"), Map.of());
    GatewayConfig gateway =
        GatewayCommand.gatewayConfig(config, config.policies(Path.of("../config/tools.yaml")));

    assertThat(gateway.instance()).isEqualTo("gw-1");
    assertThat(gateway.replyTopic()).isEqualTo("tool-results.gw-1");
    assertThat(gateway.port()).isEqualTo(8088);
    assertThat(gateway.maxWait()).isEqualTo(Duration.ofSeconds(60));
    assertThat(gateway.replyThreads()).isEqualTo(GatewayConfig.REPLY_THREADS);
    assertThatThrownBy(() -> gateway.withReplyThreads(0))
        .hasMessageContaining("gateway.reply.threads must be 1 to 64");
    assertThat(gateway.credentials().authenticate("Bearer dev-token"))
        .as("the documented local token")
        .hasValueSatisfying(caller -> assertThat(caller.tenant()).isEqualTo("acme"));
    assertThat(gateway.kafka().stringPropertyNames())
        .contains("bootstrap.servers")
        .noneMatch(key -> key.startsWith("gateway."));
  }

  @Test
  void shouldServeTlsAndSendTheLedgerTokenWhereTheGatewaysFileSaysSo() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("tls.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\ngateway.instance=gw-1\n"
                + "gateway.credentials.a.sha256="
                + Credentials.sha256Hex("t")
                + "\ngateway.credentials.a.tenant=acme\n"
                + "gateway.tls.keystore.path=/etc/el/gateway.p12\n"
                + "gateway.tls.keystore.password=secret\n"
                + "gateway.ledger.token=ledger-token\n"
                + "gateway.reply.threads=3\n");

    GatewayConfig gateway =
        GatewayCommand.gatewayConfig(AppConfig.load(file, Map.of()), ToolPolicies.of());

    // the command read the key store and never applied it: the gateway served plain HTTP
    assertThat(gateway.tls()).isNotNull();
    assertThat(gateway.tls().keyStore()).isEqualTo(Path.of("/etc/el/gateway.p12"));
    assertThat(gateway.ledgerToken()).isEqualTo("ledger-token");
    assertThat(gateway.replyThreads()).isEqualTo(3);
    assertThat(gateway.kafka().stringPropertyNames()).noneMatch(k -> k.startsWith("gateway."));
  }

  @Test
  void shouldReadTheQueryApisTokensAndRoles() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("auth.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "http.auth.grafana.sha256="
                + Credentials.sha256Hex("view-token")
                + "\nhttp.auth.oncall.sha256="
                + Credentials.sha256Hex("ops-token")
                + "\nhttp.auth.oncall.role=operator\nhttp.auth.metrics=true\n");
    AppConfig config = AppConfig.load(file, Map.of());
    HttpAuth auth = config.httpAuth();

    assertThat(auth.open()).isFalse();
    assertThat(auth.roleOf("Bearer view-token")).contains(HttpAuth.Role.VIEWER);
    assertThat(auth.allows("Bearer ops-token", HttpAuth.Role.OPERATOR)).isTrue();
    assertThat(auth.allows("Bearer view-token", HttpAuth.Role.OPERATOR)).isFalse();
    assertThat(auth.allows("Bearer nope", HttpAuth.Role.VIEWER)).isFalse();
    assertThat(auth.allows(null, HttpAuth.Role.VIEWER)).isFalse();
    assertThat(config.kafka().stringPropertyNames()).noneMatch(k -> k.startsWith("http.auth."));
    Path bad =
        Files.writeString(
            dir.resolve("bad.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\nhttp.auth.x.sha256=abc\n");
    Assertions.assertThatThrownBy(() -> AppConfig.load(bad, Map.of()).httpAuth())
        .hasMessageContaining("http.auth.x.sha256 must be 64 hex digits");
  }

  @Test
  void shouldReadTheConsolesSignInThroughTheIdentityProviderNamingWhatIsMissing() throws Exception {
    String base = "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n";
    assertThat(
            AppConfig.load(Files.writeString(dir.resolve("none.properties"), base), Map.of())
                .consoleSignIn())
        .as("not asked for: tokens only")
        .isNull();
    Path noIssuer =
        Files.writeString(
            dir.resolve("no-issuer.properties"), base + "console.sign-in.client-id=console\n");
    Assertions.assertThatThrownBy(() -> AppConfig.load(noIssuer, Map.of()).consoleSignIn())
        .hasMessageContaining("console.sign-in.client-id needs http.tokens.issuer");
    Path full =
        Files.writeString(
            dir.resolve("sign-in.properties"),
            base
                + "http.tokens.issuer=https://idp.example.com\n"
                + "http.tokens.audience=https://ledger.example.com\n"
                + "console.sign-in.client-id=console\n"
                + "console.sign-in.redirect-uri=https://ops.example.com/console/signin/callback\n");
    AppConfig config = AppConfig.load(full, Map.of());
    assertThat(config.consoleSignIn().issuer()).isEqualTo(URI.create("https://idp.example.com"));
    assertThat(config.consoleSignInRedirect())
        .isEqualTo(URI.create("https://ops.example.com/console/signin/callback"));
    assertThat(config.kafka().stringPropertyNames()).noneMatch(k -> k.startsWith("console."));
    Path wrongRedirect =
        Files.writeString(
            dir.resolve("wrong-redirect.properties"),
            base + "console.sign-in.redirect-uri=/callback\n");
    Assertions.assertThatThrownBy(
            () -> AppConfig.load(wrongRedirect, Map.of()).consoleSignInRedirect())
        .hasMessageContaining("console.sign-in.redirect-uri /callback: give the absolute URL");
    Path exposed =
        Files.writeString(
            dir.resolve("exposed.properties"),
            base
                + "http.host=0.0.0.0\nhttp.advertised.host=10.0.0.5\n"
                + "http.tokens.issuer=https://idp.example.com\n"
                + "http.tokens.audience=https://ledger.example.com\n"
                + "console.sign-in.client-id=console\n");
    Assertions.assertThatThrownBy(() -> AppConfig.load(exposed, Map.of()).consoleSignInRedirect())
        .as("off a loopback address, the redirect must be configured: a Host is the caller's")
        .hasMessageContaining("console.sign-in.redirect-uri is required");
  }

  @Test
  void shouldRefuseAGatewayWithoutCredentialsOrInstanceNamingTheSetting() throws Exception {
    Path noCredentials =
        Files.writeString(
            dir.resolve("g.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\ngateway.instance=gw-1\n");
    Assertions.assertThatThrownBy(
            () ->
                GatewayCommand.gatewayConfig(
                    AppConfig.load(noCredentials, Map.of()), ToolPolicies.of()))
        .hasMessageContaining("gateway.credentials.<name>.sha256");
    Path noInstance =
        Files.writeString(
            dir.resolve("g2.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "gateway.credentials.a.sha256="
                + Credentials.sha256Hex("t")
                + "\ngateway.credentials.a.tenant=acme\n");
    Assertions.assertThatThrownBy(
            () ->
                GatewayCommand.gatewayConfig(
                    AppConfig.load(noInstance, Map.of()), ToolPolicies.of()))
        .hasMessageContaining("gateway.instance");
  }

  @Test
  void shouldRefuseArgumentsLargerThanADispatchCanCarryNamingTheSetting() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("p.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "max.arguments.bytes=1048576\n");

    Assertions.assertThatThrownBy(
            () -> AppConfig.load(file, Map.of()).ledgerConfig(ToolPolicies.of()))
        .hasMessageContaining("max.arguments.bytes")
        .hasMessageContaining("524288");
  }

  @Test
  void shouldRefuseABudgetThatLeavesNoTimeToProcessNamingBothSettings() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("p.properties"),
            "bootstrap.servers=a:9092\nschema.registry.url=mock://x\n"
                + "ledger.punctuation.interval=1s\nledger.punctuation.budget=1s\n");

    Assertions.assertThatThrownBy(
            () -> AppConfig.load(file, Map.of()).ledgerConfig(ToolPolicies.of()))
        .hasMessageContaining("ledger.punctuation.budget")
        .hasMessageContaining("ledger.punctuation.interval");
  }

  @Test
  void shouldRefuseToAdvertiseAWildcardAddressForKeyLookups() {
    Assertions.assertThatThrownBy(() -> AppConfig.advertisedServer("0.0.0.0", null, 8080))
        .hasMessageContaining("http.advertised.host")
        .hasMessageContaining("0.0.0.0");
    Assertions.assertThatThrownBy(() -> AppConfig.advertisedServer("::", "", 8080))
        .hasMessageContaining("http.advertised.host");
    Assertions.assertThatThrownBy(() -> AppConfig.advertisedServer("127.0.0.1", "0.0.0.0", 8080))
        .hasMessageContaining("not 0.0.0.0");

    assertThat(AppConfig.advertisedServer("0.0.0.0", "processor-1.ledger", 8080))
        .isEqualTo("processor-1.ledger:8080");
    assertThat(AppConfig.advertisedServer("127.0.0.1", null, 9000)).isEqualTo("127.0.0.1:9000");
    assertThat(AppConfig.advertisedServer("0.0.0.0", "fd00::5", 8080)).isEqualTo("[fd00::5]:8080");
  }

  @Test
  void shouldRefuseAProcessorListeningOnEveryAddressWithoutAnAdvertisedHostBeforeItStarts()
      throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("p.properties"),
            "bootstrap.servers=127.0.0.1:1\nschema.registry.url=mock://x\n"
                + "http.host=0.0.0.0\ntools.file="
                + Path.of("../config/tools.yaml").toAbsolutePath()
                + "\n");

    CommandRun run = run("processor", "--config", file.toString());

    assertThat(run.status()).isEqualTo(2);
    assertThat(run.err()).contains("http.advertised.host");
  }
}
