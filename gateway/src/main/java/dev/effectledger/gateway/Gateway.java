package dev.effectledger.gateway;

import dev.effectledger.client.IntentPublisher;
import dev.effectledger.client.ReplyRouter;
import dev.effectledger.policy.FollowedPolicy;
import dev.effectledger.schema.Problem;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP gateway: {@code POST /v1/tools/{tool}/calls} ({@link CallRoute}), {@code GET
 * /v1/calls/{key}} ({@link AttachRoute}), {@code GET /v1/tools} ({@link ToolCatalogue}), {@code
 * /healthz}, {@code /readyz} ({@link Readiness}), {@code /metrics} and {@code /openapi.yaml}. This
 * class starts the parts, routes to them and follows the applied tool policy; see the package doc
 * and docs/openapi.yaml.
 */
public final class Gateway implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Gateway.class);
  private static final Pattern CALLS = Pattern.compile("/v1/tools/([^/]*)/calls");

  private final GatewayConfig config;
  private final GatewayServer http;
  private final IntentPublisher intents;
  private final ReplyRouter replies;
  private final FollowedPolicy policy;
  private final Admin admin;
  private final ScheduledExecutorService timers;
  private final PrometheusMeterRegistry metrics;
  private final Exchange.Meters meters;
  private final Readiness readiness;
  private final CallRoute calls;
  private final AttachRoute attach;
  private final byte[] openApi;

  private Gateway(GatewayConfig config) throws Exception {
    this.config = config;
    Properties kafka = config.kafka();
    // The Kafka settings may carry the registry's credentials (basic.auth.*, bearer.auth.*).
    SchemaRegistry registry = SchemaRegistries.forUrl(config.schemaRegistryUrl(), kafka);
    this.admin = Admin.create(adminSettings(kafka));
    GatewayKafka.createReplyTopic(admin, config);
    this.intents = GatewayKafka.intents(kafka, registry, config);
    this.replies =
        ReplyRouter.everyPartition(
            kafka,
            config.replyTopic(),
            () -> new RegistryAvroSerde<>(registry, ToolResult.class),
            config.replyThreads(),
            "gateway-replies");
    // Tools and key rules from the applied policy (tool-policy) as it changes.
    this.policy =
        FollowedPolicy.start(kafka, config.policies(), "Gateway", "effectledger-gateway-policy");
    HttpClient ledger = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    this.timers = Timers.create();
    this.metrics = PrometheusMetrics.registry();
    this.meters = Exchange.Meters.on(metrics);
    metrics.gauge("gateway.calls.waiting", replies, ReplyRouter::waiting);
    this.readiness = new Readiness(config, admin, ledger, replies);
    this.calls =
        new CallRoute(
            config, policy::policies, readiness, intents, replies, timers, Clock.systemUTC());
    this.attach = new AttachRoute(config, readiness, replies, ledger, timers);
    try (InputStream in = Gateway.class.getResourceAsStream("/openapi.yaml")) {
      this.openApi = in == null ? new byte[0] : in.readAllBytes();
    }
    this.http = GatewayServer.of(config, new Routes());
    timers.scheduleWithFixedDelay(
        readiness::probe, 0, Readiness.PROBE.toMillis(), TimeUnit.MILLISECONDS);
    http.server().start();
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
    return http.connector().getLocalPort();
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
    return readiness.why() == null;
  }

  /** The applied policy version this gateway serves; 0: its own tools.yaml. */
  public long policyVersion() {
    return policy.version();
  }

  private static Properties adminSettings(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
    props.putIfAbsent(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000);
    return props;
  }

  /**
   * The routes, on the path as sent: a key or tool is one segment, percent-decoded by its route.
   */
  private final class Routes extends Handler.Abstract.NonBlocking {
    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      String path = request.getHttpURI().getPath();
      String method = request.getMethod();
      Exchange ex = new Exchange(request, response, callback, meters);
      var call = CALLS.matcher(path);
      if (call.matches()) {
        if (!method.equals("POST")) {
          ex.methodNotAllowed("POST");
        } else {
          calls.post(ex, call.group(1));
        }
      } else if (path.startsWith("/v1/calls/")) {
        if (!method.equals("GET")) {
          ex.methodNotAllowed("GET");
        } else {
          attach.get(ex, path.substring("/v1/calls/".length()));
        }
      } else if (path.equals("/v1/tools")) {
        if (!method.equals("GET")) {
          ex.methodNotAllowed("GET");
        } else {
          ex.authenticate(config.credentials())
              .ifPresent(
                  caller ->
                      ex.send(
                          200, "application/json", ToolCatalogue.json(policy.policies(), caller)));
        }
      } else if (path.equals("/healthz")) {
        ex.send(200, "text/plain; charset=utf-8", "ok\n");
      } else if (path.equals("/readyz")) {
        String why = readiness.why();
        ex.send(
            why == null ? 200 : 503,
            "text/plain; charset=utf-8",
            why == null ? "ready\n" : "not ready: " + why + "\n");
      } else if (path.equals("/metrics")) {
        PrometheusMetrics.Scrape scrape =
            PrometheusMetrics.scrape(metrics, request.getHeaders().get(HttpHeader.ACCEPT));
        ex.send(200, scrape.contentType(), scrape.body());
      } else if (path.equals("/openapi.yaml")) {
        ex.send(200, "application/yaml", openApi);
      } else {
        ex.problem(
            Problem.of(404, "not-found", "Not found", "no route " + path + " (see /openapi.yaml)"));
      }
      return true;
    }
  }

  @Override
  public void close() {
    try {
      http.server().stop();
    } catch (Exception e) {
      log.warn("Stopping the HTTP server failed", e);
    }
    timers.shutdownNow();
    policy.close();
    replies.close();
    intents.close(Duration.ofSeconds(5));
    admin.close(Duration.ofSeconds(5));
    metrics.close();
  }
}
