package dev.effectledger.mcp.connector;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The mcp connector against a real MCP server (the SDK's), over Streamable HTTP and stdio. */
@Timeout(120)
class McpConnectorTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CHARGE = "{\"amount\":1200,\"to\":\"cus_1\"}";

  private CountingMcpServer upstream;
  private final List<McpConnector> connectors = new ArrayList<>();

  @BeforeEach
  void start() {
    upstream = CountingMcpServer.startHttp(0);
  }

  @AfterEach
  void stop() {
    connectors.forEach(McpConnector::close);
    upstream.close();
  }

  private McpConnector connector(String yaml) throws Exception {
    JsonNode settings = new YAMLMapper().readTree(yaml);
    McpConnector connector =
        new McpConnector("create_charge", McpConnectorSettings.from("create_charge", settings));
    connectors.add(connector);
    return connector;
  }

  private McpConnector http(String more) throws Exception {
    return connector("url: " + upstream.url() + "\neffectIdPointer: /id\n" + more);
  }

  private static EffectRequest request(String key, String arguments) {
    return new EffectRequest(key, key, "acme", "create_charge", arguments, 1, null);
  }

  @Test
  void shouldCarryTheAttemptsTraceToTheUpstreamInMeta() throws Exception {
    String attempt = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    EffectOutcome outcome =
        http("")
            .execute(
                new EffectRequest(
                    "k-traced", "k-traced", "acme", "create_charge", CHARGE, 1, attempt));

    assertThat(outcome).isInstanceOf(EffectOutcome.Succeeded.class);
    // no OpenTelemetry SDK in this test: the call's span is the attempt's context, carried as is
    assertThat(upstream.traceparent("k-traced")).isEqualTo(attempt);
    http("").execute(request("k-untraced", CHARGE));
    assertThat(upstream.traceparent("k-untraced")).as("outside a trace, none").isNull();
  }

  @Test
  void shouldCallTheToolOnceWithTheKeyInMetaAndInTheHeaderAndKeepTheWholeResult() throws Exception {
    EffectOutcome outcome = http("").execute(request("k-ok", CHARGE));

    assertThat(outcome).isInstanceOf(EffectOutcome.Succeeded.class);
    EffectOutcome.Succeeded succeeded = (EffectOutcome.Succeeded) outcome;
    assertThat(succeeded.effectId()).startsWith("ch_");
    JsonNode result = JSON.readTree(succeeded.resultJson());
    assertThat(result.at("/structuredContent/amount").asInt()).isEqualTo(1200);
    assertThat(result.at("/content/0/text").asText()).isEqualTo("charged 1200 to cus_1");
    assertThat(upstream.effects("k-ok")).isEqualTo(1); // the key from _meta
    assertThat(upstream.keyHeaders("k-ok")).isEqualTo(1); // and in the Idempotency-Key header
  }

  @Test
  void shouldFailWithTheToolsContentWhenItAnswersIsError() throws Exception {
    upstream.inject("k-declined", Fault.ERROR_BEFORE);

    EffectOutcome outcome = http("").execute(request("k-declined", CHARGE));

    assertThat(outcome).isInstanceOf(EffectOutcome.Failed.class);
    assertThat(outcome.code()).isEqualTo("TOOL_ERROR");
    assertThat(JSON.readTree(((EffectOutcome.Failed) outcome).message()))
        .isEqualTo(JSON.readTree("[{\"type\":\"text\",\"text\":\"card declined\"}]"));
    assertThat(upstream.effects("k-declined")).isZero();
  }

  @Test
  void shouldFailWithoutRetryOnAJsonRpcError() throws Exception {
    upstream.inject("k-invalid", Fault.PROTOCOL_ERROR);

    EffectOutcome refused = http("").execute(request("k-invalid", CHARGE));
    EffectOutcome unknownTool = http("tool: no_such_tool\n").execute(request("k-unknown", CHARGE));

    assertThat(refused).isInstanceOf(EffectOutcome.Failed.class);
    assertThat(refused.code()).isEqualTo("MCP_PROTOCOL_ERROR");
    assertThat(((EffectOutcome.Failed) refused).message())
        .contains("-32602")
        .contains("amount must be positive");
    assertThat(unknownTool).isInstanceOf(EffectOutcome.Failed.class);
    assertThat(unknownTool.code()).isEqualTo("MCP_PROTOCOL_ERROR");
    assertThat(upstream.effectCount()).isZero();
  }

  @Test
  void shouldBeRetryableWhenNoServerListens() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    McpConnector connector =
        connector("url: http://127.0.0.1:" + port + "/mcp\nconnectTimeout: 2s\n");

    EffectOutcome outcome = connector.execute(request("k-refused", CHARGE));

    assertThat(outcome).isInstanceOf(EffectOutcome.Retryable.class);
    assertThat(outcome.code()).isEqualTo("CONNECTION_REFUSED");
  }

  @Test
  void shouldBeAmbiguousWhenTheAnswerDoesNotComeInTimeAndRecoverForTheNextCall() throws Exception {
    upstream.slow(Duration.ofSeconds(2)).inject("k-slow", Fault.SLOW);
    McpConnector connector = http("timeout: 1s\n");

    EffectOutcome outcome = connector.execute(request("k-slow", CHARGE));

    assertThat(outcome).isInstanceOf(EffectOutcome.Ambiguous.class);
    assertThat(outcome.code()).isEqualTo("TIMEOUT");
    await("the timed-out call's effect lands upstream")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> assertThat(upstream.effects("k-slow")).as("effects of k-slow").isEqualTo(1));
    assertThat(connector.execute(request("k-after-slow", CHARGE)))
        .isInstanceOf(EffectOutcome.Succeeded.class);
  }

  @Test
  void shouldBeAmbiguousWhenTheConnectionDropsAfterTheEffect() throws Exception {
    upstream.inject("k-drop", Fault.DROP_AFTER);
    McpConnector connector = http("timeout: 10s\n");

    EffectOutcome outcome = connector.execute(request("k-drop", CHARGE));

    assertThat(outcome).isInstanceOf(EffectOutcome.Ambiguous.class);
    assertThat(upstream.effects("k-drop")).isEqualTo(1);
    assertThat(connector.execute(request("k-after-drop", CHARGE)))
        .isInstanceOf(EffectOutcome.Succeeded.class);
  }

  @Test
  void shouldLookUpThroughTheConfiguredTool() throws Exception {
    McpConnector connector = http("lookupTool: find_charge\n");
    EffectOutcome.Succeeded done =
        (EffectOutcome.Succeeded) connector.execute(request("k-looked", CHARGE));

    Lookup found = connector.lookup("k-looked");
    Lookup missing = connector.lookup("k-never");

    assertThat(connector.capabilities().supportsLookup()).isTrue();
    assertThat(found.status()).isEqualTo(Lookup.Status.FOUND);
    assertThat(found.effectId()).isEqualTo(done.effectId());
    assertThat(JSON.readTree(found.resultJson()).at("/structuredContent/id").asText())
        .isEqualTo(done.effectId());
    assertThat(missing.status()).isEqualTo(Lookup.Status.NOT_FOUND);
    assertThat(http("").lookup("k-looked").status()).isEqualTo(Lookup.Status.UNSUPPORTED);
  }

  @Test
  void shouldCallAStdioServerAndStartItAgainAfterItDied(@TempDir Path dir) throws Exception {
    Path effects = dir.resolve("effects.txt");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    McpConnector connector =
        connector(
            "command: ["
                + String.join(
                    ", ",
                    List.of(
                        quote(java),
                        "-cp",
                        quote(System.getProperty("java.class.path")),
                        CountingMcpServer.class.getName(),
                        "--effects",
                        quote(effects.toString())))
                // timeout 5s, not the default 30s: the dropped call below is noticed only at the
                // timeout (the SDK's stdio client leaves it pending); connectTimeout: the default
                + "]\ntimeout: 5s\neffectIdPointer: /id\n");

    EffectOutcome first = connector.execute(request("s-1", CHARGE));
    // the process performs the effect and dies before it answers: ambiguous, at the timeout (the
    // SDK's stdio client does not fail a pending request when its process exits)
    EffectOutcome dropped =
        connector.execute(
            request("s-2", "{\"amount\":5,\"to\":\"cus_2\",\"fault\":\"drop_after\"}"));
    EffectOutcome again = connector.execute(request("s-3", CHARGE));

    assertThat(first).isInstanceOf(EffectOutcome.Succeeded.class);
    assertThat(dropped).isInstanceOf(EffectOutcome.Ambiguous.class);
    assertThat(again).isInstanceOf(EffectOutcome.Succeeded.class);
    assertThat(Files.readAllLines(effects, StandardCharsets.UTF_8))
        .containsExactly("s-1", "s-2", "s-3");
  }

  /**
   * A stdio upstream is a process to start, and its start counts against {@code connectTimeout}:
   * with one 5 s default for both transports, an upstream that answered {@code initialize} after 5
   * s was never reached (the MCP gateway then exited at startup with code 2; issue 53). Here the
   * command waits 6 s before it starts the server, as a JVM or {@code npx -y} does on a busy
   * machine, and the settings leave {@code connectTimeout} at its default.
   */
  @Test
  void shouldWaitForAStdioServerThatIsSlowToStartWithTheDefaultConnectTimeout(@TempDir Path dir)
      throws Exception {
    Path effects = dir.resolve("effects.txt");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String start =
        "sleep 6; exec '"
            + java
            + "' -cp '"
            + System.getProperty("java.class.path")
            + "' "
            + CountingMcpServer.class.getName()
            + " --effects '"
            + effects
            + "'";
    McpConnector connector =
        connector("command: [sh, -c, " + quote(start) + "]\neffectIdPointer: /id\n");

    EffectOutcome outcome = connector.execute(request("slow-1", CHARGE));

    assertThat(outcome)
        .as("a stdio server answering initialize after 6 s")
        .isInstanceOf(EffectOutcome.Succeeded.class);
    assertThat(Files.readAllLines(effects, StandardCharsets.UTF_8)).containsExactly("slow-1");
  }

  @Test
  void shouldRefuseSettingsWithBothOrNeitherUpstream() {
    JsonNode both = JSON.valueToTree(Map.of("url", "http://x/mcp", "command", List.of("srv")));
    JsonNode neither = JSON.valueToTree(Map.of("tool", "t"));

    assertThatThrownBy(() -> McpConnectorSettings.from("t", both)).hasMessageContaining("not both");
    assertThatThrownBy(() -> McpConnectorSettings.from("t", neither))
        .hasMessageContaining("not neither");
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
