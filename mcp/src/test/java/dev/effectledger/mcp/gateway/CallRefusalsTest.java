package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.common.McpTransportContext;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CallRefusalsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TASK_CALL =
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"create_charge\","
          + "\"arguments\":{},\"task\":{\"ttl\":60000}}}";
  private static final String PLAIN_CALL =
      "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"create_charge\","
          + "\"arguments\":{}}}";
  private static final String TASK_GET =
      "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"t-1\"}}";

  private final AgentSessions agents = new AgentSessions();
  private final AgentTasks tasks =
      new AgentTasks(
          agents,
          new AgentTasks.Calls() {
            @Override
            public io.modelcontextprotocol.spec.McpSchema.CallToolResult call(
                String tool,
                io.modelcontextprotocol.server.McpSyncServerExchange exchange,
                io.modelcontextprotocol.spec.McpSchema.CallToolRequest request,
                Duration wait) {
              throw new AssertionError("no task runs in these tests");
            }

            @Override
            public boolean writes(String tool) {
              return true;
            }
          });
  private final CallRefusals refusals = new CallRefusals("create_charge"::equals, tasks, agents);

  @AfterEach
  void close() {
    tasks.close();
  }

  @Test
  void shouldTakeOnlyTheRequestsItMayAnswerAndPassEverythingElse() throws Exception {
    assertThat(CallRefusals.request(utf8(PLAIN_CALL))).isNotNull();
    assertThat(
            refusals.answer(
                CallRefusals.request(utf8(PLAIN_CALL)), null, McpTransportContext.EMPTY))
        .as("a call of a served tool: the SDK's server answers it")
        .isNull();
    assertThat(CallRefusals.request(utf8("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}")))
        .as("a notification")
        .isNull();
    assertThat(CallRefusals.request(utf8("not json"))).as("the SDK answers that").isNull();
    assertThat(CallRefusals.request(utf8("[" + TASK_CALL + "]"))).as("a batch").isNull();
    assertThat(
            CallRefusals.request(
                utf8("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{}}")))
        .as("another request")
        .isNull();
    assertThat(AgentTasks.handles(CallRefusals.request(utf8(TASK_CALL)))).isTrue();
    assertThat(AgentTasks.handles(CallRefusals.request(utf8(TASK_GET)))).isTrue();
    assertThat(AgentTasks.handles(CallRefusals.request(utf8(PLAIN_CALL)))).isFalse();
  }

  @Test
  void shouldRefuseACallOfAToolNotServedNamingIt() throws Exception {
    JsonNode refused =
        JSON.readTree(
            refusals
                .answer(
                    CallRefusals.request(utf8(PLAIN_CALL.replace("create_charge", "no_such_tool"))),
                    null,
                    McpTransportContext.EMPTY)
                .join());

    assertThat(refused.path("id").asInt()).isEqualTo(8);
    assertThat(refused.at("/error/code").asInt()).isEqualTo(-32602);
    assertThat(refused.at("/error/message").asText()).startsWith("Unknown tool: no_such_tool");
    assertThat(refused.at("/error/data/tool").asText()).isEqualTo("no_such_tool");
  }

  @Test
  void shouldRefuseATaskOfASessionItDoesNotKnow() throws Exception {
    JsonNode refused =
        JSON.readTree(
            refusals
                .answer(
                    CallRefusals.request(utf8(TASK_CALL)),
                    "no-such-session",
                    McpTransportContext.EMPTY)
                .join());

    assertThat(refused.path("id").asInt()).isEqualTo(7);
    assertThat(refused.at("/error/code").asInt()).isEqualTo(-32600);
    assertThat(refused.at("/error/message").asText()).contains("initialize first");
  }

  @Test
  void shouldAnswerItsLinesOnStdioAndPassTheOthersOnWhole() throws Exception {
    ByteArrayOutputStream agentSees = new ByteArrayOutputStream();
    String initialize =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
            + "\"2025-11-25\",\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"a\","
            + "\"version\":\"1\"}}}";
    String unknown =
        PLAIN_CALL.replace("create_charge", "no_such_tool").replace("\"id\":8", "\"id\":6");
    CallRefusals.Stdio stdio =
        refusals.stdio(
            new ByteArrayInputStream(
                utf8(
                    initialize
                        + "\n"
                        + PLAIN_CALL
                        + "\n"
                        + unknown
                        + "\n"
                        + TASK_GET
                        + "\n"
                        + PLAIN_CALL)),
            agentSees);

    String server = new String(stdio.in.readAllBytes(), StandardCharsets.UTF_8);
    stdio.out.write(utf8("{\"jsonrpc\":\"2.0\",\"id\":8,"));
    assertThat(agentSees.toString(StandardCharsets.UTF_8))
        .as("half a line of the server's is held back")
        .doesNotContain("\"id\":8");
    stdio.out.write(utf8("\"result\":{}}\n"));
    stdio.out.flush();

    assertThat(server).isEqualTo(initialize + "\n" + PLAIN_CALL + "\n" + PLAIN_CALL + "\n");
    await("the answers to the unknown tool, the unknown task and the server's line")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () ->
                assertThat(agentSees.toString(StandardCharsets.UTF_8).split("\n"))
                    .hasSize(3)
                    .anySatisfy(
                        line ->
                            assertThat(JSON.readTree(line).at("/error/message").asText())
                                .startsWith("Unknown tool: no_such_tool"))
                    .anySatisfy(
                        line ->
                            assertThat(JSON.readTree(line).at("/error/message").asText())
                                .startsWith("Failed to retrieve task: Task not found"))
                    .anySatisfy(
                        line -> assertThat(JSON.readTree(line).path("id").asInt()).isEqualTo(8)));
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
