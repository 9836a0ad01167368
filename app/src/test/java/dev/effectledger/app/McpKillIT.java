package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The MCP gateway and the executor as the built jar's own processes (the ledger in the test's JVM),
 * each killed with SIGKILL while a write call is under way at the MCP server (the call takes 4 s
 * there): the agent's retry, with the same run, gets the one result, and the MCP server saw one
 * effect.
 */
@Tag("integration")
class McpKillIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  private JarFixture jar;
  private KafkaStreams ledger;

  @AfterEach
  void killLeftovers() {
    if (jar != null) {
      jar.close();
    }
    if (ledger != null) {
      ledger.close(Duration.ofSeconds(30));
    }
  }

  private static McpSyncClient agent(int port) {
    return McpHttpClients.open(
        "http://127.0.0.1:" + port + "/mcp", Map.of(), Duration.ofSeconds(60));
  }

  private static CallToolRequest charge(String run, int amount) {
    return CallToolRequest.builder()
        .name("create_charge")
        .arguments(Map.of("amount", amount, "to", "cus_k"))
        .meta(Map.of(McpMeta.RUN_ID, run))
        .build();
  }

  private static String key(String run, int amount) throws Exception {
    return IdempotencyKeys.derive(
            new StepContext("acme", run, "mcp:create_charge", ""),
            "create_charge",
            JSON.writeValueAsString(Map.of("amount", amount, "to", "cus_k")),
            KeyRules.NONE)
        .key();
  }

  /** Calls until the answer is the result (not held, not still running, not unavailable). */
  private static CallToolResult retryUntilSettled(int port, CallToolRequest call) {
    CallToolResult[] last = new CallToolResult[1];
    await("the agent's call " + call.name() + " answered with its result through port " + port)
        .atMost(Duration.ofSeconds(150))
        .pollInterval(Duration.ofSeconds(2))
        .ignoreExceptions()
        .untilAsserted(
            () -> {
              try (McpSyncClient agent = agent(port)) {
                last[0] = agent.callTool(call);
              }
              assertThat(Boolean.TRUE.equals(last[0].isError()))
                  .as(
                      () ->
                          "answered an error (held, running or unavailable): " + last[0].content())
                  .isFalse();
            });
    return last[0];
  }

  @Test
  @Timeout(420)
  void shouldGiveTheAgentsRetryTheOneResultWhenTheGatewayOrTheExecutorIsKilledMidCall()
      throws Exception {
    jar = new JarFixture(dir, kafka.bootstrapServers());
    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingMcpServer upstream = CountingMcpServer.startHttp(0)) {
      upstream.slow(Duration.ofSeconds(4));
      int gatewayPort = JarProcess.freePort();
      Files.writeString(
          dir.resolve("tools.yaml"),
          """
          tools:
            create_charge:
              class: irreversible
              pendingTimeout: 20s
              onAmbiguous: hold
              lane: mcp
              connector: mcp
              settings: {url: "%s", timeout: 30s, effectIdPointer: /id, lookupTool: find_charge}
          """
              .formatted(upstream.url()));
      Files.writeString(
          dir.resolve("executor.properties"),
          String.join(
              "\n",
              "bootstrap.servers=" + kafka.bootstrapServers(),
              "schema.registry.url=" + registry.url(),
              "tools.file=tools.yaml",
              "executor.group=mcp-kill-it-executor",
              // a stable instance id, as deployed: the restarted executor takes over at once
              "executor.instance.id=executor-1",
              ""));
      Files.writeString(
          dir.resolve("mcp.yaml"),
          """
          listen: {port: %d}
          tenant: acme
          wait: 20s
          tools: tools.yaml
          kafka: {bootstrap.servers: "%s"}
          schemaRegistryUrl: "%s"
          upstreams:
            payments: {url: "%s"}
          """
              .formatted(gatewayPort, kafka.bootstrapServers(), registry.url(), upstream.url()));
      // the ledger in this JVM (it is not what is killed here); the gateway and the executor are
      // the jar's own processes
      ToolPolicies policies = new ToolPolicyLoader().load(dir.resolve("tools.yaml"));
      try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
        new TopicProvisioner(admin).create(TopicProvisioner.topics(policies), 2, (short) 1, 0);
      }
      Properties props = new Properties();
      props.put(StreamsConfig.APPLICATION_ID_CONFIG, "mcp-kill-it");
      props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state").toString());
      ledger =
          LedgerTopology.streams(
              LedgerConfig.of(policies, registry.url()).withIntentPartitions(2), props);
      ledger.start();
      JarFixture.Running executor =
          jar.start("executor", "--config", "executor.properties", "--lanes", "mcp");
      JarFixture.Running gateway = jar.start("mcp", "--config", "mcp.yaml");
      await("the mcp gateway process logs \"tools at\" (it serves)")
          .atMost(Duration.ofSeconds(60))
          .failFast(gateway::assertAlive)
          .ignoreExceptions()
          .untilAsserted(
              () -> {
                var out = gateway.output();
                assertThat(out.stream().anyMatch(l -> l.contains("tools at")))
                    .as(
                        "the gateway logged \"tools at\"; its last lines: %s",
                        out.subList(Math.max(0, out.size() - 20), out.size()))
                    .isTrue();
              });

      // The gateway killed while the call is at the MCP server.
      String keyA = key("run-kill-gw", 501);
      upstream.inject(keyA, Fault.SLOW);
      CompletableFuture<CallToolResult> cut =
          CompletableFuture.supplyAsync(
              () -> {
                try (McpSyncClient agent = agent(gatewayPort)) {
                  return agent.callTool(charge("run-kill-gw", 501));
                }
              });
      await("the call of " + keyA + " reaches the MCP server")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(upstream.requests(keyA))
                      .as("requests of %s", keyA)
                      .isGreaterThanOrEqualTo(1));
      gateway.process().destroyForcibly();
      assertThat(gateway.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(cut).failsWithin(Duration.ofSeconds(90));
      JarFixture.Running restarted = jar.start("mcp", "--config", "mcp.yaml");
      CallToolResult afterGateway = retryUntilSettled(gatewayPort, charge("run-kill-gw", 501));
      assertThat(afterGateway.meta()).containsEntry(McpMeta.IDEMPOTENCY_KEY, keyA);
      assertThat(upstream.effects(keyA)).isEqualTo(1);

      // The executor killed while the call is at the MCP server: its effect lands after the
      // kill; the restarted executor finds it with the lookup tool instead of charging again.
      String keyB = key("run-kill-exec", 502);
      upstream.inject(keyB, Fault.SLOW);
      CompletableFuture<CallToolResult> waiting =
          CompletableFuture.supplyAsync(
              () -> {
                try (McpSyncClient agent = agent(gatewayPort)) {
                  return agent.callTool(charge("run-kill-exec", 502));
                }
              });
      await("the call of " + keyB + " reaches the MCP server")
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(upstream.requests(keyB))
                      .as("requests of %s", keyB)
                      .isGreaterThanOrEqualTo(1));
      executor.process().destroyForcibly();
      assertThat(executor.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
      await("the effect of " + keyB + " lands after the executor's kill")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(upstream.effects(keyB)).as("effects of %s", keyB).isEqualTo(1));
      jar.start("executor", "--config", "executor.properties", "--lanes", "mcp");
      CallToolResult afterExecutor = retryUntilSettled(gatewayPort, charge("run-kill-exec", 502));
      waiting.handle((r, e) -> r).get(90, TimeUnit.SECONDS); // answered, one way or another
      assertThat(afterExecutor.meta()).containsEntry(McpMeta.IDEMPOTENCY_KEY, keyB);
      assertThat(JSON.valueToTree(afterExecutor.structuredContent()).path("id").asText())
          .startsWith("ch_");
      assertThat(upstream.effects(keyB)).isEqualTo(1);
      assertThat(upstream.requests(keyB)).as("never sent again").isEqualTo(1);
      assertThat(restarted.process().isAlive()).isTrue();
    }
  }
}
