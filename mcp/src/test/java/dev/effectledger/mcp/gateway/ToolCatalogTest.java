package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.mcp.gateway.McpGatewayConfig.Hint;
import dev.effectledger.policy.ToolClass;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ToolCatalogTest {

  private static Tool tool(String name, ToolAnnotations annotations) {
    return Tool.builder()
        .name(name)
        .inputSchema(Map.of("type", "object"))
        .annotations(annotations)
        .build();
  }

  private static ToolAnnotations hints(Boolean readOnly, Boolean idempotent, Boolean destructive) {
    return ToolAnnotations.builder()
        .readOnlyHint(readOnly)
        .idempotentHint(idempotent)
        .destructiveHint(destructive)
        .build();
  }

  @Test
  void shouldPrefixNamesOnlyWhereTwoUpstreamsHaveTheSameTool() {
    Map<String, List<Tool>> tools = new LinkedHashMap<>();
    tools.put("payments", List.of(tool("create_charge", null), tool("search", null)));
    tools.put("files", List.of(tool("write_file", null), tool("search", null)));

    ToolCatalog catalog = ToolCatalog.of(tools);

    assertThat(catalog.entries())
        .extracting(ToolCatalog.Entry::name)
        .containsExactly("create_charge", "payments_search", "write_file", "files_search");
    ToolCatalog.Entry search = catalog.entry("files_search").orElseThrow();
    assertThat(search.upstream()).isEqualTo("files");
    assertThat(search.tool().name()).isEqualTo("search"); // called upstream by its own name
    assertThat(search.listed().name()).isEqualTo("files_search"); // listed under the gateway's
  }

  @Test
  void shouldKeepTheNamesItListedWhenAnUpstreamsToolsChange() {
    Map<String, List<Tool>> tools = new LinkedHashMap<>();
    tools.put("payments", List.of(tool("create_charge", null), tool("refund", null)));
    tools.put("files", List.of(tool("write_file", null)));
    ToolCatalog before = ToolCatalog.of(tools);

    // files gains a tool whose name payments' already has, and payments loses one
    Map<String, List<Tool>> changed = new LinkedHashMap<>();
    changed.put("payments", List.of(tool("create_charge", null)));
    changed.put("files", List.of(tool("write_file", null), tool("create_charge", null)));
    ToolCatalog after = before.updated(changed);

    // the tool agents (and tools.yaml) already know keeps its name; the newcomer is prefixed
    assertThat(after.entries())
        .extracting(ToolCatalog.Entry::name)
        .containsExactly("create_charge", "write_file", "files_create_charge");
    assertThat(after.entry("create_charge").orElseThrow().upstream()).isEqualTo("payments");
    assertThat(after.entry("refund")).isEmpty();
    // from scratch, the same lists prefix both, as at a start
    assertThat(ToolCatalog.of(changed).entries())
        .extracting(ToolCatalog.Entry::name)
        .containsExactly("payments_create_charge", "write_file", "files_create_charge");
  }

  @Test
  void shouldReadTheClassFromTheStrongestHint() {
    assertThat(ToolCatalog.hintOf(null)).isEqualTo(Hint.NONE);
    assertThat(ToolCatalog.hintOf(hints(null, null, null))).isEqualTo(Hint.NONE);
    assertThat(ToolCatalog.hintOf(hints(true, false, true))).isEqualTo(Hint.READ_ONLY);
    assertThat(ToolCatalog.hintOf(hints(false, true, true))).isEqualTo(Hint.IDEMPOTENT);
    assertThat(ToolCatalog.hintOf(hints(false, false, true))).isEqualTo(Hint.DESTRUCTIVE);
    assertThat(ToolCatalog.hintOf(hints(false, false, false))).isEqualTo(Hint.NONE);
  }

  @Test
  void shouldMapHintsToClassesAsDocumentedUnlessOverridden() {
    ToolCatalog catalog =
        ToolCatalog.of(
            Map.of(
                "u",
                List.of(
                    tool("read", hints(true, null, null)),
                    tool("put", hints(false, true, null)),
                    tool("send", null))));
    Map<Hint, ToolClass> mapping = McpGatewayConfig.defaultAnnotations();

    assertThat(ToolCatalog.classOf(catalog.entry("read").orElseThrow(), mapping))
        .isEqualTo(ToolClass.READ);
    assertThat(ToolCatalog.classOf(catalog.entry("put").orElseThrow(), mapping))
        .isEqualTo(ToolClass.WRITE_IDEMPOTENT);
    assertThat(ToolCatalog.classOf(catalog.entry("send").orElseThrow(), mapping))
        .isEqualTo(ToolClass.IRREVERSIBLE);
    mapping.put(Hint.NONE, ToolClass.WRITE_NON_IDEMPOTENT);
    assertThat(ToolCatalog.classOf(catalog.entry("send").orElseThrow(), mapping))
        .isEqualTo(ToolClass.WRITE_NON_IDEMPOTENT);
  }
}
