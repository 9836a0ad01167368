package dev.effectledger.app;

import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.BrowserSignIn;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.topology.LedgerConfig;
import java.io.IOException;
import java.io.Reader;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A processor's or executor's settings: a properties file, then environment overrides. An
 * environment variable {@code EFFECTLEDGER_A_B} sets {@code a.b}; {@code KAFKA_BOOTSTRAP_SERVERS}
 * sets {@code bootstrap.servers}. Keys this class names are Effect Ledger's own; every other key
 * (security.protocol, sasl.*, ssl.*, any Kafka or Streams setting) passes to the Kafka clients as
 * it is. See docs/configuration.md.
 */
public final class AppConfig {

  private static final Logger log = LoggerFactory.getLogger(AppConfig.class);

  public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";
  public static final String TOOLS_FILE = "tools.file";
  public static final String HTTP_HOST = "http.host";
  public static final String HTTP_PORT = "http.port";
  public static final String HTTP_ADVERTISED_HOST = "http.advertised.host";
  public static final String TOPICS_CREATE = "topics.create";
  public static final String TOPICS_PARTITIONS = "topics.partitions";
  public static final String TOPICS_REPLICATION = "topics.replication";
  public static final String TOPICS_MIN_ISR = "topics.min.insync.replicas";
  public static final String EXECUTOR_CONCURRENCY = "executor.concurrency";
  public static final String EXECUTOR_GROUP = "executor.group";
  public static final String EXECUTOR_INSTANCE_ID = "executor.instance.id";

  /**
   * Where an executor without {@code executor.instance.id} keeps the identity it takes back after a
   * restart (default {@code <java.io.tmpdir>/effectledger-executor}).
   */
  public static final String EXECUTOR_STATE_DIR = "executor.state.dir";

  /** How long a processor or executor waits at its start for Kafka to answer (default 5m). */
  public static final String STARTUP_KAFKA_WAIT = "startup.kafka.wait";

  public static final String EXECUTOR_COMMIT_INTERVAL = "executor.commit.interval.ms";
  public static final String EXECUTOR_MIN_COMMIT_INTERVAL = "executor.commit.min.interval.ms";
  public static final String EXECUTOR_HTTP_HOST = "executor.http.host";
  public static final String EXECUTOR_HTTP_PORT = "executor.http.port";
  public static final String MAX_ARGUMENTS_BYTES = "max.arguments.bytes";
  public static final String PUNCTUATION_INTERVAL = "ledger.punctuation.interval";
  public static final String PURGE_INTERVAL = "ledger.purge.interval";
  public static final String PUNCTUATION_BUDGET = "ledger.punctuation.budget";
  public static final String STORE_CACHING = "ledger.store.caching";

  /**
   * Whether the processor reads tool-policy and applies each applied policy live (default true);
   * false: only its tools.yaml, as before tool-policy existed.
   */
  public static final String POLICY_LIVE = "policy.live";

  /** Settings under this prefix are the gateway's ({@code effectledger gateway}), not Kafka's. */
  public static final String GATEWAY_PREFIX = "gateway.";

  /** {@code http.auth.metrics=true}: the processor's /metrics needs a token too. */
  public static final String HTTP_AUTH_METRICS = "http.auth.metrics";

  /**
   * {@code http.tokens.issuer}, {@code .audience}, ...: the query API and the console take access
   * tokens (JWTs) from that identity provider too, the role from the token's roles claim.
   */
  public static final String HTTP_TOKENS = "http.tokens.";

  /**
   * {@code ledger.bypass.signer.<name>=<public key>}: whose bypass approvals the ledger accepts.
   */
  public static final String BYPASS_SIGNER_PREFIX = "ledger.bypass.signer.";

  /**
   * Settings under this prefix are the operator console's ({@link
   * dev.effectledger.app.console.Console}), not Kafka's.
   */
  public static final String CONSOLE_PREFIX = "console.";

  /** {@code console.enabled=false}: the processor serves no console. */
  public static final String CONSOLE_ENABLED = "console.enabled";

  /** Comma-separated base URLs of executors' health endpoints, shown in the console. */
  public static final String CONSOLE_EXECUTORS = "console.executors";

  /** The signer name the console's approvals carry (a {@code ledger.bypass.signer.<name>}). */
  public static final String CONSOLE_SIGNER = "console.approvals.signer";

  /** That signer's private key file ({@code effectledger approve keygen}). */
  public static final String CONSOLE_SIGNER_KEY = "console.approvals.key.file";

  /** How long a console sign-in lasts (default 8h). */
  public static final String CONSOLE_SESSION_TTL = "console.session.ttl";

  /**
   * {@code console.sign-in.client-id}: the console's client at the identity provider of {@code
   * http.tokens.issuer} (public, authorization code with PKCE); set, the sign-in page also signs
   * people in there.
   */
  public static final String CONSOLE_SIGN_IN_CLIENT = "console.sign-in.client-id";

  /**
   * {@code console.sign-in.redirect-uri}: where the provider sends the browser back, as registered
   * there; default {@code http://<the request's Host>/console/signin/callback}.
   */
  public static final String CONSOLE_SIGN_IN_REDIRECT = "console.sign-in.redirect-uri";

  /** {@code console.sign-in.scope}: the scopes the sign-in asks for (space-separated; none). */
  public static final String CONSOLE_SIGN_IN_SCOPE = "console.sign-in.scope";

  /** How far back a key's audit trail is read (default 7d). */
  public static final String CONSOLE_AUDIT_LOOKBACK = "console.audit.lookback";

  /** Effect Ledger's own keys, which are not passed to Kafka. */
  static final List<String> OWN_KEYS =
      List.of(
          SCHEMA_REGISTRY_URL,
          TOOLS_FILE,
          HTTP_HOST,
          HTTP_PORT,
          HTTP_ADVERTISED_HOST,
          TOPICS_CREATE,
          POLICY_LIVE,
          TOPICS_PARTITIONS,
          TOPICS_REPLICATION,
          TOPICS_MIN_ISR,
          EXECUTOR_CONCURRENCY,
          EXECUTOR_GROUP,
          EXECUTOR_INSTANCE_ID,
          EXECUTOR_STATE_DIR,
          STARTUP_KAFKA_WAIT,
          EXECUTOR_COMMIT_INTERVAL,
          EXECUTOR_MIN_COMMIT_INTERVAL,
          EXECUTOR_HTTP_HOST,
          EXECUTOR_HTTP_PORT,
          MAX_ARGUMENTS_BYTES,
          PUNCTUATION_INTERVAL,
          PURGE_INTERVAL,
          PUNCTUATION_BUDGET,
          STORE_CACHING);

  private final Properties all;

  private AppConfig(Properties all) {
    this.all = all;
  }

  /**
   * @throws IllegalArgumentException naming the file and what is wrong with it
   */
  public static AppConfig load(Path file, Map<String, String> environment) {
    Properties props = new Properties();
    try (Reader in = Files.newBufferedReader(file)) {
      props.load(in);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "Cannot read config file "
              + file
              + ": "
              + e.getMessage()
              + ". Pass --config with a properties file (see config/processor.properties).");
    }
    environment.forEach(
        (name, value) -> {
          if (name.equals("KAFKA_BOOTSTRAP_SERVERS")) {
            props.setProperty("bootstrap.servers", value);
          } else if (name.startsWith("EFFECTLEDGER_") && name.length() > "EFFECTLEDGER_".length()) {
            props.setProperty(
                name.substring("EFFECTLEDGER_".length()).toLowerCase(Locale.ROOT).replace('_', '.'),
                value);
          }
        });
    AppConfig config = new AppConfig(props);
    config.require(
        "bootstrap.servers",
        "the Kafka cluster, e.g. bootstrap.servers=127.0.0.1:9092 or KAFKA_BOOTSTRAP_SERVERS");
    config.require(
        SCHEMA_REGISTRY_URL,
        "http(s)://host:port of the Schema Registry, or mock://<scope> in one JVM");
    return config;
  }

  private void require(String key, String what) {
    if (get(key) == null || get(key).isBlank()) {
      throw new IllegalArgumentException("Config is missing " + key + ": " + what);
    }
  }

  public String get(String key) {
    return all.getProperty(key);
  }

  /** Every setting whose key starts with {@code prefix}, keys as they are. */
  public Properties withPrefix(String prefix) {
    Properties out = new Properties();
    all.forEach(
        (k, v) -> {
          if (((String) k).startsWith(prefix)) {
            out.put(k, v);
          }
        });
    return out;
  }

  public String get(String key, String fallback) {
    return all.getProperty(key, fallback);
  }

  public int getInt(String key, int fallback) {
    String value = get(key);
    if (value == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "Config " + key + "='" + value + "' is not a whole number");
    }
  }

  public boolean getBoolean(String key, boolean fallback) {
    String value = get(key);
    if (value == null) {
      return fallback;
    }
    if (!value.trim().equals("true") && !value.trim().equals("false")) {
      throw new IllegalArgumentException(
          "Config " + key + "='" + value + "' must be true or false");
    }
    return Boolean.parseBoolean(value.trim());
  }

  /** How long a process waits at its start for Kafka to answer ({@link #STARTUP_KAFKA_WAIT}). */
  Duration startupWait() {
    return getDuration(STARTUP_KAFKA_WAIT, KafkaReachable.DEFAULT_LIMIT);
  }

  public Duration getDuration(String key, Duration fallback) {
    String value = get(key);
    if (value == null) {
      return fallback;
    }
    return Durations.parse(value)
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    "Config "
                        + key
                        + "='"
                        + value
                        + "' is not a duration; write it like 500ms, 1s, 5m or PT1S"));
  }

  /**
   * The {@code host:port} other processor instances reach this one's HTTP endpoint at (Kafka
   * Streams' {@code application.server}, used to forward key lookups to the key's owner): {@code
   * http.advertised.host}, else {@code http.host}.
   *
   * @throws IllegalArgumentException when that host is a wildcard address (0.0.0.0, ::): every
   *     instance would advertise it and lookups forwarded to it would reach the asking instance
   */
  static String advertisedServer(String bindHost, String advertisedHost, int port) {
    String host =
        advertisedHost != null && !advertisedHost.isBlank() ? advertisedHost.trim() : bindHost;
    String bare =
        host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    boolean wildcard;
    try {
      wildcard = bare.matches("[0-9.:]+") && InetAddress.getByName(bare).isAnyLocalAddress();
    } catch (UnknownHostException e) {
      wildcard = false;
    }
    if (wildcard) {
      throw new IllegalArgumentException(
          "Config "
              + HTTP_HOST
              + "="
              + bindHost
              + " listens on every address, and other processor"
              + " instances forward key lookups to the address this one advertises: set "
              + HTTP_ADVERTISED_HOST
              + " to an address"
              + " they can reach (this instance's IP or DNS name, e.g. a pod's)"
              + (advertisedHost == null ? "" : ", not " + host));
    }
    return (bare.contains(":") ? "[" + bare + "]" : host) + ":" + port;
  }

  /** The ledger's own settings from this config, on top of the topology's defaults. */
  public LedgerConfig ledgerConfig(ToolPolicies policies) {
    LedgerConfig defaults = LedgerConfig.of(policies, get(SCHEMA_REGISTRY_URL));
    Duration interval = getDuration(PUNCTUATION_INTERVAL, defaults.pendingCheckInterval());
    Duration budget = getDuration(PUNCTUATION_BUDGET, defaults.punctuationBudget());
    if (budget.compareTo(interval) >= 0) {
      throw new IllegalArgumentException(
          "Config "
              + PUNCTUATION_BUDGET
              + "="
              + budget
              + " must be shorter than "
              + PUNCTUATION_INTERVAL
              + "="
              + interval
              + ", or punctuations would leave a task no time to process records");
    }
    try {
      return defaults
          .withMaxArgumentsBytes(getInt(MAX_ARGUMENTS_BYTES, defaults.maxArgumentsBytes()))
          .withPunctuations(interval, getDuration(PURGE_INTERVAL, defaults.purgeInterval()), budget)
          .withStoreCaching(getBoolean(STORE_CACHING, defaults.storeCaching()))
          .withBypassApprovals(bypassApprovals())
          .withLivePolicy(getBoolean(POLICY_LIVE, true));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Config: "
              + e.getMessage()
              + " ("
              + MAX_ARGUMENTS_BYTES
              + ", "
              + PUNCTUATION_INTERVAL
              + ", "
              + PURGE_INTERVAL
              + ", "
              + PUNCTUATION_BUDGET
              + ")",
          e);
    }
  }

  /** Who may use the processor's query API ({@link HttpAuth}); open when none is configured. */
  HttpAuth httpAuth() {
    Properties auth = new Properties();
    all.forEach(
        (k, v) -> {
          if (((String) k).startsWith(HttpAuth.PREFIX) && !k.equals(HTTP_AUTH_METRICS)) {
            auth.put(k, v);
          }
        });
    HttpAuth tokens = HttpAuth.fromProperties(auth);
    AuthSettings jwt = AuthSettings.read(name -> get(HTTP_TOKENS + name), HTTP_TOKENS);
    return jwt == null ? tokens : tokens.withTokens(AccessTokens.of(jwt));
  }

  /**
   * The console's sign-in through the identity provider ({@code console.sign-in.*}); null when
   * {@code console.sign-in.client-id} is not set.
   *
   * @throws IllegalArgumentException when it is set without {@code http.tokens.issuer}, or a URI is
   *     malformed
   */
  BrowserSignIn consoleSignIn() {
    String client = get(CONSOLE_SIGN_IN_CLIENT);
    if (client == null || client.isBlank()) {
      return null;
    }
    AuthSettings tokens = AuthSettings.read(name -> get(HTTP_TOKENS + name), HTTP_TOKENS);
    if (tokens == null) {
      throw new IllegalArgumentException(
          CONSOLE_SIGN_IN_CLIENT
              + " needs "
              + HTTP_TOKENS
              + "issuer and "
              + HTTP_TOKENS
              + "audience: the console signs in through that identity provider, for tokens with"
              + " that audience");
    }
    URI resource = null;
    try {
      URI audience = new URI(tokens.audience());
      resource = audience.isAbsolute() ? audience : null; // RFC 8707: an absolute URI
    } catch (java.net.URISyntaxException notAUri) {
      // an audience that is not a URI is not sent as a resource; the provider chooses the audience
    }
    return new BrowserSignIn(
        tokens.issuer(), client, resource, get(CONSOLE_SIGN_IN_SCOPE), java.time.Clock.systemUTC());
  }

  /**
   * {@code console.sign-in.redirect-uri}, or null to derive it from each request, which only a
   * console on a loopback address may.
   *
   * @throws IllegalArgumentException when it is malformed, or missing for a console on another
   *     address
   */
  URI consoleSignInRedirect() {
    String uri = get(CONSOLE_SIGN_IN_REDIRECT);
    if (uri == null || uri.isBlank()) {
      String host = get(HTTP_HOST, "127.0.0.1");
      boolean loopback;
      try {
        loopback = InetAddress.getByName(host).isLoopbackAddress();
      } catch (UnknownHostException e) {
        loopback = false;
      }
      if (get(CONSOLE_SIGN_IN_CLIENT) != null && !loopback) {
        throw new IllegalArgumentException(
            CONSOLE_SIGN_IN_REDIRECT
                + " is required with "
                + CONSOLE_SIGN_IN_CLIENT
                + " on "
                + HTTP_HOST
                + "="
                + host
                + ": give the URL the identity provider sends browsers back to (registered there),"
                + " e.g. https://ops.example.com/console/signin/callback");
      }
      return null;
    }
    URI parsed = URI.create(uri.trim());
    if (!parsed.isAbsolute() || !parsed.getRawPath().endsWith("/console/signin/callback")) {
      throw new IllegalArgumentException(
          CONSOLE_SIGN_IN_REDIRECT
              + " "
              + uri
              + ": give the absolute URL the browser reaches the console's"
              + " /console/signin/callback at");
    }
    return parsed;
  }

  /**
   * The signers {@code ledger.bypass.signer.<name>} names; none: approvals are taken as given (and
   * the processor says so at start).
   */
  BypassApprovals bypassApprovals() {
    Map<String, String> signers = new java.util.TreeMap<>();
    all.forEach(
        (k, v) -> {
          if (((String) k).startsWith(BYPASS_SIGNER_PREFIX)) {
            signers.put(((String) k).substring(BYPASS_SIGNER_PREFIX.length()), (String) v);
          }
        });
    if (signers.isEmpty()) {
      return BypassApprovals.UNVERIFIED;
    }
    return BypassApprovals.verifiedBy(signers);
  }

  /**
   * The tool policy: {@code override} when given, else {@code tools.file}, else config/tools.yaml.
   */
  public ToolPolicies policies(Path override) {
    ToolPolicies policies =
        new ToolPolicyLoader()
            .load(override != null ? override : Path.of(get(TOOLS_FILE, "config/tools.yaml")));
    policies.warnings().forEach(w -> log.warn("{}", w));
    return policies;
  }

  /** The text of the tool policy file {@link #policies} reads. */
  public String policySource(Path override) {
    Path file = override != null ? override : Path.of(get(TOOLS_FILE, "config/tools.yaml"));
    try {
      return java.nio.file.Files.readString(file);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("Cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  /** Every setting that is not Effect Ledger's own: what the Kafka clients and Streams get. */
  public Properties kafka() {
    Properties kafka = new Properties();
    all.forEach(
        (k, v) -> {
          if (!OWN_KEYS.contains((String) k)
              && !((String) k).startsWith(GATEWAY_PREFIX)
              && !((String) k).startsWith(CONSOLE_PREFIX)
              && !((String) k).startsWith(BYPASS_SIGNER_PREFIX)
              && !((String) k).startsWith(HttpAuth.PREFIX)
              && !((String) k).startsWith(HTTP_TOKENS)) {
            kafka.put(k, v);
          }
        });
    return kafka;
  }
}
