package dev.effectledger.mcp.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The {@code mcp} connector behind the real ledger and executor: a tool of tools.yaml performed as
 * a {@code tools/call} on an MCP server (the SDK's, over Streamable HTTP) that counts its effects.
 */
@Tag("integration")
@Timeout(240)
class McpExecutorIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  private static McpPipeline pipeline;
  private static CountingMcpServer upstream;
  private static ToolCallClient client;

  @BeforeAll
  static void start() throws Exception {
    pipeline = new McpPipeline(kafka.bootstrapServers(), "mcp-executor-it");
    upstream = pipeline.upstream;
    client =
        ToolCallClient.builder()
            .bootstrapServers(kafka.bootstrapServers())
            .schemaRegistryUrl(pipeline.registry)
            .timeout(Duration.ofSeconds(60))
            .build();
  }

  @AfterAll
  static void stop() {
    client.close();
    pipeline.close();
  }

  private static CallResult call(StepContext step, String arguments) throws Exception {
    return client.invoke(ToolCall.of(step, "create_charge", arguments)).get(90, TimeUnit.SECONDS);
  }

  @Test
  void shouldTakeEffectOnceAcrossRetriesAndReplayTheToolsResult() throws Exception {
    StepContext step = new StepContext("acme", "run-mcp-1", "charge", "");
    String arguments = "{\"amount\":1200,\"to\":\"cus_1\"}";

    CompletableFuture<CallResult> first =
        client.invoke(ToolCall.of(step, "create_charge", arguments));
    CompletableFuture<CallResult> concurrent =
        client.invoke(ToolCall.of(step, "create_charge", "{\"to\":\"cus_1\",\"amount\":1200}"));
    CallResult a = first.get(90, TimeUnit.SECONDS);
    CallResult b = concurrent.get(90, TimeUnit.SECONDS);
    CallResult again = call(step, arguments);

    assertThat(a).isInstanceOf(CallResult.Succeeded.class);
    CallResult.Succeeded done = (CallResult.Succeeded) a;
    assertThat(b).isInstanceOf(CallResult.Succeeded.class);
    assertThat(((CallResult.Succeeded) b).effectId()).isEqualTo(done.effectId());
    assertThat(again).isInstanceOf(CallResult.Succeeded.class);
    assertThat(((CallResult.Succeeded) again).replayed()).isTrue();
    assertThat(upstream.effects(done.key())).isEqualTo(1);
    JsonNode result = JSON.readTree(done.resultJson()); // the whole CallToolResult, to replay
    assertThat(result.at("/structuredContent/id").asText()).isEqualTo(done.effectId());
    assertThat(result.at("/content/0/text").asText()).isEqualTo("charged 1200 to cus_1");
  }

  @Test
  void shouldHoldAnEffectWhoseAnswerWasLostAndResolveItByTheLookupTool() throws Exception {
    StepContext step = new StepContext("acme", "run-mcp-2", "charge", "");
    String arguments = "{\"amount\":300,\"to\":\"cus_2\"}";
    String key = IdempotencyKeys.derive(step, "create_charge", arguments, KeyRules.NONE).key();
    upstream.inject(key, Fault.DROP_AFTER);

    CallResult held = call(step, arguments);

    assertThat(held).isInstanceOf(CallResult.HeldUnknown.class);
    assertThat(upstream.effects(key)).isEqualTo(1);
    Map<String, Connector> connectors =
        McpConnectors.all().create(pipeline.policies, List.of("mcp"), Clock.systemUTC());
    try (Reconciler reconciler =
        new Reconciler(
            pipeline.kafka(),
            pipeline.registry,
            connectors,
            Reconciler.lanesOf(pipeline.policies),
            Duration.ZERO,
            Clock.systemUTC())) {
      await("a reconciler pass finds the held effect of " + key + " by the lookup tool")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(reconciler.reconcileOnce().total().heldFoundEffect())
                      .as("held keys this pass found an effect for")
                      .isGreaterThanOrEqualTo(1));
    } finally {
      connectors.values().forEach(Connector::close);
    }
    CallResult settled = call(step, arguments);
    assertThat(settled).isInstanceOf(CallResult.Succeeded.class);
    assertThat(((CallResult.Succeeded) settled).effectId()).startsWith("ch_");
    assertThat(upstream.effects(key)).isEqualTo(1);
  }

  @Test
  void shouldFailWithTheToolsErrorAndNoEffect() throws Exception {
    StepContext step = new StepContext("acme", "run-mcp-3", "charge", "");
    String arguments = "{\"amount\":9,\"to\":\"cus_3\"}";
    String key = IdempotencyKeys.derive(step, "create_charge", arguments, KeyRules.NONE).key();
    upstream.inject(key, Fault.ERROR_BEFORE);

    CallResult failed = call(step, arguments);

    assertThat(failed).isInstanceOf(CallResult.Failed.class);
    // the executor's code and the tool's own content, in the ledger's EFFECT_FAILED
    assertThat(((CallResult.Failed) failed).error().code()).isEqualTo("EFFECT_FAILED");
    assertThat(((CallResult.Failed) failed).error().message())
        .startsWith("TOOL_ERROR: ")
        .contains("card declined");
    assertThat(upstream.effects(key)).isZero();
  }
}
