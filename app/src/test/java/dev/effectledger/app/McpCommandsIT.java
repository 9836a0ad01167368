package dev.effectledger.app;

import static dev.effectledger.mcp.it.McpPipeline.charge;
import static dev.effectledger.mcp.it.McpPipeline.key;
import static dev.effectledger.mcp.it.McpPipeline.structured;
import static dev.effectledger.mcp.it.McpPipeline.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.mcp.it.McpPipeline;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code effectledger} commands around the MCP gateway, on the pipeline of the mcp module's
 * integration tests ({@link McpPipeline}): {@code reconcile} settling an effect held behind the MCP
 * gateway, and {@code mcp --stdio} serving an agent over stdio. The gateway itself is tested where
 * it lives, in the mcp module ({@code McpGatewayIT}).
 */
@Tag("integration")
@Timeout(300)
class McpCommandsIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  private static McpPipeline pipeline;
  private static McpGateway gateway;
  private final List<McpSyncClient> clients = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    pipeline = new McpPipeline(kafka.bootstrapServers(), "mcp-commands-it");
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

  @Test
  void shouldSettleAHeldEffectWithTheReconcileCommand(@TempDir Path dir) throws Exception {
    String run = "run-mcp-reconcile";
    String key = key(run, "mcp:create_charge", Map.of("amount", 45, "to", "cus_45"));
    pipeline.upstream.inject(key, Fault.DROP_AFTER);
    CallToolResult held = charge(agent(gateway.url(), run), 45, "cus_45");
    assertThat(structured(held).path("code").asText()).isEqualTo("EFFECT_HELD");
    Files.writeString(dir.resolve("tools.yaml"), pipeline.toolsYaml);
    Path config = dir.resolve("reconcile.properties");
    Files.writeString(
        config,
        "bootstrap.servers="
            + kafka.bootstrapServers()
            + "\nschema.registry.url="
            + pipeline.registry
            + "\ntools.file="
            + dir.resolve("tools.yaml")
            + "\n");

    // held for less than --min-age: left alone, and the exit status says keys are still held
    CommandRun young =
        CommandRun.of(
            "reconcile",
            "--config",
            config.toString(),
            "--tool",
            "create_charge",
            "--min-age",
            "1h");
    assertThat(young.status()).as(young.out() + young.err()).isEqualTo(ReconcileCommand.STILL_HELD);
    assertThat(young.out()).contains("still held").doesNotContain("payments_create_charge");

    // old enough: the lookup tool finds the charge, the key settles as applied
    CommandRun settled =
        CommandRun.of("reconcile", "--config", config.toString(), "--min-age", "0s");
    assertThat(settled.status()).as(settled.out() + settled.err()).isZero();
    String row =
        settled.out().lines().filter(l -> l.startsWith("create_charge ")).findFirst().orElseThrow();
    List<Integer> figures =
        java.util.Arrays.stream(row.trim().split("\\s+")).skip(1).map(Integer::valueOf).toList();
    assertThat(figures.get(2)).as(row).isPositive(); // held:applied
    assertThat(figures.get(5)).as(row).isZero(); // held
    assertThat(figures.get(1)).as(row).isZero(); // missing

    // the agent's retry gets the charge that happened, and it happened once
    await("the repeated charge answered as a replay")
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () -> {
              CallToolResult again = charge(agent(gateway.url(), run), 45, "cus_45");
              assertThat(again.isError()).as(text(again)).isFalse();
              assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
            });
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);

    // only what changed lately; a duration it cannot read is refused, naming the option
    CommandRun recent =
        CommandRun.of(
            "reconcile", "--config", config.toString(), "--since", "10m", "--min-age", "0s");
    assertThat(recent.status()).as(recent.out() + recent.err()).isZero();
    assertThat(recent.out()).contains("create_charge ");
    CommandRun bad = CommandRun.of("reconcile", "--config", config.toString(), "--since", "soon");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err()).contains("--since 'soon' is not a duration");
  }

  @Test
  void shouldServeOverStdioInFrontOfAnHttpAndAStdioUpstream(@TempDir Path dir) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("java.class.path");
    Files.writeString(dir.resolve("tools.yaml"), pipeline.toolsYaml);
    // nothing listens at 127.0.0.1:1: only KAFKA_BOOTSTRAP_SERVERS (below) reaches Kafka
    writeMcpYaml(dir, "127.0.0.1:1");
    StdioClientTransport gateway =
        new StdioClientTransport(
            ServerParameters.builder(java)
                .args(
                    "-cp",
                    classpath,
                    Main.class.getName(),
                    "mcp",
                    "--stdio",
                    "--config",
                    dir.resolve("mcp.yaml").toString())
                .env(Map.of("KAFKA_BOOTSTRAP_SERVERS", kafka.bootstrapServers()))
                .build(),
            new JacksonMcpJsonMapper(JSON));
    // what the gateway says on its stderr, for a failure to show (a CI run on a busy machine saw
    // only the SDK's "MCP server process failed with code 2", its reason gone: issue 53)
    List<String> gatewayErr = new java.util.concurrent.CopyOnWriteArrayList<>();
    gateway.setStdErrorHandler(gatewayErr::add);
    McpSyncClient agent =
        McpClient.sync(gateway)
            .requestTimeout(Duration.ofSeconds(60))
            .initializationTimeout(Duration.ofSeconds(60))
            .build();
    clients.add(agent);
    try {
      agent.initialize();
    } catch (RuntimeException e) {
      throw new AssertionError(
          "the gateway over stdio did not initialize; its stderr:\n  "
              + String.join("\n  ", gatewayErr),
          e);
    }
    String run = "run-mcp-gw-stdio";
    String key =
        IdempotencyKeys.derive(
                new StepContext("acme", run, "mcp:payments_create_charge", ""),
                "payments_create_charge",
                JSON.writeValueAsString(Map.of("amount", 77, "to", "cus_77")),
                KeyRules.NONE)
            .key();

    List<String> tools = agent.listTools().tools().stream().map(Tool::name).toList();
    CallToolRequest call =
        new CallToolRequest(
            "payments_create_charge",
            Map.of("amount", 77, "to", "cus_77"),
            Map.of(McpMeta.RUN_ID, run));
    CallToolResult charged = agent.callTool(call);
    CallToolResult again = agent.callTool(call);
    CallToolResult balance = agent.callTool(new CallToolRequest("files_get_balance", Map.of()));
    List<String> prompts =
        agent.listPrompts().prompts().stream().map(McpSchema.Prompt::name).toList();

    // both upstreams have every tool and prompt: all prefixed
    assertThat(tools)
        .containsExactlyInAnyOrder(
            "payments_create_charge",
            "payments_find_charge",
            "payments_get_balance",
            "files_create_charge",
            "files_find_charge",
            "files_get_balance");
    assertThat(prompts).containsExactlyInAnyOrder("payments_refund_policy", "files_refund_policy");
    assertThat(charged.isError()).as(text(charged)).isFalse();
    assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
    assertThat(pipeline.upstream.effects(key)).isEqualTo(1);
    assertThat(structured(balance).path("balance").asInt()).isEqualTo(100); // the stdio upstream's
    assertThat(dir.resolve("files-effects.txt")).doesNotExist();
  }

  /**
   * {@code effectledger mcp policies} in front of an HTTP and a stdio upstream, with a tools.yaml
   * naming none of their tools: a policy for each write tool on stdout, a clean exit, and nothing
   * on stderr but its own advice (a user once saw an InterruptedException warning on a successful
   * exit).
   */
  @Test
  void shouldPrintPoliciesForTheWriteToolsTheLedgerLacksAndExitCleanly(@TempDir Path dir)
      throws Exception {
    Files.writeString(dir.resolve("tools.yaml"), "tools: {}\n");
    writeMcpYaml(dir, kafka.bootstrapServers());

    for (int run = 0; run < 3; run++) {
      CommandRun policies =
          CommandRun.of("mcp", "policies", "--config", dir.resolve("mcp.yaml").toString());

      assertThat(policies.status()).as(policies.out() + policies.err()).isZero();
      assertThat(policies.out())
          .contains("payments_create_charge:")
          .contains("files_create_charge:")
          .contains("class: irreversible");
      assertThat(policies.err())
          .as("stderr of a successful run")
          .contains("are irreversible")
          .doesNotContain("Exception");
      assertThat(policies.err().lines().filter(l -> l.contains("WARN")))
          .as(
              "warnings of a successful run: only that the two upstreams (one server) share a"
                  + " resource")
          .allMatch(l -> l.contains("both have resource"));
    }
  }

  /**
   * {@code dir}/mcp.yaml: tenant acme, {@code dir}/tools.yaml, Kafka at {@code bootstrap}, and two
   * upstreams: the pipeline's counting server over HTTP ({@code payments}) and another over stdio
   * ({@code files}, a process of this JVM's class path, its effects in files-effects.txt).
   */
  private static void writeMcpYaml(Path dir, String bootstrap) throws Exception {
    Files.writeString(
        dir.resolve("mcp.yaml"),
        JSON.writeValueAsString(
            Map.of(
                "tenant",
                "acme",
                "tools",
                "tools.yaml",
                "schemaRegistryUrl",
                pipeline.registry,
                "kafka",
                Map.of("bootstrap.servers", bootstrap),
                "upstreams",
                Map.of(
                    "payments",
                    Map.of("url", pipeline.upstream.url()),
                    "files",
                    Map.of(
                        "command",
                        McpPipeline.countingServerCommand(dir.resolve("files-effects.txt")))))));
  }

  /** A new MCP session with the gateway, sending {@code run} in the run header. */
  private McpSyncClient agent(String url, String run) {
    McpSyncClient client =
        McpHttpClients.open(url, Map.of("X-Agent-Run", run), Duration.ofSeconds(60));
    clients.add(client);
    return client;
  }
}
