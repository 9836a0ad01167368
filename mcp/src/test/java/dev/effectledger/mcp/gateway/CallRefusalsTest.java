package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class CallRefusalsTest {

  private static final CallRefusals REFUSALS = new CallRefusals("create_charge"::equals);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TASK_CALL =
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"create_charge\","
          + "\"arguments\":{},\"task\":{\"ttl\":60000}}}";
  private static final String PLAIN_CALL =
      "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"create_charge\","
          + "\"arguments\":{}}}";

  @Test
  void shouldRefuseATaskAugmentedCallNamingWhyAndPassEverythingElse() throws Exception {
    JsonNode refused = JSON.readTree(REFUSALS.refusal(utf8(TASK_CALL)));

    assertThat(refused.path("id").asInt()).isEqualTo(7);
    assertThat(refused.at("/error/code").asInt()).isEqualTo(-32602);
    assertThat(refused.at("/error/message").asText()).contains("tasks capability");
    assertThat(refused.at("/error/data/tool").asText()).isEqualTo("create_charge");
    assertThat(REFUSALS.refusal(utf8(PLAIN_CALL))).isNull();
    assertThat(REFUSALS.refusal(utf8("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}")))
        .as("a notification")
        .isNull();
    assertThat(REFUSALS.refusal(utf8("not json"))).as("the SDK answers that").isNull();
    assertThat(REFUSALS.refusal(utf8("[" + TASK_CALL + "]"))).as("a batch").isNull();
    assertThat(
            REFUSALS.refusal(
                utf8("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{}}")))
        .as("another request")
        .isNull();
  }

  @Test
  void shouldRefuseACallOfAToolNotServedNamingIt() throws Exception {
    JsonNode refused =
        JSON.readTree(REFUSALS.refusal(utf8(PLAIN_CALL.replace("create_charge", "no_such_tool"))));

    assertThat(refused.path("id").asInt()).isEqualTo(8);
    assertThat(refused.at("/error/code").asInt()).isEqualTo(-32602);
    assertThat(refused.at("/error/message").asText()).startsWith("Unknown tool: no_such_tool");
    assertThat(refused.at("/error/data/tool").asText()).isEqualTo("no_such_tool");
  }

  @Test
  void shouldAnswerARefusedLineOnStdioAndPassTheOthersOnWhole() throws Exception {
    ByteArrayOutputStream agentSees = new ByteArrayOutputStream();
    CallRefusals.Stdio stdio =
        REFUSALS.stdio(
            new ByteArrayInputStream(utf8(PLAIN_CALL + "\n" + TASK_CALL + "\n" + PLAIN_CALL)),
            agentSees);

    String server = new String(stdio.in.readAllBytes(), StandardCharsets.UTF_8);
    stdio.out.write(utf8("{\"jsonrpc\":\"2.0\",\"id\":8,"));
    assertThat(agentSees.toString(StandardCharsets.UTF_8))
        .as("half a line of the server's is held back")
        .doesNotContain("\"id\":8");
    stdio.out.write(utf8("\"result\":{}}\n"));
    stdio.out.flush();

    assertThat(server).isEqualTo(PLAIN_CALL + "\n" + PLAIN_CALL + "\n");
    String[] lines = agentSees.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(lines).hasSize(2);
    assertThat(JSON.readTree(lines[0]).at("/error/code").asInt()).isEqualTo(-32602);
    assertThat(JSON.readTree(lines[1]).path("id").asInt()).isEqualTo(8);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
