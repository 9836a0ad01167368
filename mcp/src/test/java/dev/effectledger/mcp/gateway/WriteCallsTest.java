package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.mcp.McpMeta;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class WriteCallsTest {

  private static final Supplier<String> SESSION = () -> "s-1";

  private static McpGatewayConfig config(String run) throws Exception {
    return McpGatewayConfig.parse(
        new YAMLMapper()
            .readTree(
                """
                tenant: acme
                kafka: {bootstrap.servers: "b:9092"}
                upstreams: {payments: {url: http://127.0.0.1:8095/mcp}}
                """
                    + run),
        Path.of("/etc/el"));
  }

  private static Map<String, Object> meta(String... keysAndValues) {
    Map<String, Object> meta = new HashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      meta.put(keysAndValues[i], keysAndValues[i + 1]);
    }
    return meta;
  }

  @Test
  void shouldTakeTheRunFromMetaBeforeTheHeaderAndTheConfiguredOne() throws Exception {
    McpGatewayConfig configured = config("run: {header: X-Agent-Run, id: fixed}");

    assertThat(WriteCalls.runOf(meta(McpMeta.RUN_ID, "r-meta"), "r-header", configured, SESSION))
        .isEqualTo("r-meta");
    assertThat(WriteCalls.runOf(meta(McpMeta.RUN_ID, " "), "r-header", configured, SESSION))
        .isEqualTo("r-header"); // a blank run is none
    assertThat(WriteCalls.runOf(meta(), null, configured, SESSION)).isEqualTo("fixed");
  }

  @Test
  void shouldFallBackToTheSessionOnlyWhenConfiguredTo() throws Exception {
    assertThat(WriteCalls.runOf(meta(), null, config("run: {fallback: session}"), SESSION))
        .isEqualTo("mcp-session:s-1");
    assertThat(WriteCalls.runOf(meta(), "", config("run: {fallback: refuse}"), SESSION)).isNull();
    assertThat(WriteCalls.runOf(meta(), null, config(""), SESSION)).isNull();
  }

  @Test
  void shouldRecordTheKeyOnlyRunWhenMetaGivesTheKeyAndNoRunIsNamed() throws Exception {
    Map<String, Object> keyed = meta(McpMeta.IDEMPOTENCY_KEY, "K-1");

    assertThat(WriteCalls.runOf(keyed, null, config(""), SESSION))
        .isEqualTo(WriteCalls.KEY_ONLY_RUN)
        .isEqualTo("mcp-idempotency-key");
    // a run named any other way is the one recorded
    assertThat(WriteCalls.runOf(keyed, "r-header", config(""), SESSION)).isEqualTo("r-header");
    assertThat(WriteCalls.runOf(keyed, null, config("run: {fallback: session}"), SESSION))
        .isEqualTo("mcp-session:s-1");
  }
}
