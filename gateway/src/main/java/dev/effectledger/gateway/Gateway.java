package dev.effectledger.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.client.DerivedKey;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyDerivationException;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.PendingReply;
import dev.effectledger.client.StepContext;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.ReplyJson;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.TopicVisibility;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;
import org.eclipse.jetty.alpn.server.ALPNServerConnectionFactory;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.http2.HTTP2Cipher;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.http2.server.HTTP2ServerConnectionFactory;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.URIUtil;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP gateway: {@code POST /v1/tools/{tool}/calls}, {@code GET /v1/calls/{key}}, {@code
 * /healthz}, {@code /readyz}, {@code /metrics} and {@code /openapi.yaml}. See the package doc and
 * docs/openapi.yaml.
 */
public final class Gateway implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Gateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9_.-]{1,128}");
  private static final Pattern CALLS = Pattern.compile("/v1/tools/([^/]*)/calls");
  private static final Duration POLL = Duration.ofMillis(200);
  private static final Duration UNKNOWN_GRACE = Duration.ofSeconds(3);
  private static final Duration PROBE = Duration.ofSeconds(1);
  private static final int RETRY_AFTER_SECONDS = 5;

  /**
   * Calls one HTTP/2 connection may have waiting at once (Jetty's default is 128); a client opens
   * another connection past it.
   */
  static final int MAX_STREAMS_PER_CONNECTION = 1024;

  private final GatewayConfig config;
  private final Server server;
  private final ServerConnector connector;
  private final KafkaProducer<String, ToolIntent> producer;
  private final ReplyHub replies;
  private final PolicyFeed policyFeed;

  /** The applied policy once one is read from tool-policy; the config's file until then. */
  private volatile ToolPolicies policies;

  private volatile long policyVersion;
  private final Admin admin;
  private final HttpClient ledger;
  private final ScheduledExecutorService timers;
  private final PrometheusMeterRegistry metrics;
  private final Timer waits;
  private final Clock clock = Clock.systemUTC();
  private final byte[] openApi;
  private volatile boolean brokerUp;
  private volatile boolean ledgerUp;
  private volatile String notReady = "starting";
  // Not being ready while the ledger starts is expected: warn only after this grace, or once the
  // gateway had been ready; then once per reason.
  private static final long STARTUP_GRACE_NANOS = TimeUnit.SECONDS.toNanos(30);
  private final long startedAt = System.nanoTime();
  private boolean everReady;
  private String warned;

  private Gateway(GatewayConfig config) throws Exception {
    this.config = config;
    Properties kafka = config.kafka();
    // The Kafka settings may carry the registry's credentials (basic.auth.*, bearer.auth.*).
    SchemaRegistry registry = SchemaRegistries.forUrl(config.schemaRegistryUrl(), kafka);
    this.admin = Admin.create(adminSettings(kafka));
    createReplyTopic();
    Properties producerProps = new Properties();
    producerProps.putAll(kafka);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    // Fail closed and fast: an intent the broker did not take within 10 s is answered 503.
    producerProps.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
    producerProps.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    producerProps.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
    producerProps.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 1);
    this.producer =
        new KafkaProducer<>(
            producerProps,
            new StringSerializer(),
            new RegistryAvroSerde<>(registry, ToolIntent.class));
    this.replies =
        new ReplyHub(
            kafka,
            config.replyTopic(),
            () -> new RegistryAvroSerde<>(registry, ToolResult.class),
            config.replyThreads());
    // Tools and key rules from the applied policy (tool-policy) as it changes.
    this.policies = config.policies();
    this.policyFeed = PolicyFeed.start(kafka, this::applyPolicy, "effectledger-gateway-policy");
    this.ledger = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    this.timers = Timers.create();
    this.metrics = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    this.waits =
        Timer.builder("gateway.call.wait")
            .description("Time from a call's request to its answer")
            .publishPercentiles(0.5, 0.99)
            .register(metrics);
    metrics.gauge("gateway.calls.waiting", replies, ReplyHub::waiting);
    try (InputStream in = Gateway.class.getResourceAsStream("/openapi.yaml")) {
      this.openApi = in == null ? new byte[0] : in.readAllBytes();
    }
    QueuedThreadPool threads = new QueuedThreadPool(64, 4);
    threads.setName("gateway-http");
    threads.setDaemon(true);
    this.server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendXPoweredBy(false);
    // A key in GET /v1/calls/{key} may contain an encoded '/' (%2F) or '%' (%25).
    http.setUriCompliance(
        UriCompliance.DEFAULT.with(
            "effectledger-keys",
            UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR,
            UriCompliance.Violation.AMBIGUOUS_PATH_ENCODING));
    // HTTP/2 beside HTTP/1.1: an HTTP/1.1 call that waits for its answer holds a connection, so a
    // caller with hundreds of calls waiting needs hundreds of connections; over HTTP/2 they are
    // streams on a few. Plain: h2c by prior knowledge or upgrade on the same port. TLS: h2 or
    // http/1.1 by ALPN.
    HTTP2ServerConnectionFactory h2 =
        config.tls() == null
            ? new HTTP2CServerConnectionFactory(http)
            : new HTTP2ServerConnectionFactory(http);
    h2.setMaxConcurrentStreams(MAX_STREAMS_PER_CONNECTION);
    h2.setStreamIdleTimeout(config.maxWait().plusSeconds(30).toMillis());
    if (config.tls() == null) {
      this.connector = new ServerConnector(server, new HttpConnectionFactory(http), h2);
    } else {
      SslContextFactory.Server tls = new SslContextFactory.Server();
      tls.setKeyStorePath(config.tls().keyStore().toString());
      tls.setKeyStorePassword(config.tls().password());
      tls.setKeyStoreType(config.tls().type());
      tls.setCipherComparator(HTTP2Cipher.COMPARATOR);
      ALPNServerConnectionFactory alpn =
          new ALPNServerConnectionFactory(h2.getProtocol(), HttpVersion.HTTP_1_1.asString());
      alpn.setDefaultProtocol(HttpVersion.HTTP_1_1.asString());
      this.connector =
          new ServerConnector(
              server,
              new SslConnectionFactory(tls, alpn.getProtocol()),
              alpn,
              h2,
              new HttpConnectionFactory(http));
    }
    // A burst of new connections (agents reconnecting after a deploy) outruns the acceptor; the
    // JDK's default backlog of 50 drops them (measured: 184 of 10,000 connections opened in bursts
    // of 500 were cut). The kernel caps it at net.core.somaxconn.
    connector.setAcceptQueueSize(1024);
    connector.setHost(config.host());
    connector.setPort(config.port());
    // Longer than any wait, so a waiting call is never cut by the connection's idle timeout.
    connector.setIdleTimeout(config.maxWait().plusSeconds(30).toMillis());
    server.addConnector(connector);
    server.setHandler(new Routes());
    server.setErrorHandler(new ProblemErrors());
    timers.scheduleWithFixedDelay(this::probe, 0, PROBE.toMillis(), TimeUnit.MILLISECONDS);
    server.start();
  }

  /**
   * Starts a gateway: creates its reply topic when missing, starts its reply consumer and listens.
   *
   * @throws IllegalStateException when it cannot listen or reach Kafka's admin API
   */
  public static Gateway start(GatewayConfig config) {
    try {
      return new Gateway(config);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(
          "Cannot start the gateway on "
              + config.host()
              + ":"
              + config.port()
              + ": "
              + e.getMessage(),
          e);
    }
  }

  public int port() {
    return connector.getLocalPort();
  }

  public URI uri() {
    return URI.create(
        (config.tls() == null ? "http://" : "https://") + config.host() + ":" + port());
  }

  /** Calls waiting for their answer on this instance (the {@code gateway_calls_waiting} gauge). */
  public int waitingCalls() {
    return replies.waiting();
  }

  /** Ready to take calls: its reply consumer positioned, a broker and the ledger reachable. */
  public boolean isReady() {
    return readiness() == null;
  }

  private String readiness() {
    if (replies.failure() != null) {
      return "the reply consumer stopped: " + replies.failure().getMessage();
    }
    if (!replies.ready()) {
      return "the reply consumer is not yet positioned on " + config.replyTopic();
    }
    if (!brokerUp) {
      return "no Kafka broker answers at " + config.kafka().getProperty("bootstrap.servers");
    }
    if (!ledgerUp) {
      return "the ledger at " + config.ledgerUrl() + " is not ready (its /readyz)";
    }
    return null;
  }

  private static Properties adminSettings(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
    props.putIfAbsent(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000);
    return props;
  }

  private void createReplyTopic() throws Exception {
    try {
      admin
          .createTopics(
              List.of(
                  new NewTopic(
                          config.replyTopic(), config.replyPartitions(), config.replyReplication())
                      .configs(
                          Map.of("retention.ms", String.valueOf(Duration.ofDays(1).toMillis())))))
          .all()
          .get(30, TimeUnit.SECONDS);
      TopicVisibility.await(admin, List.of(config.replyTopic()), Duration.ofSeconds(30));
    } catch (java.util.concurrent.ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException(
            "Cannot create the reply topic "
                + config.replyTopic()
                + " (create it, or grant the gateway CreateTopics): "
                + e.getCause().getMessage(),
            e.getCause());
      }
    }
  }

  private void probe() {
    try {
      brokerUp =
          !admin
              .describeCluster(new DescribeClusterOptions().timeoutMs(2_000))
              .nodes()
              .get(3, TimeUnit.SECONDS)
              .isEmpty();
    } catch (Exception e) {
      brokerUp = false;
    }
    try {
      HttpResponse<Void> r =
          ledger.send(
              HttpRequest.newBuilder(config.ledgerUrl().resolve("/readyz"))
                  .timeout(Duration.ofSeconds(2))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.discarding());
      ledgerUp = r.statusCode() == 200;
    } catch (IOException e) {
      ledgerUp = false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    String why = readiness();
    if (why == null) {
      if (notReady != null) {
        log.info("Gateway {} is ready", config.instance());
      }
      everReady = true;
      warned = null;
    } else if (!why.equals(warned)
        && (everReady || System.nanoTime() - startedAt > STARTUP_GRACE_NANOS)) {
      log.warn("Gateway {} is not ready, calls are answered 503: {}", config.instance(), why);
      warned = why;
    }
    notReady = why;
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP

  private final class Routes extends Handler.Abstract.NonBlocking {
    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      // Routed on the path as sent: a key or tool is one segment, percent-decoded once here
      // (a caller's key may hold '/', '+' or '%', which Location encodes).
      String path = request.getHttpURI().getPath();
      String method = request.getMethod();
      Exchange ex = new Exchange(request, response, callback);
      var calls = CALLS.matcher(path);
      if (calls.matches()) {
        if (!method.equals("POST")) {
          ex.methodNotAllowed("POST");
        } else {
          post(ex, calls.group(1));
        }
      } else if (path.startsWith("/v1/calls/")) {
        if (!method.equals("GET")) {
          ex.methodNotAllowed("GET");
        } else {
          get(ex, path.substring("/v1/calls/".length()));
        }
      } else if (path.equals("/v1/tools")) {
        if (!method.equals("GET")) {
          ex.methodNotAllowed("GET");
        } else {
          authenticate(ex)
              .ifPresent(
                  caller -> ex.send(200, "application/json", ToolCatalogue.json(policies, caller)));
        }
      } else if (path.equals("/healthz")) {
        ex.send(200, "text/plain; charset=utf-8", "ok\n");
      } else if (path.equals("/readyz")) {
        String why = readiness();
        ex.send(
            why == null ? 200 : 503,
            "text/plain; charset=utf-8",
            why == null ? "ready\n" : "not ready: " + why + "\n");
      } else if (path.equals("/metrics")) {
        ex.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape());
      } else if (path.equals("/openapi.yaml")) {
        ex.send(200, "application/yaml", openApi);
      } else {
        ex.problem(
            Problem.of(404, "not-found", "Not found", "no route " + path + " (see /openapi.yaml)"));
      }
      return true;
    }
  }

  /** One request and its response, answered exactly once. */
  private final class Exchange {
    final Request request;
    final Response response;
    final Callback callback;
    final long started = System.nanoTime();
    final AtomicBoolean answered = new AtomicBoolean();
    volatile String tool = "";

    /** Whether the request's body was read to its end (POST): see {@link #send}. */
    volatile boolean bodyRead;

    volatile Runnable onAbandon = () -> {};

    /**
     * Whether an HTTP/1.x caller closes its connection while its call waits: see {@link #waits}.
     */
    private HangUpWatch hangUp; // guarded by this

    Exchange(Request request, Response response, Callback callback) {
      this.request = request;
      this.response = response;
      this.callback = callback;
      request.addFailureListener(this::abandoned);
    }

    /** The caller went away before its answer: the call stops waiting, its effect goes on. */
    void abandoned(Throwable failure) {
      if (answered.compareAndSet(false, true)) {
        onAbandon.run();
        count("abandoned");
        callback.failed(failure);
      }
    }

    /**
     * The call now waits for its answer, its body read: a caller that hangs up meanwhile is noticed
     * over HTTP/1.x too ({@link HangUpWatch}), not only when the answer is written.
     */
    synchronized void waits() {
      // Never once answered: Jetty reads the connection again after the answer. The answer marks
      // itself answered before it stops the watch under this lock, so one of the two sees the
      // other.
      if (!answered.get()) {
        hangUp = HangUpWatch.start(request, this::abandoned);
      }
    }

    /** Stops the hang-up watch, once answered; true if the connection must close after it. */
    private synchronized boolean stopWatching() {
      return hangUp != null && hangUp.stop();
    }

    String header(HttpHeader name) {
      return request.getHeaders().get(name);
    }

    List<String> headers(String name) {
      return request.getHeaders().getValuesList(name);
    }

    void send(int status, String type, String body) {
      send(status, type, body.getBytes(StandardCharsets.UTF_8), Map.of());
    }

    void send(int status, String type, byte[] body) {
      send(status, type, body, Map.of());
    }

    void send(int status, String type, byte[] body, Map<String, String> extra) {
      if (!answered.compareAndSet(false, true)) {
        return;
      }
      boolean pipelined = stopWatching();
      response.setStatus(status);
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, type);
      extra.forEach((k, v) -> response.getHeaders().put(k, v));
      boolean bodyLeft =
          !bodyRead
              && "POST".equals(request.getMethod())
              && request.getLength() != 0
              && request.getConnectionMetaData().getHttpVersion() != HttpVersion.HTTP_2;
      if (bodyLeft || pipelined) {
        // Answered before its body was read (401, 404, 415, ...), or the hang-up watch read the
        // start of the caller's next request, which Jetty will not see: the connection closes
        // after the answer, and says so, so that no client sends its next request on it. (HTTP/2
        // has no such header: the stream ends and the connection goes on.)
        response.getHeaders().put(HttpHeader.CONNECTION, "close");
      }
      response.write(true, ByteBuffer.wrap(body), callback);
    }

    void json(int status, JsonNode body, Map<String, String> extra) {
      count(String.valueOf(status));
      send(status, "application/json", body.toString().getBytes(StandardCharsets.UTF_8), extra);
    }

    void problem(Problem p) {
      problem(p, Map.of());
    }

    void problem(Problem p, Map<String, String> extra) {
      count(String.valueOf(p.status));
      send(p.status, Problem.MEDIA_TYPE, p.json().getBytes(StandardCharsets.UTF_8), extra);
    }

    void methodNotAllowed(String allowed) {
      problem(
          Problem.of(
              405,
              "method-not-allowed",
              "Method not allowed",
              request.getMethod() + " is not allowed here; use " + allowed),
          Map.of("Allow", allowed));
    }

    void count(String status) {
      Counter.builder("gateway.requests")
          .description("Requests by route, tool and status")
          .tag("tool", tool)
          .tag("status", status)
          .register(metrics)
          .increment();
      waits.record(Duration.ofNanos(System.nanoTime() - started));
    }
  }

  private final class ProblemErrors extends ErrorHandler {
    @Override
    protected void generateResponse(
        Request request,
        Response response,
        int code,
        String message,
        Throwable cause,
        Callback callback) {
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, Problem.MEDIA_TYPE);
      Problem p =
          Problem.of(
              code,
              code == 400 ? "bad-request" : "http-" + code,
              code == 400 ? "Bad request" : "HTTP " + code,
              message == null ? "the request could not be read" : message);
      response.write(true, ByteBuffer.wrap(p.json().getBytes(StandardCharsets.UTF_8)), callback);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // POST /v1/tools/{tool}/calls

  private void post(Exchange ex, String rawTool) {
    String tool;
    try {
      tool = URIUtil.decodePath(rawTool);
    } catch (IllegalArgumentException e) {
      tool = rawTool; // not a valid encoding: no tool has that name
    }
    Optional<Credentials.Caller> caller = authenticate(ex);
    if (caller.isEmpty()) {
      return;
    }
    Optional<ToolPolicy> policy =
        TOOL.matcher(tool).matches() ? policies.forTool(tool) : Optional.empty();
    if (policy.isEmpty()) {
      ex.problem(
          Problem.of(404, "unknown-tool", "Unknown tool", "no tool named '" + clip(tool) + "'")
              .code(ErrorCode.UNKNOWN_TOOL.name(), false, ErrorCode.UNKNOWN_TOOL.correctiveAction())
              .field("{tool}"));
      return;
    }
    ex.tool = tool;
    if (!caller.get().mayCall(tool)) {
      ex.problem(
          Problem.of(
              403,
              "forbidden",
              "Forbidden",
              "credential '" + caller.get().name() + "' may not call " + tool));
      return;
    }
    String type = ex.header(HttpHeader.CONTENT_TYPE);
    if (type == null || !isJson(type)) {
      ex.problem(
          Problem.of(
                  415,
                  "unsupported-media-type",
                  "Unsupported media type",
                  "send the body as application/json (UTF-8), not "
                      + (type == null ? "nothing" : clip(type)))
              .field("Content-Type"),
          Map.of("Accept-Post", "application/json"));
      return;
    }
    long length = ex.request.getLength();
    if (length > config.maxBodyBytes()) {
      tooLarge(ex);
      return;
    }
    Optional<String> suppliedKey;
    Duration wait;
    try {
      suppliedKey = HeaderSyntax.idempotencyKey(ex.headers("Idempotency-Key"));
      wait = waitOf(ex);
    } catch (HeaderSyntax.Invalid e) {
      ex.problem(
          Problem.of(400, "invalid-header", "Invalid header", e.getMessage())
              .field("Idempotency-Key"));
      return;
    }
    BoundedBody.read(
        ex.request,
        config.maxBodyBytes(),
        new BoundedBody.Outcome() {
          @Override
          public void body(byte[] bytes) {
            ex.bodyRead = true;
            call(ex, caller.get(), policy.get(), suppliedKey, wait, bytes);
          }

          @Override
          public void tooLarge() {
            Gateway.this.tooLarge(ex);
          }

          @Override
          public void unreadable(Throwable failure) {
            ex.problem(
                Problem.of(400, "unreadable-body", "Bad request", "the body could not be read"));
          }
        });
  }

  private void tooLarge(Exchange ex) {
    ex.problem(
        Problem.of(
            413,
            "body-too-large",
            "Content too large",
            "the body is larger than "
                + config.maxBodyBytes()
                + " bytes; pass a reference to large data instead"),
        Map.of("Connection", "close"));
  }

  private Duration waitOf(Exchange ex) {
    Duration asked = HeaderSyntax.preferredWait(ex.headers("Prefer")).orElse(config.defaultWait());
    return asked.compareTo(config.maxWait()) > 0 ? config.maxWait() : asked;
  }

  private void call(
      Exchange ex,
      Credentials.Caller caller,
      ToolPolicy policy,
      Optional<String> suppliedKey,
      Duration wait,
      byte[] bytes) {
    CallBody body;
    DerivedKey derived;
    try {
      body = CallBody.parse(bytes);
      derived =
          IdempotencyKeys.derive(
              new StepContext(caller.tenant(), body.run(), body.step(), body.scope()),
              policy.name(),
              body.argumentsJson(),
              new KeyRules(policy.key().ignore(), policy.key().require()));
    } catch (CallBody.Invalid e) {
      ex.problem(
          Problem.of(400, "invalid-body", "Invalid request body", e.getMessage()).field(e.field));
      return;
    } catch (KeyDerivationException e) {
      ex.problem(
          Problem.of(400, "invalid-arguments", "Invalid arguments", e.getMessage())
              .field("/arguments")
              .code(e.code(), false, correctiveAction(e.code())));
      return;
    }
    String why = readiness();
    if (why != null) {
      unavailable(ex, why);
      return;
    }
    String key = suppliedKey.orElse(derived.key());
    String requestId = UUID.randomUUID().toString();
    PendingCall pending = new PendingCall(ex, key, policy, requestId, wait);
    ToolIntent intent =
        ToolIntent.newBuilder()
            .setIdempotencyKey(key)
            .setTenant(caller.tenant())
            .setRunId(body.run())
            .setStepId(body.step())
            .setTool(policy.name())
            .setArguments(body.argumentsJson())
            .setArgumentsHash(derived.argumentsHash())
            .setBusinessScope(body.scope())
            .setRequestedAt(clock.instant())
            .setReplyTopic(config.replyTopic())
            .setBypassApproval(body.bypassApproval())
            .setTraceId(header(ex, "traceparent"))
            .build();
    RecordHeaders headers = new RecordHeaders();
    headers.add(Topics.REQUEST_ID_HEADER, requestId.getBytes(StandardCharsets.UTF_8));
    try {
      producer.send(
          new ProducerRecord<>(Topics.INTENTS, null, key, intent, headers),
          (metadata, error) -> {
            if (error != null) {
              pending.notPublished(error);
            } else {
              pending.published(metadata.offset());
            }
          });
    } catch (RuntimeException e) {
      pending.notPublished(e);
    }
  }

  private static String header(Exchange ex, String name) {
    String value = ex.request.getHeaders().get(name);
    return value == null || value.length() > 256 ? null : value;
  }

  private static String correctiveAction(String code) {
    try {
      return ErrorCode.valueOf(code).correctiveAction();
    } catch (IllegalArgumentException e) {
      return "Fix the arguments and call again.";
    }
  }

  private void unavailable(Exchange ex, String why) {
    ex.problem(
        Problem.of(
                503,
                "unavailable",
                "Service unavailable",
                why + "; nothing was published, the action was not attempted")
            .code("UNAVAILABLE", true, "Call again after Retry-After with the same step (or key)."),
        Map.of("Retry-After", String.valueOf(RETRY_AFTER_SECONDS)));
  }

  /** A published call waiting for its answer on the reply topic, up to its wait. */
  private final class PendingCall implements ReplyHub.Listener {
    final Exchange ex;
    final String key;
    final ToolPolicy policy;
    final String requestId;
    final Runnable stopListening;
    final long waitUntil;
    volatile ScheduledFuture<?> timeout;
    volatile ToolResult latest;

    /** Which final reply answers this call: not a release made before its intent was read. */
    final PendingReply answer = new PendingReply();

    PendingCall(Exchange ex, String key, ToolPolicy policy, String requestId, Duration wait) {
      this.ex = ex;
      this.key = key;
      this.policy = policy;
      this.requestId = requestId;
      this.waitUntil = System.nanoTime() + wait.toNanos();
      answer
          .result()
          .thenAccept(
              reply -> {
                stop();
                answer(ex, reply, answer.intentOffset());
              });
      this.stopListening = replies.listen(key, this);
      ex.onAbandon = this::stop;
      ex.waits();
    }

    /**
     * The broker took the intent: from now on the wait bound may answer 202. Before, it may not: a
     * 202 says the call runs, and an intent the broker then refuses never runs (found by
     * RegistryAuthIT: with wait=0 the bound answered 202 before the serializer failed).
     */
    void published(long offset) {
      // On the producer's I/O thread: a release kept aside is answered from a timer thread.
      ToolResult kept = answer.publish(offset);
      if (kept != null) {
        timers.execute(() -> answer.result().complete(kept));
      }
      if (ex.answered.get()) {
        return;
      }
      long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(waitUntil - System.nanoTime()));
      timeout = timers.schedule(this::waited, left, TimeUnit.MILLISECONDS);
      if (ex.answered.get()) {
        timeout.cancel(false);
      }
    }

    @Override
    public void onReply(ToolResult reply, String forRequest, Long through) {
      boolean mine = forRequest == null || forRequest.equals(requestId);
      boolean settled =
          reply.getStatus() == ResultStatus.SUCCEEDED || reply.getStatus() == ResultStatus.FAILED;
      if (!mine && !settled) {
        return; // another call's refusal, notice or replay
      }
      if (reply.getStatus() == ResultStatus.IN_FLIGHT) {
        latest = reply; // attached (coalesce): wait on for the result
        return;
      }
      answer.offer(reply, through); // answered through answer.result()
    }

    void waited() {
      stopListening.run();
      ToolResult last = latest;
      ObjectNode body =
          last != null
              ? ReplyJson.of(last)
              : JSON.createObjectNode()
                  .put("key", key)
                  .put("tool", policy.name())
                  .put("status", ResultStatus.IN_FLIGHT.name());
      ex.json(202, body, stillRunning(key, answer.intentOffset()));
    }

    void notPublished(Exception error) {
      stop();
      log.warn("Could not publish an intent for key {}: {}", key, error.getMessage());
      unavailable(
          ex, "the intent could not be published (" + error.getClass().getSimpleName() + ")");
    }

    void stop() {
      stopListening.run();
      ScheduledFuture<?> bound = timeout;
      if (bound != null) {
        bound.cancel(false);
      }
    }
  }

  /**
   * A 202's headers: {@code Location} names the key and, when known, the offset of the call's
   * intent on its partition ({@code ?intent=}), so that a {@code GET} there takes a release of the
   * key only if the ledger made it after reading that intent.
   */
  private static Map<String, String> stillRunning(String key, long intentOffset) {
    String location =
        "/v1/calls/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
    return Map.of(
        "Location",
        intentOffset >= 0 ? location + "?intent=" + intentOffset : location,
        "Retry-After",
        "1");
  }

  /** The one mapping from the ledger's answer to HTTP; docs/openapi.yaml documents it. */
  private void answer(Exchange ex, ToolResult reply, long intentOffset) {
    Map<String, String> replayed =
        reply.getReplayed() ? Map.of("Idempotent-Replayed", "true") : Map.of();
    switch (reply.getStatus()) {
      case SUCCEEDED -> ex.json(200, ReplyJson.of(reply), replayed);
      case FAILED -> ex.problem(Problem.of(424, "tool-failed", "The tool failed", reply), replayed);
      case UNKNOWN, IN_FLIGHT -> {
        Map<String, String> headers =
            new java.util.HashMap<>(stillRunning(reply.getIdempotencyKey(), intentOffset));
        headers.putAll(replayed);
        ex.json(202, ReplyJson.of(reply), headers);
      }
      case REJECTED -> ex.problem(rejected(reply), replayed);
    }
  }

  private static Problem rejected(ToolResult reply) {
    String code = reply.getError() == null ? "" : reply.getError().getCode();
    return switch (code) {
      case "IDEMPOTENCY_KEY_REUSED" ->
          Problem.of(422, "idempotency-key-reused", "Idempotency key reused", reply);
      case "DUPLICATE_IN_FLIGHT" ->
          Problem.of(409, "duplicate-in-flight", "The same call is in flight", reply);
      case "UNKNOWN_TOOL" -> Problem.of(404, "unknown-tool", "Unknown tool", reply);
      case "BYPASS_NOT_ALLOWED" ->
          Problem.of(403, "bypass-not-allowed", "Bypass not allowed", reply);
      case "BYPASS_APPROVAL_INVALID" ->
          Problem.of(403, "bypass-approval-invalid", "Bypass approval not valid", reply);
      case "ARGUMENTS_TOO_LARGE" ->
          Problem.of(413, "arguments-too-large", "Arguments too large", reply);
      case "ARGUMENTS_NOT_JSON",
          "ARGUMENTS_NOT_OBJECT",
          "MISSING_REQUIRED_FIELD",
          "INVALID_INTENT" ->
          Problem.of(400, "invalid-arguments", "Invalid arguments", reply);
      default -> Problem.of(500, "ledger-refused", "The ledger refused the intent", reply);
    };
  }

  // ---------------------------------------------------------------------------------------------
  // GET /v1/calls/{key}

  private void get(Exchange ex, String rawKey) {
    String key;
    try {
      key = URIUtil.decodePath(rawKey);
    } catch (IllegalArgumentException e) {
      key = "";
    }
    Optional<Credentials.Caller> caller = authenticate(ex);
    if (caller.isEmpty()) {
      return;
    }
    if (key.isEmpty()
        || key.length() > HeaderSyntax.MAX_KEY_LENGTH
        || !key.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
      ex.problem(
          Problem.of(
                  400, "invalid-key", "Invalid key", "a key is 1 to 255 printable ASCII characters")
              .field("{key}"));
      return;
    }
    Duration wait;
    try {
      wait = waitOf(ex);
    } catch (HeaderSyntax.Invalid e) {
      ex.problem(Problem.of(400, "invalid-header", "Invalid header", e.getMessage()));
      return;
    }
    long intent = intentOf(ex.request.getHttpURI().getQuery());
    if (intent == INVALID_INTENT) {
      ex.problem(
          Problem.of(
                  400,
                  "invalid-query",
                  "Invalid query",
                  "intent is the offset of the call's intent, a whole number from a 202's Location")
              .field("intent"));
      return;
    }
    if (!replies.ready() || !brokerUp && !ledgerUp) {
      unavailable(ex, readiness());
      return;
    }
    new Attach(ex, caller.get(), key, intent, wait).poll();
  }

  private static final long INVALID_INTENT = -2;

  /**
   * The {@code intent} of a {@code GET /v1/calls/{key}} query (a 202's Location): the offset of the
   * call's intent; -1 when absent, {@link #INVALID_INTENT} when not a whole number.
   */
  static long intentOf(String query) {
    if (query == null || query.isEmpty()) {
      return -1;
    }
    long intent = -1;
    for (String pair : query.split("&")) {
      if (pair.startsWith("intent=")) {
        String value = pair.substring("intent=".length());
        if (value.isEmpty() || value.length() > 19 || !value.chars().allMatch(Character::isDigit)) {
          return INVALID_INTENT;
        }
        try {
          intent = Long.parseLong(value);
        } catch (NumberFormatException e) {
          return INVALID_INTENT;
        }
      }
    }
    return intent;
  }

  /**
   * A caller attached to a call by key: polls the ledger until the call settles or the wait ends.
   * With the offset of the call's intent (a 202's Location), a release of the key answers it only
   * if the ledger made it after reading that intent (the rule of {@link PendingReply}, applied here
   * directly: an attached call knows its offset from the start); without, any final reply of the
   * key does.
   */
  private final class Attach implements ReplyHub.Listener {
    final Exchange ex;
    final Credentials.Caller caller;
    final String key;
    final long intent;
    final long deadline;
    final long unknownUntil;
    final Runnable stopListening;
    volatile ToolResult latest;

    Attach(Exchange ex, Credentials.Caller caller, String key, long intent, Duration wait) {
      this.ex = ex;
      this.caller = caller;
      this.key = key;
      this.intent = intent;
      long now = System.nanoTime();
      this.deadline = now + wait.toNanos();
      // A call published a moment ago (a 202's Location, or through another instance) is on the
      // intents topic but not yet in the ledger: it is only unknown once it stayed unknown for a
      // while (found by ClientsIT: a GET right after a 202 was answered 404).
      this.unknownUntil = now + Math.min(wait.toNanos(), UNKNOWN_GRACE.toNanos());
      this.stopListening = replies.listen(key, this);
      ex.onAbandon = stopListening;
      ex.waits();
    }

    @Override
    public void onReply(ToolResult reply, String forRequest, Long through) {
      if (through != null && intent >= 0 && intent > through) {
        return; // a release of the key's earlier life: the call's intent starts its next one
      }
      if ((reply.getStatus() == ResultStatus.SUCCEEDED || reply.getStatus() == ResultStatus.FAILED)
          && reply.getTenant().equals(caller.tenant())) {
        stopListening.run();
        answer(ex, ToolResult.newBuilder(reply).setReplayed(true).build(), intent);
      }
    }

    void poll() {
      if (ex.answered.get()) {
        return;
      }
      URI uri =
          config
              .ledgerUrl()
              .resolve(
                  "/v1/results/"
                      + URLEncoder.encode(caller.tenant(), StandardCharsets.UTF_8)
                      + "/"
                      + URLEncoder.encode(key, StandardCharsets.UTF_8));
      HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5));
      if (config.ledgerToken() != null) {
        request.header("Authorization", "Bearer " + config.ledgerToken());
      }
      ledger
          .sendAsync(request.GET().build(), HttpResponse.BodyHandlers.ofString())
          .whenComplete(this::read);
    }

    private void read(HttpResponse<String> response, Throwable error) {
      if (error != null || response.statusCode() == 503 || response.statusCode() == 502) {
        stopListening.run();
        unavailable(ex, "the ledger at " + config.ledgerUrl() + " did not answer");
        return;
      }
      if (response.statusCode() == 401 || response.statusCode() == 403) {
        stopListening.run();
        ex.problem(
            Problem.of(
                502,
                "ledger-refused-gateway",
                "The ledger refused the gateway",
                "the processors' query API wants a token: set gateway.ledger.token to one of their"
                    + " http.auth.<name> tokens"));
        return;
      }
      if (response.statusCode() == 404) {
        if (latest == null && System.nanoTime() - unknownUntil >= 0) {
          stopListening.run();
          ex.problem(
              Problem.of(
                      404,
                      "unknown-call",
                      "Unknown call",
                      "no call with this key for your tenant (never published, or its window ended)")
                  .key(key));
          return;
        }
      } else if (response.statusCode() == 200) {
        ToolResult reply;
        try {
          reply = ReplyJson.parse(JSON.readTree(response.body()), caller.tenant());
        } catch (IOException | IllegalArgumentException e) {
          stopListening.run();
          ex.problem(
              Problem.of(502, "ledger-answer", "Bad answer from the ledger", e.getMessage()));
          return;
        }
        latest = reply;
        if (reply.getStatus() != ResultStatus.IN_FLIGHT) {
          stopListening.run();
          answer(ex, reply, intent);
          return;
        }
      } else {
        stopListening.run();
        ex.problem(
            Problem.of(
                502,
                "ledger-answer",
                "Bad answer from the ledger",
                "the ledger answered HTTP " + response.statusCode()));
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        stopListening.run();
        ex.json(
            202,
            latest == null
                ? JSON.createObjectNode().put("key", key).put("status", "IN_FLIGHT")
                : ReplyJson.of(latest),
            stillRunning(key, intent));
        return;
      }
      timers.schedule(this::poll, Math.min(POLL.toNanos(), left), TimeUnit.NANOSECONDS);
    }
  }

  // ---------------------------------------------------------------------------------------------

  private Optional<Credentials.Caller> authenticate(Exchange ex) {
    String authorization = ex.header(HttpHeader.AUTHORIZATION);
    Optional<Credentials.Caller> caller = config.credentials().authenticate(authorization);
    if (caller.isEmpty()) {
      ex.problem(
          Problem.of(
                  401,
                  "unauthorized",
                  "Unauthorized",
                  authorization == null
                      ? "send Authorization: Bearer <token>"
                      : "the credential is not known to this gateway")
              .field("Authorization"),
          Map.of("WWW-Authenticate", "Bearer realm=\"effectledger\""));
    }
    return caller;
  }

  private static boolean isJson(String contentType) {
    String[] parts = contentType.split(";");
    if (!parts[0].trim().equalsIgnoreCase("application/json")) {
      return false;
    }
    for (int i = 1; i < parts.length; i++) {
      String[] kv = parts[i].trim().split("=", 2);
      if (kv[0].trim().equalsIgnoreCase("charset")
          && (kv.length < 2 || !kv[1].trim().replace("\"", "").equalsIgnoreCase("utf-8"))) {
        return false;
      }
    }
    return true;
  }

  private static String clip(String s) {
    return s.length() > 64 ? s.substring(0, 64) + "..." : s;
  }

  private void applyPolicy(byte[] document) {
    AppliedPolicy applied = AppliedPolicy.fromJson(document);
    if (applied.version() > policyVersion) {
      policies = applied.policies();
      policyVersion = applied.version();
      log.info("Gateway applies tool policy version {}", applied.version());
    }
  }

  /** The applied policy version this gateway serves; 0: its own tools.yaml. */
  public long policyVersion() {
    return policyVersion;
  }

  @Override
  public void close() {
    try {
      server.stop();
    } catch (Exception e) {
      log.warn("Stopping the HTTP server failed", e);
    }
    timers.shutdownNow();
    policyFeed.close();
    replies.close();
    producer.close(Duration.ofSeconds(5));
    admin.close(Duration.ofSeconds(5));
    metrics.close();
  }
}
