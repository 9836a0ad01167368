package dev.effectledger.gateway;

import dev.effectledger.auth.FairShare;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.Topics;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * A gateway instance's settings.
 *
 * @param host address to listen on
 * @param port port to listen on; 0 picks a free one
 * @param instance this instance's name: its replies come on {@code tool-results.<instance>}, so
 *     every instance needs its own
 * @param kafka settings for the Kafka clients (bootstrap.servers, SASL/SSL)
 * @param schemaRegistryUrl the registry the ledger uses
 * @param ledgerUrl a processor's HTTP endpoint (or a load balancer in front of them): readiness,
 *     and {@code GET /v1/calls/{key}} reads calls from it
 * @param policies the ledger's tools.yaml: which tools exist and their key rules
 * @param credentials who may call, as which tenant
 * @param defaultWait how long a call waits for its result when the request has no {@code Prefer:
 *     wait}
 * @param maxWait the longest wait a request may ask for
 * @param maxBodyBytes the largest request body; above it the answer is 413
 * @param replyPartitions partitions of the reply topic when the gateway creates it
 * @param replyReplication replication of the reply topic when the gateway creates it
 * @param replyThreads consumers of the reply topic, each on its own thread with a share of its
 *     partitions, that answer the waiting calls
 * @param tls the key store to serve HTTPS with; null serves plain HTTP
 * @param ledgerToken the bearer token the gateway sends to the processors' query API (one of their
 *     {@code http.auth.<name>} tokens); null sends none, for an open API
 * @param fairShare each tenant's share of this instance: calls a second and calls waiting
 */
public record GatewayConfig(
    String host,
    int port,
    String instance,
    Properties kafka,
    String schemaRegistryUrl,
    URI ledgerUrl,
    ToolPolicies policies,
    Credentials credentials,
    Duration defaultWait,
    Duration maxWait,
    int maxBodyBytes,
    int replyPartitions,
    short replyReplication,
    int replyThreads,
    Tls tls,
    String ledgerToken,
    FairShare fairShare) {

  /**
   * HTTPS: a key store (PKCS12 unless {@code type} says otherwise) holding the server's key and
   * certificate chain.
   */
  public record Tls(java.nio.file.Path keyStore, String password, String type) {
    public Tls {
      Objects.requireNonNull(keyStore, "gateway.tls.keystore.path");
      Objects.requireNonNull(password, "gateway.tls.keystore.password");
      type = type == null || type.isBlank() ? "PKCS12" : type;
    }
  }

  static final Pattern INSTANCE = Pattern.compile("[A-Za-z0-9._-]{1,200}");

  /**
   * Reply consumers by default: a poll brings one executor commit's replies at once, and one thread
   * answers them one after another (measured in docs/performance.md).
   */
  public static final int REPLY_THREADS = 2;

  public GatewayConfig {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(kafka, "kafka");
    Objects.requireNonNull(schemaRegistryUrl, "schemaRegistryUrl");
    Objects.requireNonNull(ledgerUrl, "ledgerUrl");
    Objects.requireNonNull(policies, "policies");
    Objects.requireNonNull(credentials, "credentials");
    Objects.requireNonNull(fairShare, "fairShare");
    if (instance == null || !INSTANCE.matcher(instance).matches()) {
      throw new IllegalArgumentException(
          "gateway.instance must be 1-200 letters, digits, '.', '_' or '-' (it names the reply topic"
              + " tool-results.<instance>), was "
              + instance);
    }
    if (maxWait.isNegative() || maxWait.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException(
          "gateway.wait.max must be 0 to 10 minutes, was " + maxWait);
    }
    if (defaultWait.isNegative() || defaultWait.compareTo(maxWait) > 0) {
      throw new IllegalArgumentException(
          "gateway.wait.default must be 0 to gateway.wait.max ("
              + maxWait
              + "), was "
              + defaultWait);
    }
    if (maxBodyBytes < 64 || maxBodyBytes > 8 * 1024 * 1024) {
      throw new IllegalArgumentException(
          "gateway.body.max.bytes must be 64 to 8 MiB, was " + maxBodyBytes);
    }
    if (replyThreads < 1 || replyThreads > 64) {
      throw new IllegalArgumentException(
          "gateway.reply.threads must be 1 to 64, was " + replyThreads);
    }
    kafka = copy(kafka);
  }

  /** Listens on 127.0.0.1:0, waits 10 s by default and 60 s at most, bodies up to 1 MiB. */
  public static GatewayConfig of(
      String instance,
      Properties kafka,
      String schemaRegistryUrl,
      URI ledgerUrl,
      ToolPolicies policies,
      Credentials credentials) {
    return new GatewayConfig(
        "127.0.0.1",
        0,
        instance,
        kafka,
        schemaRegistryUrl,
        ledgerUrl,
        policies,
        credentials,
        Duration.ofSeconds(10),
        Duration.ofSeconds(60),
        1024 * 1024,
        8,
        (short) 1,
        REPLY_THREADS,
        null,
        null,
        FairShare.none());
  }

  public String replyTopic() {
    return Topics.RESULTS + "." + instance;
  }

  public GatewayConfig withListen(String listenHost, int listenPort) {
    Copy c = new Copy(this);
    c.host = listenHost;
    c.port = listenPort;
    return c.build();
  }

  public GatewayConfig withWaits(Duration byDefault, Duration atMost) {
    Copy c = new Copy(this);
    c.defaultWait = byDefault;
    c.maxWait = atMost;
    return c.build();
  }

  public GatewayConfig withMaxBodyBytes(int bytes) {
    Copy c = new Copy(this);
    c.maxBodyBytes = bytes;
    return c.build();
  }

  public GatewayConfig withReplyTopic(int partitions, short replication) {
    Copy c = new Copy(this);
    c.replyPartitions = partitions;
    c.replyReplication = replication;
    return c.build();
  }

  public GatewayConfig withReplyThreads(int threads) {
    Copy c = new Copy(this);
    c.replyThreads = threads;
    return c.build();
  }

  /** Serves HTTPS with {@code keyStore}; null serves plain HTTP. */
  public GatewayConfig withTls(Tls keyStore) {
    Copy c = new Copy(this);
    c.tls = keyStore;
    return c.build();
  }

  /** Takes {@code callers} (for instance, the same with access tokens besides). */
  public GatewayConfig withCredentials(Credentials callers) {
    Copy c = new Copy(this);
    c.credentials = callers;
    return c.build();
  }

  /** Limits each tenant's calls a second and calls waiting at this instance. */
  public GatewayConfig withFairShare(FairShare share) {
    Copy c = new Copy(this);
    c.fairShare = share;
    return c.build();
  }

  /** Sends {@code token} to the processors' query API. */
  public GatewayConfig withLedgerToken(String token) {
    Copy c = new Copy(this);
    c.ledgerToken = token == null || token.isBlank() ? null : token;
    return c.build();
  }

  /** A mutable copy, for the {@code with} methods. */
  private static final class Copy {
    String host;
    int port;
    String instance;
    Properties kafka;
    String schemaRegistryUrl;
    URI ledgerUrl;
    ToolPolicies policies;
    Credentials credentials;
    Duration defaultWait;
    Duration maxWait;
    int maxBodyBytes;
    int replyPartitions;
    short replyReplication;
    int replyThreads;
    Tls tls;
    String ledgerToken;
    FairShare fairShare;

    Copy(GatewayConfig c) {
      host = c.host;
      port = c.port;
      instance = c.instance;
      kafka = c.kafka;
      schemaRegistryUrl = c.schemaRegistryUrl;
      ledgerUrl = c.ledgerUrl;
      policies = c.policies;
      credentials = c.credentials;
      defaultWait = c.defaultWait;
      maxWait = c.maxWait;
      maxBodyBytes = c.maxBodyBytes;
      replyPartitions = c.replyPartitions;
      replyReplication = c.replyReplication;
      replyThreads = c.replyThreads;
      tls = c.tls;
      ledgerToken = c.ledgerToken;
      fairShare = c.fairShare;
    }

    GatewayConfig build() {
      return new GatewayConfig(
          host,
          port,
          instance,
          kafka,
          schemaRegistryUrl,
          ledgerUrl,
          policies,
          credentials,
          defaultWait,
          maxWait,
          maxBodyBytes,
          replyPartitions,
          replyReplication,
          replyThreads,
          tls,
          ledgerToken,
          fairShare);
    }
  }

  private static Properties copy(Properties p) {
    Properties out = new Properties();
    out.putAll(p);
    return out;
  }
}
