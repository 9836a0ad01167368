package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.mcp.gateway.McpGatewayConfig.Hint;
import dev.effectledger.policy.ToolClass;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class McpGatewayConfigTest {

  private static McpGatewayConfig parse(String yaml) throws Exception {
    return McpGatewayConfig.parse(new YAMLMapper().readTree(yaml), Path.of("/etc/el"));
  }

  @Test
  void shouldReadTheExampleWithItsDefaults() throws Exception {
    McpGatewayConfig config =
        parse(
            """
            tenant: acme
            kafka: {bootstrap.servers: "b:9092"}
            annotations: {none: write-non-idempotent}
            upstreams:
              payments: {url: http://127.0.0.1:8095/mcp}
              files: {command: [npx, -y, server]}
            """);

    assertThat(config.host()).isEqualTo("127.0.0.1"); // loopback unless told otherwise
    assertThat(config.path()).isEqualTo("/mcp");
    assertThat(config.callWait()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.runFallback()).isEqualTo(McpGatewayConfig.RunFallback.REFUSE);
    assertThat(config.tools()).isEqualTo(Path.of("/etc/el/tools.yaml"));
    assertThat(config.annotations())
        .containsEntry(Hint.NONE, ToolClass.WRITE_NON_IDEMPOTENT)
        .containsEntry(Hint.READ_ONLY, ToolClass.READ);
    assertThat(config.upstreams()).containsOnlyKeys("payments", "files");
    assertThat(config.kafka().getProperty("max.block.ms")).isEqualTo("10000");
    assertThat(config.logging()).isEqualTo(McpSchema.LoggingLevel.INFO);
    assertThat(config.refresh()).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void shouldReadTheRelayedLogLevelAndTheRefresh() throws Exception {
    String base =
        """
        tenant: acme
        kafka: {bootstrap.servers: "b:9092"}
        upstreams: {payments: {url: http://127.0.0.1:8095/mcp}}
        """;

    assertThat(parse(base + "logging: warning\nrefresh: 30s").logging())
        .isEqualTo(McpSchema.LoggingLevel.WARNING);
    assertThat(parse(base + "logging: off").logging()).isNull();
    assertThat(parse(base + "refresh: 30s").refresh()).isEqualTo(Duration.ofSeconds(30));
    assertThatThrownBy(() -> parse(base + "logging: loud"))
        .hasMessageContaining("'loud' is not an MCP log level");
  }

  @Test
  void shouldListEveryProblemAtOnce() {
    assertThatThrownBy(
            () ->
                parse(
                    """
                    listen: {path: mcp}
                    kafka: {bootstrap.servers: "b:9092"}
                    run: {fallback: maybe}
                    annotations: {readOnly: sometimes}
                    upstreams:
                      "bad name": {url: http://x/mcp}
                      both: {url: http://x/mcp, command: [srv]}
                    """))
        .hasMessageContaining("tenant")
        .hasMessageContaining("must start with /")
        .hasMessageContaining("'maybe' is not allowed")
        .hasMessageContaining("'sometimes' is not a class")
        .hasMessageContaining("an upstream's name")
        .hasMessageContaining("not both");
  }
}
