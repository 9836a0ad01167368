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
    assertThat(config.writeProgress()).isEqualTo(Duration.ofSeconds(5));
    assertThat(config.runFallback()).isEqualTo(McpGatewayConfig.RunFallback.REFUSE);
    assertThat(config.tools()).isEqualTo(Path.of("/etc/el/tools.yaml"));
    assertThat(config.annotations())
        .containsEntry(Hint.NONE, ToolClass.WRITE_NON_IDEMPOTENT)
        .containsEntry(Hint.READ_ONLY, ToolClass.READ);
    assertThat(config.upstreams()).containsOnlyKeys("payments", "files");
    assertThat(config.kafka().getProperty("max.block.ms")).isEqualTo("10000");
    assertThat(config.logging()).isEqualTo(McpSchema.LoggingLevel.INFO);
    assertThat(config.refresh()).isEqualTo(Duration.ofMinutes(5));
    assertThat(config.agentSessions()).isEqualTo(McpGatewayConfig.AgentSessionMode.OWN);
    assertThat(config.agentIdle()).isEqualTo(Duration.ofMinutes(10));
    assertThat(config.interactive()).isEmpty();
  }

  @Test
  void shouldReadTheAgentsSessionsAndTheInteractiveWriteChoices() throws Exception {
    String base =
        """
        tenant: acme
        kafka: {bootstrap.servers: "b:9092"}
        upstreams: {payments: {url: http://127.0.0.1:8095/mcp}}
        """;

    McpGatewayConfig config =
        parse(
            base
                + "agents: {sessions: own, idle: 30s}\n"
                + "interactive: {confirm: pass-through, approve: refuse}");
    assertThat(config.agentIdle()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.interactive())
        .containsEntry("confirm", McpGatewayConfig.Interactive.PASS_THROUGH)
        .containsEntry("approve", McpGatewayConfig.Interactive.REFUSE);
    assertThat(parse(base + "agents: {sessions: shared}").agentSessions())
        .isEqualTo(McpGatewayConfig.AgentSessionMode.SHARED);
    assertThatThrownBy(() -> parse(base + "interactive: {confirm: ask}"))
        .hasMessageContaining("'ask' is not a choice; give refuse or pass-through");
    assertThatThrownBy(
            () -> parse(base + "agents: {sessions: shared}\ninteractive: {confirm: refuse}"))
        .hasMessageContaining("needs agents.sessions: own");
    assertThatThrownBy(() -> parse(base + "agents: {idle: 0s}"))
        .hasMessageContaining("idle: '0s' is not a positive duration");
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
  void shouldReadTheAuthSectionWithItsDefaultsAndTakeTheTenantFromTokensThen() throws Exception {
    String base =
        """
        kafka: {bootstrap.servers: "b:9092"}
        upstreams: {payments: {url: http://127.0.0.1:8095/mcp}}
        """;

    McpGatewayConfig config =
        parse(
            base
                + "auth: {issuer: 'https://idp.example.com', audience:"
                + " 'https://mcp.example.com/mcp', tenantClaim: org}\n");

    assertThat(config.tenant()).as("from each caller's token").isNull();
    assertThat(config.auth().issuer()).hasToString("https://idp.example.com");
    assertThat(config.auth().audience()).isEqualTo("https://mcp.example.com/mcp");
    assertThat(config.auth().tenantClaim()).isEqualTo("org");
    assertThat(config.auth().writeScope()).isEqualTo("tools:write");
    assertThat(config.auth().clockSkew()).isEqualTo(Duration.ofSeconds(60));
    assertThat(parse("tenant: acme\n" + base).auth()).as("no section: no tokens").isNull();
    assertThatThrownBy(() -> parse(base + "auth: {issuer: 'https://idp.example.com'}\n"))
        .hasMessageContaining("mcp.auth.audience")
        .hasMessageContaining("this gateway's URL");
    assertThatThrownBy(() -> parse(base))
        .as("neither a tenant nor tokens")
        .hasMessageContaining("mcp.tenant");
  }

  @Test
  void shouldReadEachTenantsFairShare() throws Exception {
    String base =
        """
        tenant: acme
        kafka: {bootstrap.servers: "b:9092"}
        upstreams: {payments: {url: http://127.0.0.1:8095/mcp}}
        """;

    McpGatewayConfig config =
        parse(
            base
                + "limits: {default: {intentsPerSecond: 20, waiting: 5}, tenants: {globex:"
                + " {intentsPerSecond: 100}}}\n");

    assertThat(config.fairShare().limits("acme"))
        .isEqualTo(new dev.effectledger.auth.FairShare.Limits(20, 0, 5, 0));
    assertThat(config.fairShare().limits("globex"))
        .as("its own rate, the defaults' rest")
        .isEqualTo(new dev.effectledger.auth.FairShare.Limits(100, 0, 5, 0));
    assertThat(parse(base).fairShare().limits("acme"))
        .isEqualTo(dev.effectledger.auth.FairShare.Limits.NONE);
    assertThatThrownBy(() -> parse(base + "limits: {default: {waiting: -1}}\n"))
        .hasMessageContaining("waiting must be a whole number");
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
