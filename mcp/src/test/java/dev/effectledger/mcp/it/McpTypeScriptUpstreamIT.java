package dev.effectledger.mcp.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.mcp.gateway.McpGatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.testkit.ClientSuites;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.modelcontextprotocol.client.McpAsyncClient;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.ProgressNotification;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.Mono;

/**
 * The MCP gateway in front of an MCP server written with another SDK than its own: the official
 * TypeScript SDK's {@code McpServer} over stdio (clients/typescript/test-mcp/upstream-server.ts),
 * with the ledger and an executor whose {@code mcp} connector performs the server's write tool (a
 * process of the server of its own). An agent on the MCP Java SDK's client sees through the gateway
 * what it sees talking to the server directly (another process of it): the same tools,
 * instructions, read results and progress, resource and prompt; and the write tool, called again
 * and again in one run, takes effect once, counted in the file the server appends each effect to.
 */
@Tag("integration")
@Timeout(180)
class McpTypeScriptUpstreamIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** How many progress notifications the server's get_quote sends when asked (PROGRESS_STEPS). */
  private static final int PROGRESS_STEPS = 5;

  private static final String EFFECTS_ENV = "EFFECTLEDGER_TS_UPSTREAM_EFFECTS";

  private static Path dir;
  private static Path effects; // what the executor's process of the server appends to
  private static Path directEffects; // what the test's own process of it appends to
  private static List<String> server;
  private static SchemaRegistryServer registry;
  private static KafkaStreams ledger;
  private static Map<String, Connector> connectors;
  private static EffectExecutor executor;
  private static McpGateway gateway;
  private static Agent direct;
  private static Agent through;

  /**
   * An agent's async session with an MCP server, the progress it was sent, by token, and what the
   * server asked it (it samples, elicits and has a root, answering each alike).
   */
  private record Agent(
      McpAsyncClient client, Map<String, List<ProgressNotification>> progress, List<String> asked) {

    static Agent open(McpClientTransport transport) {
      Map<String, List<ProgressNotification>> progress = new ConcurrentHashMap<>();
      List<String> asked = new CopyOnWriteArrayList<>();
      // a consumer that does not switch threads: the async client runs it on the thread reading
      // the transport, in turn with results (the sync client would hand it to another thread)
      McpAsyncClient client =
          McpClient.async(transport)
              .requestTimeout(WAIT)
              .initializationTimeout(WAIT)
              .progressConsumer(
                  n ->
                      Mono.fromRunnable(
                          () ->
                              progress
                                  .computeIfAbsent(
                                      n.progressToken().toString(),
                                      t -> new CopyOnWriteArrayList<>())
                                  .add(n)))
              .capabilities(
                  McpSchema.ClientCapabilities.builder()
                      .sampling()
                      .elicitation()
                      .roots(true)
                      .build())
              .roots(new McpSchema.Root("file:///shop/orders", "orders"))
              .sampling(
                  request -> {
                    asked.add(
                        "sampling: "
                            + ((McpSchema.TextContent) request.messages().get(0).content()).text());
                    return Mono.just(
                        McpSchema.CreateMessageResult.builder()
                            .role(McpSchema.Role.ASSISTANT)
                            .content(new McpSchema.TextContent("twelve"))
                            .model("test-model")
                            .build());
                  })
              .elicitation(
                  request -> {
                    asked.add("elicitation: " + request.message());
                    return Mono.just(
                        new McpSchema.ElicitResult(
                            McpSchema.ElicitResult.Action.ACCEPT, Map.of("ok", true)));
                  })
              .build();
      Agent agent = new Agent(client, progress, asked);
      agent.await(client.initialize(), "initialize");
      return agent;
    }

    List<ProgressNotification> progressOf(String token) {
      return List.copyOf(progress.getOrDefault(token, List.of()));
    }

    /** {@code request}'s answer, or an error naming {@code what} was not answered, and why. */
    <T> T await(Mono<T> request, String what) {
      T answer =
          request
              .timeout(WAIT)
              .onErrorMap(e -> new AssertionError(what + ": no answer within " + WAIT, e))
              .block(WAIT.plusSeconds(5));
      assertThat(answer).as(what + ": an answer").isNotNull();
      return answer;
    }

    void close() {
      client.closeGracefully().block(Duration.ofSeconds(10));
    }
  }

  @BeforeAll
  static void start() throws Exception {
    // npm ci and the build, when the client's sources changed since the last: the server is built
    // into dist/test-mcp/ with the rest
    ClientSuites.Run built = ClientSuites.build();
    assertThat(built.exit())
        .as("the TypeScript client's install and build\n" + built.output())
        .isZero();
    Path script =
        ClientSuites.TYPESCRIPT
            .resolve(Path.of("dist", "test-mcp", "upstream-server.js"))
            .toAbsolutePath()
            .normalize();
    assertThat(script).as("the built TypeScript upstream").isRegularFile();
    server = List.of("node", script.toString());
    dir = Files.createTempDirectory("mcp-ts-upstream");
    effects = dir.resolve("effects.txt");
    directEffects = dir.resolve("direct-effects.txt");

    // the ledger, and an executor whose mcp connector performs record_payment on its own process
    registry = SchemaRegistryServer.start();
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse(
                """
                tools:
                  record_payment:
                    class: write-non-idempotent
                    pendingTimeout: 10m
                    onAmbiguous: hold
                    lane: mcp
                    connector: mcp
                    settings: {command: %s, env: {%s: %s}, timeout: 20s}
                """
                    .formatted(
                        JSON.writeValueAsString(server),
                        EFFECTS_ENV,
                        JSON.writeValueAsString(effects.toString())),
                "ts-upstream.yaml");
    McpPipeline.createTopics(kafka.bootstrapServers(), policies);
    Properties streams = new Properties();
    streams.put(StreamsConfig.APPLICATION_ID_CONFIG, "mcp-ts-upstream-it");
    streams.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    streams.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("streams").toString());
    ledger =
        LedgerTopology.streams(
            LedgerConfig.of(policies, registry.url()).withIntentPartitions(2), streams);
    ledger.start();
    Properties executorKafka = new Properties();
    executorKafka.put("bootstrap.servers", kafka.bootstrapServers());
    connectors = McpConnectors.all().create(policies, List.of("mcp"), Clock.systemUTC());
    executor =
        EffectExecutor.start(
            ExecutorConfig.of(executorKafka, List.of("mcp"), registry.url()), connectors, policies);

    // the gateway, the server its one upstream over stdio (a process of its own)
    gateway =
        McpGateway.startHttp(
            McpGatewayConfig.parse(
                JSON.valueToTree(
                    Map.of(
                        "listen", Map.of("host", "127.0.0.1", "port", 0),
                        "tenant", "acme",
                        "run", Map.of("header", "X-Agent-Run"),
                        "wait", "30s",
                        "kafka", Map.of("bootstrap.servers", kafka.bootstrapServers()),
                        "schemaRegistryUrl", registry.url(),
                        "upstreams",
                            Map.of(
                                "shop",
                                Map.of(
                                    "command",
                                    server,
                                    "env",
                                    Map.of(EFFECTS_ENV, effects.toString()),
                                    "timeout",
                                    "20s")))),
                dir),
            policies);

    // the same agent twice: talking to the server directly (another process of it), and through
    // the gateway
    direct =
        Agent.open(
            new StdioClientTransport(
                ServerParameters.builder(server.get(0))
                    .args(server.subList(1, server.size()))
                    .env(Map.of(EFFECTS_ENV, directEffects.toString()))
                    .build(),
                new JacksonMcpJsonMapper(JSON)));
    URI url = URI.create(gateway.url());
    through =
        Agent.open(
            HttpClientStreamableHttpTransport.builder(url.getScheme() + "://" + url.getAuthority())
                .endpoint(url.getPath())
                .jsonMapper(new JacksonMcpJsonMapper(JSON))
                .build());
  }

  @AfterAll
  static void stop() throws Exception {
    // each closes what it started: the test's server process, the gateway's, the executor's
    for (AutoCloseable part :
        new AutoCloseable[] {
          () -> {
            if (direct != null) direct.close();
          },
          () -> {
            if (through != null) through.close();
          },
          () -> {
            if (gateway != null) gateway.close();
          },
          () -> {
            if (executor != null) executor.close();
          },
          () -> {
            if (connectors != null) connectors.values().forEach(Connector::close);
          },
          () -> {
            if (ledger != null) ledger.close(Duration.ofSeconds(30));
          },
          () -> {
            if (registry != null) registry.close();
          }
        }) {
      part.close();
    }
    if (dir != null) {
      Utils.delete(dir.toFile());
    }
  }

  @Test
  void shouldListTheServersToolsAsTheServerListsThem() {
    List<McpSchema.Tool> directly =
        direct.await(direct.client().listTools(), "tools/list, directly").tools();
    List<McpSchema.Tool> gatewayed =
        through.await(through.client().listTools(), "tools/list, through the gateway").tools();

    assertThat(directly)
        .extracting(McpSchema.Tool::name)
        .containsExactlyInAnyOrder("get_quote", "ask_agent", "count_slowly", "record_payment");
    // every field the Java SDK reads: name, title, description, input and output schemas,
    // annotations, _meta, icons
    assertThat(gatewayed).containsExactlyInAnyOrderElementsOf(directly);
    McpSchema.Tool record =
        gatewayed.stream().filter(t -> t.name().equals("record_payment")).findFirst().orElseThrow();
    assertThat(record.annotations().destructiveHint()).isTrue();
    assertThat(record.annotations().idempotentHint()).isFalse();
  }

  @Test
  void shouldPassTheServersInstructionsOn() {
    assertThat(direct.client().getServerInstructions()).startsWith("Quotes and payments");
    assertThat(through.client().getServerInstructions())
        .isEqualTo(direct.client().getServerInstructions());
  }

  @Test
  void shouldAnswerAReadCallAndItsProgressAsTheServerDoes() {
    CallToolRequest plain =
        new CallToolRequest("get_quote", Map.of("sku", "mug-blue", "quantity", 3));
    CallToolResult directly = direct.await(direct.client().callTool(plain), "get_quote, directly");
    CallToolResult gatewayed =
        through.await(through.client().callTool(plain), "get_quote, through the gateway");

    assertThat(directly.isError()).as(String.valueOf(directly)).isNotEqualTo(true);
    assertThat(JSON.valueToTree(directly.structuredContent()).path("quantity").asInt())
        .isEqualTo(3);
    assertThat(gatewayed).isEqualTo(directly); // content, structured content, isError, _meta

    // asked for progress: every notification, in the server's order, before the result
    String token = "quote-progress-1";
    CallToolRequest withProgress =
        CallToolRequest.builder()
            .name("get_quote")
            .arguments(Map.of("sku", "mug-red", "quantity", 2))
            .progressToken(token)
            .build();
    List<List<ProgressNotification>> atResult = new CopyOnWriteArrayList<>();
    List<CallToolResult> results = new ArrayList<>();
    for (Agent agent : List.of(direct, through)) {
      // on the thread reading the result, right as it came
      results.add(
          agent.await(
              agent
                  .client()
                  .callTool(withProgress)
                  .doOnNext(result -> atResult.add(agent.progressOf(token))),
              "get_quote with a progress token, " + (agent == direct ? "directly" : "through")));
    }

    List<ProgressNotification> expected = new ArrayList<>();
    for (int step = 1; step <= PROGRESS_STEPS; step++) {
      expected.add(
          new ProgressNotification(
              token,
              (double) step,
              (double) PROGRESS_STEPS,
              "priced " + step + " of " + PROGRESS_STEPS,
              null));
    }
    assertThat(atResult.get(0)).as("the progress directly, before the result").isEqualTo(expected);
    assertThat(atResult.get(1))
        .as("the progress through the gateway, before the result")
        .isEqualTo(expected);
    assertThat(results.get(1)).isEqualTo(results.get(0));
    // none after the result: a round trip later, nothing more came
    through.await(through.client().ping(), "ping, through the gateway");
    assertThat(through.progressOf(token))
        .as("the progress through the gateway, in all")
        .isEqualTo(expected);
  }

  @Test
  void shouldRelayTheServersRequestsDuringACallToTheAgentAsTheServerAsksThem() {
    CallToolRequest ask = new CallToolRequest("ask_agent", Map.of("question", "how many?"));
    CallToolResult directly = direct.await(direct.client().callTool(ask), "ask_agent, directly");
    CallToolResult gatewayed =
        through.await(through.client().callTool(ask), "ask_agent, through the gateway");

    assertThat(directly.isError()).as(String.valueOf(directly)).isNotEqualTo(true);
    assertThat(((McpSchema.TextContent) directly.content().get(0)).text())
        .isEqualTo(
            "model test-model: twelve; user: accept {\"ok\":true}; roots: file:///shop/orders");
    assertThat(gatewayed).isEqualTo(directly);
    assertThat(through.asked()).isEqualTo(direct.asked());
    assertThat(direct.asked())
        .containsExactly("sampling: how many?", "elicitation: confirm: how many?");
  }

  @Test
  void shouldServeTheOfficialTypeScriptSdksClientTheServersRequestsAndTasks() throws Exception {
    ClientSuites.Run suite =
        ClientSuites.npm("test:mcp-requests:dist", Map.of("EFFECTLEDGER_MCP_URL", gateway.url()));

    // its requests answered during a call; read calls as tasks (plain and asking); an asking task
    // input_required, named in its requests, cancelled with the session whole
    assertThat(suite.exit()).as(suite.output()).isZero();
    assertThat(suite.output()).contains("# pass 3").contains("# fail 0");
  }

  @Test
  void shouldCallAToolTheServerRunsOnlyAsATaskAsOne() {
    CallToolRequest count = new CallToolRequest("count_slowly", Map.of("to", 3));

    // the Java SDK's client cannot call it as a task: directly, the server refuses the call
    assertThat(
            direct
                .client()
                .callTool(count)
                .map(r -> Boolean.TRUE.equals(r.isError()) ? "tool error" : "answered")
                .onErrorReturn("refused")
                .block(WAIT))
        .isNotEqualTo("answered");
    // through the gateway, which calls it as a task and waits for its result
    CallToolResult counted =
        through.await(through.client().callTool(count), "count_slowly, through the gateway");
    assertThat(counted.isError()).as(String.valueOf(counted)).isNotEqualTo(true);
    assertThat(((McpSchema.TextContent) counted.content().get(0)).text()).isEqualTo("counted to 3");
  }

  @Test
  void shouldServeTheServersResourceAndPromptAsTheServerDoes() {
    McpSchema.ListResourcesResult resources =
        direct.await(direct.client().listResources(), "resources/list, directly");
    McpSchema.ReadResourceRequest read = new McpSchema.ReadResourceRequest("shop://price-list");
    McpSchema.ReadResourceResult priceList =
        direct.await(direct.client().readResource(read), "resources/read, directly");
    McpSchema.ListPromptsResult prompts =
        direct.await(direct.client().listPrompts(), "prompts/list, directly");
    McpSchema.GetPromptRequest get =
        new McpSchema.GetPromptRequest(
            "dunning_letter", Map.of("customer", "cus_ts", "amountCents", "1200"));
    McpSchema.GetPromptResult letter =
        direct.await(direct.client().getPrompt(get), "prompts/get, directly");

    assertThat(resources.resources())
        .extracting(McpSchema.Resource::uri)
        .containsExactly("shop://price-list");
    assertThat(prompts.prompts())
        .extracting(McpSchema.Prompt::name)
        .containsExactly("dunning_letter");
    assertThat(
            through
                .await(through.client().listResources(), "resources/list, through the gateway")
                .resources())
        .isEqualTo(resources.resources());
    assertThat(through.await(through.client().readResource(read), "resources/read, through"))
        .isEqualTo(priceList);
    assertThat(
            through
                .await(through.client().listPrompts(), "prompts/list, through the gateway")
                .prompts())
        .isEqualTo(prompts.prompts());
    assertThat(through.await(through.client().getPrompt(get), "prompts/get, through the gateway"))
        .isEqualTo(letter);
  }

  @Test
  void shouldTakeTheWriteToolsEffectOncePerRun() throws Exception {
    String run = "run-mcp-ts-upstream";
    Map<String, Object> arguments = Map.of("customer", "cus_ts", "amountCents", 4200);
    CallToolRequest pay = new CallToolRequest("record_payment", arguments);
    String key =
        IdempotencyKeys.derive(
                new StepContext("acme", run, "mcp:record_payment", ""),
                "record_payment",
                JSON.writeValueAsString(arguments),
                KeyRules.NONE)
            .key();
    // the server's own answer to a first payment: the test's process of it, its own file
    CallToolResult directly =
        direct.await(direct.client().callTool(pay), "record_payment, directly");
    assertThat(directly.isError()).as(String.valueOf(directly)).isNotEqualTo(true);

    List<CallToolResult> answers = new ArrayList<>();
    try (McpSyncClient agent =
        McpHttpClients.open(gateway.url(), Map.of("X-Agent-Run", run), WAIT)) {
      for (int call = 0; call < 3; call++) { // the model emitting the same call again
        answers.add(agent.callTool(pay));
      }
    }
    try (McpSyncClient reconnected =
        McpHttpClients.open(gateway.url(), Map.of("X-Agent-Run", run), WAIT)) {
      answers.add(reconnected.callTool(pay));
    }

    CallToolResult first = answers.get(0);
    assertThat(first.isError()).as(String.valueOf(first)).isFalse();
    assertThat(first.content()).isEqualTo(directly.content()); // the server's answer, as it gave it
    assertThat(first.structuredContent()).isEqualTo(directly.structuredContent());
    assertThat(first.meta())
        .containsEntry(McpMeta.REPLAYED, false)
        .containsEntry(McpMeta.IDEMPOTENCY_KEY, key);
    for (CallToolResult again : answers.subList(1, answers.size())) {
      assertThat(again.isError()).as(String.valueOf(again)).isFalse();
      assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
      assertThat(again.content()).isEqualTo(first.content());
      assertThat(again.structuredContent()).isEqualTo(first.structuredContent());
    }
    // one effect, made with the key: one line in the file of the executor's process of the server
    assertThat(Files.readAllLines(effects)).containsExactly(key + "\tcus_ts\t4200");
    assertThat(Files.readAllLines(directEffects)).containsExactly("-\tcus_ts\t4200");
    // and none later: an executor re-dispatching it would have appended by now
    await("a second effect of " + key + " in " + effects + " (none expected)")
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(5))
        .until(() -> Files.readAllLines(effects).size() == 1);
  }
}
