package dev.effectledger.mcp.it;

import static dev.effectledger.mcp.it.McpPipeline.charge;
import static dev.effectledger.mcp.it.McpPipeline.key;
import static dev.effectledger.mcp.it.McpPipeline.structured;
import static dev.effectledger.mcp.it.McpPipeline.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.mcp.gateway.McpGatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.testkit.ClientSuites;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import io.modelcontextprotocol.client.McpAsyncClient;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * An MCP client (the SDK's, over Streamable HTTP) calling the counting MCP server's tools through
 * the MCP gateway, with the ledger and an executor's {@code mcp} connector behind it: re-emitted
 * calls, new sessions and restarted orchestrators take effect once per run.
 */
@Tag("integration")
@Timeout(300)
class McpGatewayIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  private static McpPipeline pipeline;
  private static McpGateway gateway;
  private final List<McpSyncClient> clients = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    pipeline = new McpPipeline(kafka.bootstrapServers(), "mcp-gateway-it");
    gateway = McpGateway.startHttp(pipeline.gatewayConfig(""), pipeline.policies);
  }

  @AfterAll
  static void stop() {
    gateway.close();
    pipeline.close();
  }

  @AfterEach
  void closeClients() {
    clients.forEach(McpSyncClient::close);
  }

  /** A new MCP session with the gateway, sending {@code run} in the run header (null: none). */
  private McpSyncClient agent(String url, String run) {
    McpSyncClient client =
        McpHttpClients.open(
            url, run == null ? Map.of() : Map.of("X-Agent-Run", run), Duration.ofSeconds(60));
    clients.add(client);
    return client;
  }

  @Test
  void shouldPassTheUpstreamsInstructionsOnAsTheyAre() {
    assertThat(agent(gateway.url(), null).getServerInstructions())
        .isEqualTo(CountingMcpServer.INSTRUCTIONS);
  }

  @Test
  void shouldListTheUpstreamsToolsWithTheirSchemasAndAnnotations() {
    List<Tool> tools = agent(gateway.url(), null).listTools().tools();

    Map<String, Tool> byName = tools.stream().collect(Collectors.toMap(Tool::name, t -> t));
    assertThat(byName).containsOnlyKeys("create_charge", "find_charge", "get_balance");
    assertThat(byName.get("create_charge").annotations().destructiveHint()).isTrue();
    assertThat(byName.get("find_charge").annotations().readOnlyHint()).isTrue();
    assertThat(byName.get("create_charge").inputSchema()).containsKey("properties");
  }

  @Test
  void shouldTakeEffectOncePerRunAcrossReEmittedCallsNewSessionsAndRestartedOrchestrators()
      throws Exception {
    String run = "run-mcp-gw-1";
    String key = key(run, "mcp:create_charge", Map.of("amount", 700, "to", "cus_7"));

    CallToolResult first = charge(agent(gateway.url(), run), 700, "cus_7");
    CallToolResult reEmitted = charge(clients.get(0), 700, "cus_7"); // the model again
    CallToolResult reconnected = charge(agent(gateway.url(), run), 700, "cus_7"); // new session
    // a restarted orchestrator sending the run in _meta instead of the header
    CallToolResult replayed =
        charge(
            agent(gateway.url(), null),
            Map.of("to", "cus_7", "amount", 700),
            Map.of(McpMeta.RUN_ID, run));
    CallToolResult otherRun = charge(agent(gateway.url(), "run-mcp-gw-2"), 700, "cus_7");

    assertThat(first.isError()).as(text(first)).isFalse();
    assertThat(first.meta())
        .containsEntry(McpMeta.REPLAYED, false)
        .containsEntry(McpMeta.IDEMPOTENCY_KEY, key);
    String id = structured(first).path("id").asText();
    assertThat(first.meta()).as("the effect id in _meta").containsEntry(McpMeta.EFFECT_ID, id);
    assertThat(text(first)).isEqualTo("charged 700 to cus_7");
    for (CallToolResult again : List.of(reEmitted, reconnected, replayed)) {
      assertThat(again.isError()).as(text(again)).isFalse();
      assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
      assertThat(structured(again).path("id").asText()).isEqualTo(id); // the stored result
      assertThat(text(again)).isEqualTo("charged 700 to cus_7");
    }
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
    assertThat(otherRun.isError()).isFalse();
    assertThat(structured(otherRun).path("id").asText()).isNotEqualTo(id);
    assertThat(
            pipeline.upstream.effects(
                key("run-mcp-gw-2", "mcp:create_charge", Map.of("amount", 700, "to", "cus_7"))))
        .isEqualTo(1);
  }

  /**
   * Six agents send the same write at once: one effect, and exactly one of the six answers says it
   * was not a replay (the call whose intent started the action); the five that joined it in flight,
   * or came after it, say replayed.
   */
  @Test
  void shouldMarkEveryCallButTheEffectsOwnAsReplayedWhenSixComeAtOnce() throws Exception {
    String run = "run-mcp-gw-six";
    String key = key(run, "mcp:create_charge", Map.of("amount", 606, "to", "cus_6"));
    List<McpSyncClient> agents = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      agents.add(agent(gateway.url(), run));
    }

    List<java.util.concurrent.CompletableFuture<CallToolResult>> calls =
        agents.stream()
            .map(
                a ->
                    java.util.concurrent.CompletableFuture.supplyAsync(
                        () -> charge(a, 606, "cus_6")))
            .toList();
    List<CallToolResult> answers = calls.stream().map(c -> c.join()).toList();

    assertThat(answers).allSatisfy(r -> assertThat(r.isError()).as(text(r)).isFalse());
    assertThat(answers.stream().map(r -> structured(r).path("id").asText()).distinct())
        .as("one effect id for all six")
        .hasSize(1);
    assertThat(answers.stream().map(r -> r.meta().get(McpMeta.REPLAYED)).toList())
        .as("replayed of the six calls sent at once")
        .containsExactlyInAnyOrder(false, true, true, true, true, true);
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldCarryTheTraceparentOfTheCallsMetaOnItsIntent() throws Exception {
    // tracing off (no SDK in this JVM): the caller's trace context still goes on as it came
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    try (TopicCollector<byte[]> intents =
        new TopicCollector<>(
            kafka.bootstrapServers(),
            dev.effectledger.schema.Topics.INTENTS,
            new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      CallToolResult charged =
          charge(
              agent(gateway.url(), null),
              Map.of("amount", 17, "to", "cus_17"),
              Map.of(McpMeta.IDEMPOTENCY_KEY, "order-17-traced", "traceparent", traceparent));
      assertThat(charged.isError()).as(text(charged)).isFalse();
      await("the call's intent")
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(intents.records)
                      .filteredOn(r -> "order-17-traced".equals(r.key()))
                      .isNotEmpty()
                      .allSatisfy(
                          r ->
                              assertThat(
                                      new String(
                                          r.headers().lastHeader("traceparent").value(),
                                          java.nio.charset.StandardCharsets.UTF_8))
                                  .isEqualTo(traceparent)));
    }
  }

  @Test
  void shouldTreatAnExplicitStepAsTheActionAndRefuseItsKeyWithOtherArguments() throws Exception {
    McpSyncClient agent = agent(gateway.url(), null);
    Map<String, Object> step =
        Map.of(McpMeta.RUN_ID, "run-mcp-gw-3", McpMeta.STEP_ID, "pay-invoice-9");
    Map<String, Object> own = new HashMap<>(step);
    own.put(McpMeta.IDEMPOTENCY_KEY, "order-9-charge");

    CallToolResult stepped = charge(agent, Map.of("amount", 90, "to", "cus_9"), step);
    CallToolResult withKey = charge(agent, Map.of("amount", 91, "to", "cus_9"), own);
    CallToolResult reused = charge(agent, Map.of("amount", 92, "to", "cus_9"), own);

    assertThat(stepped.isError()).as(text(stepped)).isFalse();
    assertThat(
            pipeline.upstream.effects(
                key("run-mcp-gw-3", "pay-invoice-9", Map.of("amount", 90, "to", "cus_9"))))
        .isEqualTo(1);
    assertThat(withKey.isError()).as(text(withKey)).isFalse();
    assertThat(pipeline.upstream.effects("order-9-charge")).isEqualTo(1);
    assertThat(reused.isError()).isTrue();
    assertThat(structured(reused).path("code").asText()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(structured(reused).path("idempotencyKey").asText()).isEqualTo("order-9-charge");
    assertThat(pipeline.upstream.effects("order-9-charge")).isEqualTo(1);
  }

  @Test
  void shouldTakeAnExplicitKeyWithoutARun() {
    McpSyncClient agent = agent(gateway.url(), null);
    Map<String, Object> own = Map.of(McpMeta.IDEMPOTENCY_KEY, "order-12-charge");

    CallToolResult first = charge(agent, Map.of("amount", 12, "to", "cus_12"), own);
    CallToolResult again = charge(agent, Map.of("amount", 12, "to", "cus_12"), own);

    assertThat(first.isError()).as(text(first)).isFalse();
    assertThat(again.isError()).as(text(again)).isFalse();
    assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
    assertThat(pipeline.upstream.effects("order-12-charge")).isEqualTo(1);
  }

  @Test
  void shouldRefuseAWriteCallWithoutARunAndPassAReadCallStraightThrough() {
    McpSyncClient agent = agent(gateway.url(), null);
    int before = pipeline.upstream.effectCount();

    CallToolResult refused = charge(agent, 5, "cus_5");
    CallToolResult balance = agent.callTool(new CallToolRequest("get_balance", Map.of()));

    assertThat(refused.isError()).isTrue();
    assertThat(structured(refused).path("code").asText()).isEqualTo("RUN_ID_REQUIRED");
    assertThat(structured(refused).path("correctiveAction").asText()).contains("X-Agent-Run");
    assertThat(balance.isError()).isFalse();
    assertThat(balance.meta()).isNull(); // the upstream's own answer, not the ledger's
    assertThat(structured(balance).has("balance")).isTrue();
    assertThat(pipeline.upstream.effectCount()).isEqualTo(before);
  }

  @Test
  void shouldAnswerAHeldEffectAsAToolErrorNamingWhatToDo() throws Exception {
    String run = "run-mcp-gw-held";
    String key = key(run, "mcp:create_charge", Map.of("amount", 44, "to", "cus_44"));
    pipeline.upstream.inject(key, Fault.DROP_AFTER);

    CallToolResult held = charge(agent(gateway.url(), run), 44, "cus_44");

    assertThat(held.isError()).isTrue();
    assertThat(structured(held).path("code").asText()).isEqualTo("EFFECT_HELD");
    assertThat(structured(held).path("correctiveAction").asText()).contains("same arguments");
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldServeTheOfficialTypeScriptSdksClient() throws Exception {
    String run = "run-mcp-gw-ts";

    ClientSuites.Run suite =
        ClientSuites.npm(
            "test:mcp:dist",
            Map.of("EFFECTLEDGER_MCP_URL", gateway.url(), "EFFECTLEDGER_MCP_RUN", run));

    assertThat(suite.exit()).as(suite.output()).isZero();
    assertThat(suite.output()).contains("# pass 1").contains("# fail 0");
    String key = key(run, "mcp:create_charge", Map.of("amount", 321, "to", "cus_ts"));
    assertThat(suite.output()).contains("# key " + key);
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldAnswerACallOfAToolItDoesNotServeNamingTheTool() {
    McpSyncClient agent = agent(gateway.url(), null);

    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> agent.callTool(new CallToolRequest("no_such_tool", Map.of())))
        .hasMessageContaining("Unknown tool: no_such_tool");
    assertThat(agent.callTool(new CallToolRequest("get_balance", Map.of())).isError())
        .as("a tool it serves, on the same session")
        .isFalse();
  }

  /** A raw Streamable HTTP session with the gateway: what tasks need that the Java SDK lacks. */
  private static final class RawSession {
    private final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
    private final String url;
    private final String run;
    final String id;
    final JsonNode initialized;

    RawSession(String url, String run) throws Exception {
      this.url = url;
      this.run = run;
      java.net.http.HttpResponse<String> answer =
          send(
              null,
              "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                  + "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                  + "\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}");
      id = answer.headers().firstValue("Mcp-Session-Id").orElseThrow();
      initialized = body(answer.body());
      send(id, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    }

    /** The answer to request {@code method} with {@code params} (JSON or one server event). */
    JsonNode request(int requestId, String method, String params) throws Exception {
      return body(
          send(
                  id,
                  "{\"jsonrpc\":\"2.0\",\"id\":"
                      + requestId
                      + ",\"method\":\""
                      + method
                      + "\",\"params\":"
                      + params
                      + "}")
              .body());
    }

    private java.net.http.HttpResponse<String> send(String session, String body) throws Exception {
      java.net.http.HttpRequest.Builder request =
          java.net.http.HttpRequest.newBuilder(URI.create(url))
              .header("Content-Type", "application/json")
              .header("Accept", "application/json, text/event-stream")
              .header("X-Agent-Run", run)
              .timeout(Duration.ofSeconds(60))
              .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
      if (session != null) {
        request.header("Mcp-Session-Id", session);
      }
      return http.send(request.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    }

    /** A JSON body, or the last data line of a server event stream. */
    private static JsonNode body(String body) throws Exception {
      if (body.startsWith("{")) {
        return JSON.readTree(body);
      }
      String data = null;
      for (String line : body.split("\n")) {
        if (line.startsWith("data:")) {
          data = line.substring(5).trim();
        }
      }
      return JSON.readTree(data);
    }
  }

  /**
   * Tasks (MCP 2025-11-25), which the MCP Java SDK has none of: the gateway declares them, lists
   * every tool as taskable, and runs a write as a task that ends with the ledger's answer; the
   * agent polls it, lists it, cannot cancel it once done, and no other agent sees it.
   */
  @Test
  void shouldRunAWriteAsATaskThatEndsWithTheLedgersAnswer() throws Exception {
    String run = "run-mcp-task";
    RawSession raw = new RawSession(gateway.url(), run);
    assertThat(raw.initialized.at("/result/capabilities/tasks/requests/tools/call").isObject())
        .as(raw.initialized.toString())
        .isTrue();
    assertThat(raw.request(1, "tools/list", "{}").at("/result/tools"))
        .isNotEmpty()
        .allSatisfy(
            tool ->
                assertThat(tool.at("/execution/taskSupport").asText())
                    .as(tool.toString())
                    .isEqualTo("optional"));

    JsonNode created =
        raw.request(
            2,
            "tools/call",
            "{\"name\":\"create_charge\",\"arguments\":{\"amount\":41,\"to\":\"cus_41\"},"
                + "\"task\":{\"ttl\":60000}}");
    String taskId = created.at("/result/task/taskId").asText();
    assertThat(taskId).as(created.toString()).isNotBlank();
    assertThat(created.at("/result/task/status").asText()).isEqualTo("working");
    assertThat(created.at("/result/task/ttl").asLong()).isEqualTo(60000);

    JsonNode result = raw.request(3, "tasks/result", "{\"taskId\":\"" + taskId + "\"}");
    assertThat(result.at("/result/isError").asBoolean()).as(result.toString()).isFalse();
    assertThat(result.at("/result/structuredContent/amount").asInt()).isEqualTo(41);
    assertThat(result.at("/result/_meta/effectledger.dev~1replayed").asBoolean()).isFalse();
    assertThat(result.at("/result/_meta/io.modelcontextprotocol~1related-task/taskId").asText())
        .isEqualTo(taskId);
    assertThat(
            raw.request(4, "tasks/get", "{\"taskId\":\"" + taskId + "\"}")
                .at("/result/status")
                .asText())
        .isEqualTo("completed");
    assertThat(raw.request(5, "tasks/list", "{}").at("/result/tasks"))
        .extracting(t -> t.path("taskId").asText())
        .containsExactly(taskId);
    assertThat(
            raw.request(6, "tasks/cancel", "{\"taskId\":\"" + taskId + "\"}")
                .at("/error/message")
                .asText())
        .contains("already completed");
    assertThat(
            new RawSession(gateway.url(), run)
                .request(1, "tasks/get", "{\"taskId\":\"" + taskId + "\"}")
                .at("/error/message")
                .asText())
        .as("another agent's task")
        .startsWith("Failed to retrieve task: Task not found");

    // a write the upstream refuses: the task fails, and its result is the tool's error
    String refusedTask =
        raw.request(
                7,
                "tools/call",
                "{\"name\":\"create_charge\",\"arguments\":{\"amount\":42,\"to\":\"cus_42\","
                    + "\"fault\":\"ERROR_BEFORE\"},\"task\":{}}")
            .at("/result/task/taskId")
            .asText();
    JsonNode refused = raw.request(8, "tasks/result", "{\"taskId\":\"" + refusedTask + "\"}");
    assertThat(refused.at("/result/isError").asBoolean()).as(refused.toString()).isTrue();
    assertThat(refused.at("/result/structuredContent/code").asText()).isEqualTo("EFFECT_FAILED");
    JsonNode failed = raw.request(9, "tasks/get", "{\"taskId\":\"" + refusedTask + "\"}");
    assertThat(failed.at("/result/status").asText()).isEqualTo("failed");
    assertThat(failed.at("/result/ttl").asLong()).as("no ttl asked: an hour").isEqualTo(3_600_000);

    // the same call, without a task: the task's effect, replayed
    CallToolResult again = charge(agent(gateway.url(), run), 41, "cus_41");
    assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
    String key = key(run, "mcp:create_charge", Map.of("amount", 41, "to", "cus_41"));
    assertThat(again.meta()).containsEntry(McpMeta.IDEMPOTENCY_KEY, key);
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldPassResourcesAndPromptsThroughUntouched() {
    McpSyncClient agent = agent(gateway.url(), null);

    List<String> uris =
        agent.listResources().resources().stream().map(McpSchema.Resource::uri).toList();
    McpSchema.ReadResourceResult summary =
        agent.readResource(new McpSchema.ReadResourceRequest(CountingMcpServer.SUMMARY));
    List<String> prompts =
        agent.listPrompts().prompts().stream().map(McpSchema.Prompt::name).toList();
    McpSchema.GetPromptResult prompt =
        agent.getPrompt(
            new McpSchema.GetPromptRequest("refund_policy", Map.of("customer", "cus_1")));

    assertThat(uris).containsExactly(CountingMcpServer.SUMMARY);
    assertThat(((McpSchema.TextResourceContents) summary.contents().get(0)).text())
        .startsWith("{\"charges\":");
    assertThat(prompts).containsExactly("refund_policy");
    assertThat(((TextContent) prompt.messages().get(0).content()).text())
        .isEqualTo("Refund cus_1 within 30 days.");
  }

  /** How many concurrent calls, each reporting how many steps, for how many rounds. */
  private static final int CALLS = 12;

  private static final int STEPS = 5;
  private static final int ROUNDS = 4;

  /**
   * An agent's view of its calls' progress: what it received under each of its tokens, in the order
   * it received it, and what it had received when each call's result came. The SDK's async client
   * runs a progress consumer that does not switch threads, and a call's result operators, on the
   * thread that reads the transport, in turn (its sync client would hand progress to another
   * thread): so this is what the gateway sent, in the order it sent it.
   */
  private static final class ProgressSeen {
    final Map<String, List<Double>> received = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<String, List<Double>> atResult = new java.util.concurrent.ConcurrentHashMap<>();

    McpClient.AsyncSpec consume(McpClient.AsyncSpec spec) {
      return spec.progressConsumer(
          n ->
              reactor.core.publisher.Mono.fromRunnable(
                  () ->
                      received
                          .computeIfAbsent(
                              n.progressToken().toString(), t -> new CopyOnWriteArrayList<>())
                          .add(n.progress())));
    }

    List<Double> of(String token) {
      return List.copyOf(received.getOrDefault(token, List.of()));
    }
  }

  /**
   * {@code rounds} rounds of {@link #CALLS} concurrent calls of {@code tool}, each asking for
   * {@link #STEPS} progress notifications; what each call saw that it should not have (none: all
   * its steps in order before its result, none after it).
   */
  private static List<String> progressRounds(
      McpAsyncClient agent, ProgressSeen seen, String tool, int rounds) {
    List<String> wrong = new ArrayList<>();
    List<Double> steps = new ArrayList<>();
    for (int step = 1; step <= STEPS; step++) {
      steps.add((double) step);
    }
    for (int round = 1; round <= rounds; round++) {
      List<reactor.core.publisher.Mono<String>> calls = new ArrayList<>();
      List<String> tokens = new ArrayList<>();
      for (int call = 0; call < CALLS; call++) {
        String token = tool + "-" + round + "-" + call;
        tokens.add(token);
        calls.add(
            agent
                .callTool(
                    CallToolRequest.builder()
                        .name(tool)
                        .arguments(Map.of("steps", STEPS))
                        .progressToken(token)
                        .build())
                .map(
                    result -> {
                      // on the thread reading the response, right as it came
                      seen.atResult.put(token, seen.of(token));
                      return result.isError() ? token + ": " + text(result) : "";
                    }));
      }
      List<String> errors =
          reactor.core.publisher.Flux.merge(calls).collectList().block(Duration.ofSeconds(60));
      assertThat(errors).as("the calls' results").containsOnly("");
      List<Integer> counts = new ArrayList<>();
      for (String token : tokens) {
        List<Double> before = seen.atResult.get(token);
        counts.add(before.size());
        if (!before.equals(steps)) {
          wrong.add(token + " had " + before + " when its result came");
        }
      }
      for (String token : tokens) { // one relayed after its result, by the time all are back
        if (!seen.of(token).equals(seen.atResult.get(token))) {
          wrong.add(token + " got " + seen.of(token) + " in all, after its result too");
        }
      }
      System.out.println(
          "progress through the gateway, "
              + tool
              + " round "
              + round
              + ": notifications before each result "
              + counts);
    }
    return wrong;
  }

  private static McpAsyncClient asyncAgent(String url, ProgressSeen seen) {
    URI uri = URI.create(url);
    McpAsyncClient agent =
        seen.consume(
                McpClient.async(
                    HttpClientStreamableHttpTransport.builder(
                            uri.getScheme() + "://" + uri.getAuthority())
                        .endpoint(uri.getPath())
                        .jsonMapper(new JacksonMcpJsonMapper(JSON))
                        .build()))
            .requestTimeout(Duration.ofSeconds(60))
            .build();
    agent.initialize().block(Duration.ofSeconds(60));
    return agent;
  }

  @Test
  void shouldRelayEveryProgressOfAPassThroughCallInOrderBeforeItsResult(@TempDir Path dir)
      throws Exception {
    // one upstream over Streamable HTTP (each call's notifications and result on the call's own
    // event stream), one over stdio (all of them on one stream)
    Map<String, Object> upstreams = new LinkedHashMap<>();
    upstreams.put("payments", Map.of("url", pipeline.upstream.url()));
    upstreams.put(
        "files",
        Map.of("command", McpPipeline.countingServerCommand(dir.resolve("files-effects.txt"))));
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("listen", Map.of("host", "127.0.0.1", "port", 0));
    config.put("tenant", "acme");
    config.put("kafka", Map.of("bootstrap.servers", kafka.bootstrapServers()));
    config.put("schemaRegistryUrl", pipeline.registry);
    config.put("upstreams", upstreams);
    try (McpGateway two =
        McpGateway.startHttp(
            McpGatewayConfig.parse(JSON.valueToTree(config), dir), pipeline.policies)) {
      ProgressSeen seen = new ProgressSeen();
      McpAsyncClient agent = asyncAgent(two.url(), seen);
      try {
        List<String> wrong = new ArrayList<>();
        wrong.addAll(progressRounds(agent, seen, "payments_get_balance", ROUNDS));
        wrong.addAll(progressRounds(agent, seen, "files_get_balance", ROUNDS));

        assertThat(wrong)
            .as(
                "every call's %d progress notifications, in order, under its own token, before"
                    + " its result and none after",
                STEPS)
            .isEmpty();
      } finally {
        agent.closeGracefully().block(Duration.ofSeconds(10));
      }
    }
  }

  private static List<String> names(List<Tool> tools) {
    return tools.stream().map(Tool::name).toList();
  }

  @Test
  void shouldKeepAgentsInStepWithWhatTheUpstreamsListLogAndChange() throws Exception {
    try (CountingMcpServer live = CountingMcpServer.startHttp(0)) {
      Map<String, String> upstreams = new LinkedHashMap<>();
      upstreams.put("payments", pipeline.upstream.url());
      upstreams.put("live", live.url());
      try (McpGateway two =
          McpGateway.startHttp(
              pipeline.gatewayConfig("logging: notice", upstreams), pipeline.policies)) {
        List<List<Tool>> toolLists = new CopyOnWriteArrayList<>();
        List<McpSchema.LoggingMessageNotification> logs = new CopyOnWriteArrayList<>();
        List<String> updated = new CopyOnWriteArrayList<>();
        McpSyncClient agent =
            McpHttpClients.open(
                two.url(),
                Map.of("X-Agent-Run", "run-mcp-live"),
                Duration.ofSeconds(60),
                spec ->
                    spec.toolsChangeConsumer(toolLists::add)
                        .loggingConsumer(logs::add)
                        .resourcesUpdateConsumer(read -> read.forEach(c -> updated.add(c.uri()))));
        clients.add(agent);
        assertThat(names(agent.listTools().tools()))
            .contains("payments_create_charge", "live_get_balance")
            .doesNotContain("get_refunds");

        // a tool added upstream: the agent is told, and calls it through the gateway
        live.addTool("get_refunds");
        await("a tools list_changed at the agent that lists get_refunds")
            .atMost(Duration.ofSeconds(10))
            .untilAsserted(
                () ->
                    assertThat(toolLists.stream().map(McpGatewayIT::names).toList())
                        .anySatisfy(l -> assertThat(l).contains("get_refunds")));
        CallToolResult refunds = agent.callTool(new CallToolRequest("get_refunds", Map.of()));
        assertThat(refunds.isError()).isFalse();
        assertThat(structured(refunds).path("tool").asText()).isEqualTo("get_refunds");
        // removed upstream: the agent is told, and the gateway no longer serves it
        live.removeTool("get_refunds");
        await("a tools list_changed at the agent without get_refunds")
            .atMost(Duration.ofSeconds(10))
            .untilAsserted(
                () ->
                    assertThat(names(toolLists.get(toolLists.size() - 1)))
                        .doesNotContain("get_refunds"));
        assertThat(names(agent.listTools().tools()))
            .doesNotContain("get_refunds")
            .contains("payments_create_charge", "live_get_balance"); // the others keep their names

        // an agent that asked for warnings and worse gets no notice (logging/setLevel)
        List<McpSchema.LoggingMessageNotification> quietLogs = new CopyOnWriteArrayList<>();
        McpSyncClient quiet =
            McpHttpClients.open(
                two.url(),
                Map.of("X-Agent-Run", "run-mcp-quiet"),
                Duration.ofSeconds(60),
                spec -> spec.loggingConsumer(quietLogs::add));
        clients.add(quiet);
        quiet.setLoggingLevel(McpSchema.LoggingLevel.WARNING);

        // the upstream's log messages reach the agent, the logger naming the upstream
        agent.callTool(new CallToolRequest("live_get_balance", Map.of()));
        await("the upstream's log message at the agent, its logger live/balance")
            .atMost(Duration.ofSeconds(10))
            .untilAsserted(
                () ->
                    assertThat(logs)
                        .anySatisfy(
                            m -> {
                              assertThat(m.logger()).isEqualTo("live/balance");
                              assertThat(m.level()).isEqualTo(McpSchema.LoggingLevel.NOTICE);
                              assertThat(m.data()).startsWith("balance read: ");
                            }));
        // relayed to every session in one pass, so by now the quiet agent would have it coming;
        // held over a second for its delivery
        await("no notice at the agent that set its level to warning, for 1 s")
            .during(Duration.ofSeconds(1))
            .atMost(Duration.ofSeconds(3))
            .untilAsserted(
                () -> assertThat(quietLogs).noneMatch(m -> "live/balance".equals(m.logger())));

        // a subscribed resource: the agent is told when a charge through the ledger changes it
        agent.subscribeResource(new McpSchema.SubscribeRequest(CountingMcpServer.SUMMARY));
        CallToolResult charged =
            agent.callTool(
                new CallToolRequest(
                    "payments_create_charge", Map.of("amount", 910, "to", "cus_2")));
        assertThat(charged.isError()).as(text(charged)).isFalse();
        await("resources/updated for " + CountingMcpServer.SUMMARY + " at the agent")
            .atMost(Duration.ofSeconds(10))
            .untilAsserted(() -> assertThat(updated).contains(CountingMcpServer.SUMMARY));

        // resource templates and completions pass through, a renamed prompt under its own name
        String key = charged.meta().get(McpMeta.IDEMPOTENCY_KEY).toString();
        assertThat(agent.listResourceTemplates().resourceTemplates())
            .extracting(McpSchema.ResourceTemplate::uriTemplate)
            .containsExactly(CountingMcpServer.CHARGE);
        McpSchema.ReadResourceResult charge =
            agent.readResource(new McpSchema.ReadResourceRequest("charges://charge/" + key));
        assertThat(
                JSON.readTree(((McpSchema.TextResourceContents) charge.contents().get(0)).text())
                    .path("id")
                    .asText())
            .isEqualTo(structured(charged).path("id").asText());
        McpSchema.CompleteResult keys =
            agent.completeCompletion(
                new McpSchema.CompleteRequest(
                    new McpSchema.ResourceReference(CountingMcpServer.CHARGE),
                    new McpSchema.CompleteRequest.CompleteArgument("key", key.substring(0, 12))));
        assertThat(keys.completion().values()).contains(key);
        McpSchema.CompleteResult customers =
            agent.completeCompletion(
                new McpSchema.CompleteRequest(
                    new McpSchema.PromptReference("payments_refund_policy"),
                    new McpSchema.CompleteRequest.CompleteArgument("customer", "cus_")));
        assertThat(customers.completion().values())
            .containsExactlyElementsOf(CountingMcpServer.CUSTOMERS);
      }
    }
  }

  @Test
  void shouldListAnUpstreamAgainOnItsOwnWhenTheUpstreamDoesNotNotify() throws Exception {
    try (CountingMcpServer quiet = CountingMcpServer.startHttp(0, false);
        McpGateway polling =
            McpGateway.startHttp(
                pipeline.gatewayConfig("refresh: 500ms", Map.of("quiet", quiet.url())),
                pipeline.policies)) {
      List<List<Tool>> toolLists = new CopyOnWriteArrayList<>();
      McpSyncClient agent =
          McpHttpClients.open(
              polling.url(),
              Map.of(),
              Duration.ofSeconds(60),
              s -> s.toolsChangeConsumer(toolLists::add));
      clients.add(agent);
      assertThat(names(agent.listTools().tools())).doesNotContain("get_refunds");

      quiet.addTool("get_refunds"); // the upstream tells no one

      await("a tools list_changed at the agent that lists get_refunds")
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(toolLists.stream().map(McpGatewayIT::names).toList())
                      .anySatisfy(l -> assertThat(l).contains("get_refunds")));
      assertThat(agent.callTool(new CallToolRequest("get_refunds", Map.of())).isError()).isFalse();
    }
  }

  @Test
  void shouldAnswerLedgerUnavailableWhenKafkaDoesNotAnswer() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    McpGatewayConfig config =
        McpGatewayConfig.parse(
            JSON.valueToTree(
                Map.of(
                    "listen", Map.of("port", 0),
                    "tenant", "acme",
                    "kafka",
                        Map.of("bootstrap.servers", "127.0.0.1:" + port, "max.block.ms", "1000"),
                    "schemaRegistryUrl", pipeline.registry,
                    "upstreams", Map.of("payments", Map.of("url", pipeline.upstream.url())))),
            Path.of("."));
    try (McpGateway cut = McpGateway.startHttp(config, pipeline.policies)) {
      CallToolResult answer =
          charge(
              agent(cut.url(), null),
              Map.of("amount", 8, "to", "cus_8"),
              Map.of(McpMeta.RUN_ID, "run-mcp-gw-no-kafka"));

      assertThat(answer.isError()).isTrue();
      assertThat(structured(answer).path("code").asText()).isEqualTo("LEDGER_UNAVAILABLE");
      assertThat(structured(answer).path("correctiveAction").asText()).contains("same arguments");
    }
  }

  @Test
  void shouldTellAnAgentThatAskedForProgressThatItsWriteIsStillWaiting() throws Exception {
    pipeline.upstream.slow(Duration.ofSeconds(3));
    // progress every 1 s (shipped: 5 s), so that a 3 s effect shows it without a long test
    try (McpGateway patient =
        McpGateway.startHttp(pipeline.gatewayConfig("progress: 1s"), pipeline.policies)) {
      List<McpSchema.ProgressNotification> seen = new CopyOnWriteArrayList<>();
      McpSyncClient agent =
          McpHttpClients.open(
              patient.url(),
              Map.of("X-Agent-Run", "run-mcp-write-progress"),
              Duration.ofSeconds(60),
              spec -> spec.progressConsumer(seen::add));
      clients.add(agent);
      CallToolResult charged =
          agent.callTool(
              CallToolRequest.builder()
                  .name("create_charge")
                  .arguments(Map.of("amount", 321, "to", "cus_p", "fault", "SLOW"))
                  .progressToken("write-1")
                  .build());
      assertThat(charged.isError()).as(text(charged)).isFalse();
      await("progress notifications sent while the write waited for its effect")
          .atMost(Duration.ofSeconds(5))
          .untilAsserted(
              () ->
                  assertThat(seen)
                      .hasSizeGreaterThanOrEqualTo(2)
                      .allSatisfy(
                          n -> {
                            assertThat(n.progressToken()).isEqualTo("write-1");
                            assertThat(n.message())
                                .startsWith("in the ledger, waiting for its effect");
                          }));
      assertThat(seen.stream().map(McpSchema.ProgressNotification::progress).sorted().distinct())
          .hasSize(seen.size()); // each one further than the one before
    }
  }

  @Test
  void shouldAnswerAToolsErrorWithItsOwnContentAndReplayIt() throws Exception {
    String run = "run-mcp-gw-declined";
    String key = key(run, "mcp:create_charge", Map.of("amount", 13, "to", "cus_13"));
    pipeline.upstream.inject(key, Fault.ERROR_BEFORE);

    CallToolResult declined = charge(agent(gateway.url(), run), 13, "cus_13");
    CallToolResult again = charge(agent(gateway.url(), run), 13, "cus_13");

    assertThat(declined.isError()).isTrue();
    assertThat(text(declined)).isEqualTo("card declined"); // the tool's own words
    assertThat(structured(declined).path("code").asText()).isEqualTo("EFFECT_FAILED");
    assertThat(again.isError()).isTrue();
    assertThat(text(again)).isEqualTo("card declined");
    assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
    assertThat(pipeline.upstream.requests(key)).isEqualTo(1); // failed for good: never sent again
    assertThat(pipeline.upstream.effects(key)).isZero();
  }

  @Test
  void shouldRefuseWriteToolsTheLedgerHasNoPolicyForAndGenerateOne() throws Exception {
    ToolPolicies none = new ToolPolicyLoader().parse("tools: {}\n", "empty.yaml");
    try (McpGateway bare = McpGateway.startHttp(pipeline.gatewayConfig(""), none)) {
      CallToolResult refused = charge(agent(bare.url(), "run-mcp-gw-4"), 6, "cus_6");
      JsonNode generated = bare.missingPolicies().path("tools");

      assertThat(refused.isError()).isTrue();
      assertThat(structured(refused).path("code").asText()).isEqualTo("POLICY_MISSING");
      assertThat(generated.fieldNames()).toIterable().containsExactly("create_charge");
      JsonNode policy = generated.path("create_charge");
      assertThat(policy.path("class").asText()).isEqualTo("irreversible"); // destructiveHint
      assertThat(policy.path("connector").asText()).isEqualTo("mcp");
      assertThat(policy.at("/settings/url").asText()).isEqualTo(pipeline.upstream.url());
      assertThat(policy.at("/settings/tool").asText()).isEqualTo("create_charge");
      // what it generates loads as a policy and checks as an mcp connector's settings
      ToolPolicies loaded =
          new ToolPolicyLoader()
              .parse(
                  new com.fasterxml.jackson.dataformat.yaml.YAMLMapper()
                      .writeValueAsString(bare.missingPolicies()),
                  "generated.yaml");
      assertThat(dev.effectledger.mcp.connector.McpConnectors.all().checkAll(loaded)).isEmpty();

      // An operator applies a policy naming it: the running gateway serves it, no restart.
      dev.effectledger.policy.AppliedPolicy applied =
          dev.effectledger.policy.AppliedPolicy.seed(pipeline.policies, pipeline.toolsYaml)
              .next(pipeline.policies, pipeline.toolsYaml, java.time.Instant.now(), "it");
      pipeline.publishPolicy(applied);
      org.awaitility.Awaitility.await("the gateway without tools.yaml on policy version 1")
          .atMost(java.time.Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(bare.policyVersion()).isEqualTo(1));
      CallToolResult served = charge(agent(bare.url(), "run-mcp-gw-4"), 6, "cus_6");
      assertThat(served.isError()).as(String.valueOf(served)).isFalse();
    }
  }
}
