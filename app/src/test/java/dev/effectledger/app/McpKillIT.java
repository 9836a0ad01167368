package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The MCP gateway and the executor as the built jar's own processes, each killed with SIGKILL while
 * a write call is under way at the MCP server (the call takes 4 s there): the agent's retry, with
 * the same run, gets the one result, and the MCP server saw one effect.
 */
@Tag("integration")
class McpKillIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  private JarFixture jar;

  @AfterEach
  void killLeftovers() {
    if (jar != null) {
      jar.close();
    }
  }

  private static McpSyncClient agent(int port) {
    McpSyncClient client =
        McpClient.sync(
                HttpClientStreamableHttpTransport.builder("http://127.0.0.1:" + port)
                    .endpoint("/mcp")
                    .jsonMapper(new JacksonMcpJsonMapper(JSON))
                    .build())
            .requestTimeout(Duration.ofSeconds(60))
            .build();
    client.initialize();
    return client;
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
    await()
        .atMost(Duration.ofSeconds(150))
        .pollInterval(Duration.ofSeconds(2))
        .ignoreExceptions()
        .until(
            () -> {
              try (McpSyncClient agent = agent(port)) {
                last[0] = agent.callTool(call);
              }
              return !Boolean.TRUE.equals(last[0].isError());
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
      int ledgerPort = JarProcess.freePort();
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
          dir.resolve("processor.properties"),
          String.join(
              "\n",
              "bootstrap.servers=" + kafka.bootstrapServers(),
              "schema.registry.url=" + registry.url(),
              "tools.file=tools.yaml",
              "state.dir=" + dir.resolve("state"),
              "http.port=" + ledgerPort,
              "topics.create=true",
              "topics.partitions=2",
              "topics.replication=1",
              "replication.factor=1",
              "application.id=mcp-kill-it",
              ""));
      Files.writeString(
          dir.resolve("executor.properties"),
          String.join(
              "\n",
              "bootstrap.servers=" + kafka.bootstrapServers(),
              "schema.registry.url=" + registry.url(),
              "tools.file=tools.yaml",
              "executor.group=mcp-kill-it-executor",
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
      jar.start("processor", "--config", "processor.properties");
      await()
          .atMost(Duration.ofSeconds(120))
          .ignoreExceptions()
          .until(() -> jar.get("http://127.0.0.1:" + ledgerPort + "/readyz").statusCode() == 200);
      JarFixture.Running executor =
          jar.start("executor", "--config", "executor.properties", "--lanes", "mcp");
      JarFixture.Running gateway = jar.start("mcp", "--config", "mcp.yaml");
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> gateway.output().stream().anyMatch(l -> l.contains("tools at")));

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
      await().atMost(Duration.ofSeconds(60)).until(() -> upstream.requests(keyA) >= 1);
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
      await().atMost(Duration.ofSeconds(60)).until(() -> upstream.requests(keyB) >= 1);
      executor.process().destroyForcibly();
      assertThat(executor.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(30)).until(() -> upstream.effects(keyB) == 1);
      jar.start("executor", "--config", "executor.properties", "--lanes", "mcp");
      waiting.handle((r, e) -> r).get(90, TimeUnit.SECONDS); // answered, one way or another
      CallToolResult afterExecutor = retryUntilSettled(gatewayPort, charge("run-kill-exec", 502));
      assertThat(afterExecutor.meta()).containsEntry(McpMeta.IDEMPOTENCY_KEY, keyB);
      assertThat(JSON.valueToTree(afterExecutor.structuredContent()).path("id").asText())
          .startsWith("ch_");
      assertThat(upstream.effects(keyB)).isEqualTo(1);
      assertThat(upstream.requests(keyB)).as("never sent again").isEqualTo(1);
      assertThat(restarted.process().isAlive()).isTrue();
    }
  }
}
