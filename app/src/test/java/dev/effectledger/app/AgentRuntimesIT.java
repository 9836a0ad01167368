package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.app.agents.EvalAgent;
import dev.effectledger.app.agents.EvalRequests;
import dev.effectledger.app.agents.LangChain4jAgent;
import dev.effectledger.app.agents.SpringAiAgent;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.testkit.ClientSuites;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The agent-runtime eval, small: scripted agents in the real loops of the Vercel AI SDK, the OpenAI
 * Agents SDK and LangGraph.js (clients/typescript/test-agents), each user request meaning one
 * payment, against a real gateway, ledger and executor in front of a payment API that fails after
 * acting, hangs past the executor's timeout, drops connections and answers slowly. With the
 * adapters, every request takes effect exactly once; the same agents with a hand-written tool that
 * calls the payment API itself (keyed by the model's tool-call id) pay more than once. The large
 * eval (200 requests per runtime) is {@code bench/run agents}.
 */
@Tag("integration")
@Timeout(600)
class AgentRuntimesIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * pay_invoice is config/tools.yaml's charge_card (class, window, pending timeout, in-flight and
   * ambiguity policies, attempts, retry, key rules of the same shape over its own fields) but for:
   * a 2 s timeout instead of 10 s, so that the payment API's 3 s hang is a timeout after the effect
   * the executor meets within the suite's time; no lookupUrl, downstreamKeyWindow or
   * reconcileWithin, which serve the reconciler of held keys: this payment API honours keys, so the
   * executor's retries under the same key settle an ambiguous answer before the ledger would hold
   * it (the adapters' held path is in their own tests); no bypass, which no agent asks for.
   * get_invoice is a read tool: the adapters run it in the agent's process. The agents'
   * ask_approval (LangGraph's interrupt for a person) is not the ledger's at all: the adapter is
   * told to call it directly.
   */
  static final String TOOLS =
      """
      tools:
        pay_invoice:
          class: irreversible
          window: 30d
          pendingTimeout: 2m
          onInFlight: coalesce
          onAmbiguous: hold
          lane: payments
          connector: http
          maxAttempts: 3
          retry: {maxAttempts: 5, base: 200ms, cap: 10s, jitter: 0.2}
          key:
            ignore: [/memo]
            require: [/invoice, /amount, /currency]
          settings: {url: "%1$s", honoursKeys: true, timeout: 2s, effectIdPointer: /id}
        get_invoice:
          class: read
          lane: reads
          connector: http
          settings: {url: "%1$s", method: GET}
      """;

  /** The payment API's faults, on the first request of a key. */
  static final Map<Fault, Integer> FAULTS =
      Map.of(
          Fault.HANG_AFTER_EFFECT, 10,
          Fault.ERROR_AFTER_EFFECT, 10,
          Fault.DROP_AFTER_EFFECT, 5,
          Fault.UNAVAILABLE_BEFORE_EFFECT, 5,
          Fault.SLOW_SUCCESS, 10);

  /**
   * Requests per runtime and mode: the small eval's, or {@code -Deffectledger.eval.requests=N} for
   * every runtime ({@code bench/run agents}, which also names a report file in {@code
   * -Deffectledger.eval.report}).
   */
  private static final int LARGE = Integer.getInteger("effectledger.eval.requests", 0);

  private static final Map<String, Integer> REQUESTS =
      LARGE > 0
          ? Map.of("ai-sdk", LARGE, "openai-agents", LARGE, "langgraph", LARGE)
          : Map.of("ai-sdk", 9, "openai-agents", 9, "langgraph", 10);

  private static final int JAVA_REQUESTS = LARGE > 0 ? LARGE : 9;

  private static EmbeddedPostgres postgres;
  private static GatewayPipeline pipeline;
  private static Gateway gateway;

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pipeline =
        GatewayPipeline.startWithTools(
            kafka.bootstrapServers(), "agents-it", TOOLS, Duration.ofSeconds(3));
    gateway = Gateway.start(pipeline.gatewayConfig("gw-agents", pipeline.ledgerUrl()));
    GatewayReadiness.awaitReady("gateway gw-agents", gateway, Duration.ofSeconds(90));
    // The file applied as a live policy: the adapters route by each tool's class in it.
    PolicyTopic.publish(
        pipeline.kafka(),
        AppliedPolicy.seed(pipeline.policies, pipeline.toolsYaml)
            .next(pipeline.policies, pipeline.toolsYaml, Instant.now(), "agents-it"),
        4);
    pipeline.payments.countBy("/invoice").faultMix(11, FAULTS);
  }

  @AfterAll
  static void stop() throws Exception {
    gateway.close();
    pipeline.close();
    postgres.close();
  }

  @Test
  void shouldPayOncePerRequestInTheTypeScriptRuntimesAndMoreThanOnceWithoutTheLedger()
      throws Exception {
    Map<String, String> env =
        Map.of(
            "EFFECTLEDGER_GATEWAY_URL",
            gateway.uri().toString(),
            "EFFECTLEDGER_TOKEN",
            GatewayPipeline.TOKEN,
            "EVAL_PAYMENTS_URL",
            pipeline.payments.url(),
            "EVAL_POSTGRES_URL",
            "postgresql://postgres@127.0.0.1:" + postgres.getPort() + "/postgres");
    List<JsonNode> rows = new ArrayList<>();
    for (String runtime : List.of("ai-sdk", "openai-agents", "langgraph")) {
      // both modes in one process: a Node start and the framework's import once per runtime
      ClientSuites.Run run =
          ClientSuites.npm(
              "eval:agents:dist",
              List.of(
                  "--runtime",
                  runtime,
                  "--mode",
                  "ledger,direct",
                  "--requests",
                  String.valueOf(REQUESTS.get(runtime)),
                  "--tag",
                  "it",
                  "--parallel",
                  LARGE > 0 ? "8" : "4"),
              env);
      assertThat(run.exit()).as(run.output()).isZero();
      String[] lines = run.output().strip().split("\\n");
      JSON.readTree(lines[lines.length - 1]).forEach(rows::add);
    }
    assertOncePerRequestWithTheLedgerOnly(rows, REQUESTS.keySet());
  }

  @Test
  void shouldPayOncePerRequestInLangChain4jAndMoreThanOnceWithoutTheLedger() throws Exception {
    assertOncePerRequestWithTheLedgerOnly(
        javaRuntime(
            "langchain4j",
            (requests, client) -> new LangChain4jAgent(requests, client, pipeline.payments.url())),
        List.of("langchain4j"));
  }

  @Test
  void shouldPayOncePerRequestInSpringAiAndMoreThanOnceWithoutTheLedger() throws Exception {
    assertOncePerRequestWithTheLedgerOnly(
        javaRuntime(
            "spring-ai",
            (requests, client) -> new SpringAiAgent(requests, client, pipeline.payments.url())),
        List.of("spring-ai"));
  }

  /** The eval of a Java runtime: its agent with the ledger's client, then without (null). */
  private static List<JsonNode> javaRuntime(
      String runtime, BiFunction<EvalRequests, ToolCalls, EvalAgent> agents) throws Exception {
    List<JsonNode> rows = new ArrayList<>();
    try (ToolCallClient client =
        ToolCallClient.builder()
            .bootstrapServers(pipeline.bootstrap())
            .schemaRegistryUrl(pipeline.registry())
            .timeout(Duration.ofSeconds(30))
            .build()) {
      assertThat(client.awaitKeyRules(Duration.ofSeconds(30))).isTrue();
      for (String mode : List.of("ledger", "direct")) {
        EvalRequests requests = new EvalRequests("it-" + runtime + "-" + mode, JAVA_REQUESTS, 7);
        Map<String, String> errors = new ConcurrentHashMap<>();
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try (EvalAgent agent = agents.apply(requests, mode.equals("ledger") ? client : null)) {
          List<Future<?>> runs = new ArrayList<>();
          for (EvalRequests.Request r : requests.all()) {
            runs.add(
                threads.submit(
                    () -> {
                      try {
                        agent.run(r, "acme");
                      } catch (RuntimeException e) {
                        errors.put(r.id(), String.valueOf(e.getMessage()));
                      }
                    }));
          }
          for (Future<?> run : runs) {
            run.get(5, TimeUnit.MINUTES);
          }
        } finally {
          threads.shutdownNow();
        }
        requests.rows(runtime, mode, pipeline.payments.effectsByField(), errors).forEach(rows::add);
      }
    }
    return rows;
  }

  private static void assertOncePerRequestWithTheLedgerOnly(
      List<JsonNode> rows, java.util.Collection<String> runtimes) throws java.io.IOException {
    String table = EvalTable.markdown(rows);
    System.out.println(table);
    String report = System.getProperty("effectledger.eval.report");
    if (report != null) {
      java.nio.file.Files.writeString(
          java.nio.file.Path.of(report),
          table + "\n",
          java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.APPEND);
    }
    for (JsonNode row : rows) {
      String what = row.get("runtime").asText() + " " + row.get("scenario").asText();
      if (row.get("mode").asText().equals("ledger")) {
        assertThat(row.get("errors")).as("%s: agent runs that failed", what).isEmpty();
        assertThat(row.get("once").asInt())
            .as("%s: requests paid exactly once, of %s", what, row)
            .isEqualTo(row.get("requests").asInt());
      }
    }
    assertThat(rows.stream().map(r -> r.get("runtime").asText()).distinct())
        .containsExactlyInAnyOrderElementsOf(runtimes);
    for (JsonNode row : rows) {
      if (row.get("mode").asText().equals("direct")) {
        assertThat(row.get("more").asInt())
            .as(
                "%s %s without the ledger: requests paid more than once",
                row.get("runtime").asText(), row.get("scenario").asText())
            .isPositive();
      }
    }
  }
}
