package dev.effectledger.mcp.it;

import static dev.effectledger.mcp.it.McpPipeline.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What an upstream asks of the agent whose call it is serving (sampling, elicitation, roots) and
 * what it logs during that call, through the MCP gateway: each agent has its own session with the
 * upstream, so its requests reach that agent and its logs reach no other; interactive writes are
 * refused or performed as pass-through with the ledger's key, as mcp.yaml chooses.
 */
class McpAgentRequestsIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  private static McpPipeline pipeline;
  private static AskingMcpServer asking;
  private static ToolPolicies policies;
  private static McpGateway gateway;
  private final List<McpSyncClient> clients = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    pipeline = new McpPipeline(kafka.bootstrapServers(), "mcp-agent-requests-it");
    asking = new AskingMcpServer();
    policies =
        new ToolPolicyLoader()
            .parse(
                pipeline.toolsYaml
                    + """
                  confirm_transfer:
                    class: irreversible
                    lane: mcp
                    connector: mcp
                    settings: {url: "%1$s"}
                  approve_refund:
                    class: irreversible
                    lane: mcp
                    connector: mcp
                    settings: {url: "%1$s"}
                """
                        .formatted(asking.url()),
                "mcp-agent-requests-it.yaml");
    gateway =
        McpGateway.startHttp(
            pipeline.gatewayConfig(
                "interactive: {confirm_transfer: pass-through, approve_refund: refuse}",
                Map.of("asking", asking.url())),
            policies);
  }

  @AfterAll
  static void stop() throws Exception {
    gateway.close();
    asking.close();
    pipeline.close();
  }

  @AfterEach
  void closeClients() {
    clients.forEach(McpSyncClient::close);
  }

  private McpSyncClient agent(String url, String run, Consumer<McpClient.SyncSpec> customizer) {
    McpSyncClient client =
        McpHttpClients.open(url, Map.of("X-Agent-Run", run), Duration.ofSeconds(30), customizer);
    clients.add(client);
    return client;
  }

  /** An agent that samples, elicits (accepting) and has roots, recording what it was asked. */
  private McpSyncClient capable(
      String url, List<String> asked, List<McpSchema.LoggingMessageNotification> logs) {
    return agent(
        url,
        "run-capable",
        spec ->
            spec.capabilities(
                    McpSchema.ClientCapabilities.builder()
                        .sampling()
                        .elicitation()
                        .roots(true)
                        .build())
                .sampling(
                    request -> {
                      asked.add(
                          "sampling: "
                              + ((McpSchema.TextContent) request.messages().get(0).content())
                                  .text());
                      return McpSchema.CreateMessageResult.builder()
                          .role(McpSchema.Role.ASSISTANT)
                          .content(new McpSchema.TextContent("4"))
                          .model("model-a")
                          .build();
                    })
                .elicitation(
                    request -> {
                      asked.add("elicitation: " + request.message());
                      return new McpSchema.ElicitResult(
                          McpSchema.ElicitResult.Action.ACCEPT, Map.of("confirmed", true));
                    })
                .roots(new McpSchema.Root("file:///work/a", "a"))
                .loggingConsumer(logs::add));
  }

  private static CallToolResult call(McpSyncClient agent, String tool, String text) {
    return agent.callTool(new CallToolRequest(tool, Map.of("text", text)));
  }

  @Test
  void shouldRelayAnUpstreamsRequestsAndLogsToTheAgentWhoseCallMadeThemOnly() {
    List<String> asked = new CopyOnWriteArrayList<>();
    List<McpSchema.LoggingMessageNotification> capableLogs = new CopyOnWriteArrayList<>();
    List<McpSchema.LoggingMessageNotification> plainLogs = new CopyOnWriteArrayList<>();
    McpSyncClient capable = capable(gateway.url(), asked, capableLogs);
    McpSyncClient plain =
        agent(gateway.url(), "run-plain", spec -> spec.loggingConsumer(plainLogs::add));

    // sampling: the upstream's request reaches the agent, and the agent's answer the upstream
    CallToolResult sampled = call(capable, "ask_model", "2+2?");
    assertThat(sampled.isError()).as(text(sampled)).isFalse();
    assertThat(text(sampled)).isEqualTo("4 (model-a)");
    assertThat(asked).containsExactly("sampling: 2+2?");

    // an agent that declared no sampling is not asked: the upstream answers as it would directly
    CallToolResult refused = call(plain, "ask_model", "3+3?");
    McpSyncClient direct = agent(asking.url(), "run-direct", spec -> {});
    CallToolResult refusedDirectly = call(direct, "ask_model", "3+3?");
    assertThat(refused.isError()).isTrue();
    assertThat(text(refused)).isEqualTo(text(refusedDirectly)).startsWith("ask_model failed");

    // elicitation and roots: the agent's own
    assertThat(text(call(capable, "ask_user", "proceed?"))).isEqualTo("ACCEPT {confirmed=true}");
    assertThat(asked).contains("elicitation: proceed?");
    assertThat(text(call(capable, "show_roots", ""))).isEqualTo("file:///work/a");
    capable.addRoot(new McpSchema.Root("file:///work/b", "b")); // tells the gateway
    await("the upstream listing the agent's new root")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(text(call(capable, "show_roots", "")).split(","))
                    .containsExactlyInAnyOrder("file:///work/a", "file:///work/b"));

    // logs of a call reach the agent that made it, and no other
    await("each agent's own log message")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              assertThat(capableLogs)
                  .anySatisfy(
                      m -> {
                        assertThat(m.logger()).isEqualTo("asking/asker");
                        assertThat(m.data()).isEqualTo("asking the model: 2+2?");
                      });
              assertThat(plainLogs).anySatisfy(m -> assertThat(m.data()).endsWith("3+3?"));
            });
    await("no agent sent the other's log message, for 1 s")
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(3))
        .untilAsserted(
            () -> {
              assertThat(capableLogs).noneMatch(m -> String.valueOf(m.data()).endsWith("3+3?"));
              assertThat(plainLogs).noneMatch(m -> String.valueOf(m.data()).endsWith("2+2?"));
            });
  }

  @Test
  void shouldRefuseOrPerformAnInteractiveWriteAsConfiguredNeverThroughAnExecutor()
      throws Exception {
    List<String> asked = new CopyOnWriteArrayList<>();
    McpSyncClient capable = capable(gateway.url(), asked, new CopyOnWriteArrayList<>());

    // pass-through: the agent is asked, and the upstream is sent the key the ledger would give
    CallToolResult transferred = call(capable, "confirm_transfer", "100 to bob");
    String key =
        IdempotencyKeys.derive(
                new StepContext("acme", "run-capable", "mcp:confirm_transfer", ""),
                "confirm_transfer",
                JSON.writeValueAsString(Map.of("text", "100 to bob")),
                KeyRules.NONE)
            .key();
    assertThat(text(transferred)).isEqualTo("transferred under " + key + " (effect 1)");
    assertThat(transferred.meta())
        .containsEntry(McpMeta.IDEMPOTENCY_KEY, key)
        .containsEntry("effectledger.dev/performed", "pass-through");
    assertThat(asked).containsExactly("elicitation: transfer 100 to bob?");
    // the same call again carries the same key: an upstream that honours keys dedups it
    call(capable, "confirm_transfer", "100 to bob");
    assertThat(asking.transfersByKey).containsOnlyKeys(key);

    // refuse: nothing reaches the upstream, and the answer says why and what to do
    CallToolResult refused = call(capable, "approve_refund", "order 7");
    assertThat(refused.isError()).isTrue();
    assertThat(text(refused))
        .startsWith("AGENT_REQUESTS_UNAVAILABLE")
        .contains("no agent is on the line", "interactive: {approve_refund: pass-through}");
    assertThat(asking.refundCalls).hasValue(0);
  }

  @Test
  void shouldEndAnAgentsUpstreamSessionsWhenTheAgentEndsItsOwnOrFallsIdle() throws Exception {
    McpSyncClient leaving = agent(gateway.url(), "run-leaving", spec -> {});
    call(leaving, "ask_model", "hello?"); // opens its session with the upstream
    int endedBefore = asking.ended.get();
    leaving.close(); // DELETE of its session with the gateway
    await("the agent's session with the upstream ended (DELETE)")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(asking.ended.get()).isGreaterThan(endedBefore));

    // idle: ended by the gateway while the agent stays connected, and opened again on its next call
    try (McpGateway idle =
        McpGateway.startHttp(
            // idle 1 s (shipped: 10m), so that the test sees a session end for want of use
            pipeline.gatewayConfig("agents: {idle: 1s}", Map.of("asking", asking.url())),
            policies)) {
      McpSyncClient staying = agent(idle.url(), "run-staying", spec -> {});
      call(staying, "ask_model", "first?");
      int endedThen = asking.ended.get();
      int initializedThen = asking.initialized.get();
      await("the idle agent's session with the upstream ended")
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(() -> assertThat(asking.ended.get()).isGreaterThan(endedThen));
      assertThat(text(call(staying, "ask_model", "again?"))).startsWith("ask_model failed");
      assertThat(asking.initialized.get()).isGreaterThan(initializedThen);
    }
  }
}
