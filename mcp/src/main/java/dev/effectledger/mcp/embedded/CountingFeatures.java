package dev.effectledger.mcp.embedded;

import static dev.effectledger.mcp.embedded.CountingMcpServer.CHARGE;
import static dev.effectledger.mcp.embedded.CountingMcpServer.CUSTOMERS;
import static dev.effectledger.mcp.embedded.CountingMcpServer.SUMMARY;

import io.modelcontextprotocol.server.McpServerFeatures.SyncCompletionSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncPromptSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceTemplateSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;

/**
 * The {@link CountingMcpServer}'s features besides its tools: the resource {@value
 * CountingMcpServer#SUMMARY}, the resource template {@value CountingMcpServer#CHARGE}, the prompt
 * {@code refund_policy}, and the completions of their arguments.
 */
final class CountingFeatures {

  private final ChargeLedger ledger;

  CountingFeatures(ChargeLedger ledger) {
    this.ledger = ledger;
  }

  SyncResourceTemplateSpecification chargeTemplate() {
    return new SyncResourceTemplateSpecification(
        McpSchema.ResourceTemplate.builder()
            .uriTemplate(CHARGE)
            .name("charge")
            .description("The charge made for a key")
            .mimeType("application/json")
            .build(),
        this::readCharge);
  }

  SyncCompletionSpecification[] completions() {
    return new SyncCompletionSpecification[] {
      new SyncCompletionSpecification(
          new McpSchema.PromptReference("refund_policy"),
          (exchange, request) -> completion(CUSTOMERS, request.argument().value())),
      new SyncCompletionSpecification(
          new McpSchema.ResourceReference(CHARGE),
          (exchange, request) -> completion(ledger.chargedKeys(), request.argument().value()))
    };
  }

  SyncResourceSpecification summary() {
    return new SyncResourceSpecification(
        McpSchema.Resource.builder()
            .uri(SUMMARY)
            .name("charges")
            .description("How many charges this server made")
            .mimeType("application/json")
            .build(),
        (exchange, request) ->
            new McpSchema.ReadResourceResult(
                List.of(
                    new McpSchema.TextResourceContents(
                        SUMMARY,
                        "application/json",
                        "{\"charges\":" + ledger.effectCount() + "}"))));
  }

  static SyncPromptSpecification refundPolicy() {
    return new SyncPromptSpecification(
        new McpSchema.Prompt(
            "refund_policy",
            "How to refund a customer",
            List.of(new McpSchema.PromptArgument("customer", "the customer", true))),
        (exchange, request) ->
            new McpSchema.GetPromptResult(
                "refund policy",
                List.of(
                    new McpSchema.PromptMessage(
                        McpSchema.Role.USER,
                        new McpSchema.TextContent(
                            "Refund "
                                + request.arguments().get("customer")
                                + " within 30 days.")))));
  }

  private McpSchema.ReadResourceResult readCharge(
      McpSyncServerExchange exchange, McpSchema.ReadResourceRequest request) {
    String prefix = CHARGE.substring(0, CHARGE.indexOf('{'));
    String key = request.uri().startsWith(prefix) ? request.uri().substring(prefix.length()) : "";
    Map<String, Object> charge = ledger.charge(key);
    if (charge == null) {
      throw McpError.builder(McpSchema.ErrorCodes.RESOURCE_NOT_FOUND)
          .message("no charge for key " + key)
          .build();
    }
    try {
      return new McpSchema.ReadResourceResult(
          List.of(
              new McpSchema.TextResourceContents(
                  request.uri(),
                  "application/json",
                  CountingMcpServer.JSON.writeValueAsString(charge))));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  static McpSchema.CompleteResult completion(List<String> values, String typed) {
    List<String> matching =
        values.stream().filter(v -> v.startsWith(typed == null ? "" : typed)).sorted().toList();
    return new McpSchema.CompleteResult(
        new McpSchema.CompleteResult.CompleteCompletion(matching, matching.size(), false));
  }
}
