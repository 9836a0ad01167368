package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InstructionsTest {

  @Test
  void shouldPassOneUpstreamsInstructionsOnAsTheyAre() {
    Map<String, String> byUpstream = new LinkedHashMap<>();
    byUpstream.put("payments", "Charge with create_charge.\n");
    byUpstream.put("search", null);
    byUpstream.put("docs", "  ");

    // to the last character (the reference server's end with a newline)
    assertThat(McpGateway.instructions(byUpstream)).isEqualTo("Charge with create_charge.\n");
  }

  @Test
  void shouldGiveEachUpstreamsInstructionsUnderItsNameWhenSeveralGiveSome() {
    Map<String, String> byUpstream = new LinkedHashMap<>();
    byUpstream.put("payments", "Charge with create_charge.");
    byUpstream.put("search", "Search first.\n");

    assertThat(McpGateway.instructions(byUpstream))
        .startsWith("These tools come from several MCP servers through one gateway")
        .contains("\n\n## payments\n\nCharge with create_charge.")
        .endsWith("\n\n## search\n\nSearch first.");
  }

  @Test
  void shouldSayNothingWhenNoUpstreamGivesInstructions() {
    Map<String, String> byUpstream = new LinkedHashMap<>();
    byUpstream.put("payments", null);

    assertThat(McpGateway.instructions(byUpstream)).isNull();
  }
}
