package dev.effectledger.mcp.embedded;

import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.embedded.CountingMcpServer.Fault;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@link CountingMcpServer}'s tools: {@code create_charge} (counting its effects in the {@link
 * ChargeLedger}, with its faults), {@code find_charge}, and {@code get_balance} (reporting progress
 * when asked).
 */
final class ChargeTools {

  /** Where the transport context keeps a call's {@code Idempotency-Key} header. */
  static final String HEADER_KEY = "idempotency-key-header";

  private final ChargeLedger ledger;
  private final CountingMcpServer owner;
  private volatile boolean honoursKeys;
  private volatile Duration slow = Duration.ofSeconds(2);

  ChargeTools(ChargeLedger ledger, CountingMcpServer owner) {
    this.ledger = ledger;
    this.owner = owner;
  }

  void honoursKeys(boolean honours) {
    this.honoursKeys = honours;
  }

  void slow(Duration delay) {
    this.slow = delay;
  }

  SyncToolSpecification[] specifications() {
    Map<String, Object> chargeSchema =
        schema(
            Map.of(
                "amount", Map.of("type", "integer"),
                "to", Map.of("type", "string"),
                "fault", Map.of("type", "string")),
            List.of("amount", "to"));
    return new SyncToolSpecification[] {
      SyncToolSpecification.builder()
          .tool(
              Tool.builder()
                  .name("create_charge")
                  .description("Charges a card: once per key")
                  .inputSchema(chargeSchema)
                  .annotations(
                      ToolAnnotations.builder()
                          .destructiveHint(true)
                          .idempotentHint(false)
                          .readOnlyHint(false)
                          .build())
                  .build())
          .callHandler(this::createCharge)
          .build(),
      SyncToolSpecification.builder()
          .tool(
              Tool.builder()
                  .name("find_charge")
                  .description("Whether the charge for a key happened")
                  .inputSchema(schema(Map.of("key", Map.of("type", "string")), List.of("key")))
                  .annotations(ToolAnnotations.builder().readOnlyHint(true).build())
                  .build())
          .callHandler(this::findCharge)
          .build(),
      SyncToolSpecification.builder()
          .tool(
              Tool.builder()
                  .name("get_balance")
                  .description("The account's balance")
                  .inputSchema(schema(Map.of("steps", Map.of("type", "integer")), List.of()))
                  .annotations(ToolAnnotations.builder().readOnlyHint(true).build())
                  .build())
          .callHandler(this::getBalance)
          .build()
    };
  }

  static Map<String, Object> schema(Map<String, Object> properties, List<String> required) {
    Map<String, Object> schema = new LinkedHashMap<>();
    schema.put("type", "object");
    schema.put("properties", properties);
    schema.put("required", required);
    return schema;
  }

  private CallToolResult createCharge(McpSyncServerExchange exchange, CallToolRequest request) {
    String key = keyOf(exchange, request);
    ledger.countRequest(key);
    Object traceparent = request.meta() == null ? null : request.meta().get("traceparent");
    if (traceparent != null) {
      ledger.traceparent(key, traceparent.toString());
    }
    Object header =
        exchange.transportContext() == null ? null : exchange.transportContext().get(HEADER_KEY);
    if (header != null) {
      ledger.countKeyHeader(header.toString());
    }
    Object asked = request.arguments() == null ? null : request.arguments().get("fault");
    Fault fault =
        asked != null
            ? Fault.valueOf(asked.toString().toUpperCase(Locale.ROOT))
            : ledger.takeFault(key);
    if (fault == Fault.ERROR_BEFORE) {
      return CallToolResult.builder().isError(true).addTextContent("card declined").build();
    }
    if (fault == Fault.PROTOCOL_ERROR) {
      throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
          .message("amount must be positive")
          .build();
    }
    if (honoursKeys && ledger.charge(key) != null) {
      return result(ledger.charge(key));
    }
    if (fault == Fault.SLOW) {
      sleep(slow);
    }
    Map<String, Object> charge = new LinkedHashMap<>();
    charge.put("id", ledger.nextId());
    charge.put("amount", request.arguments().get("amount"));
    charge.put("to", request.arguments().get("to"));
    ledger.effect(key, charge);
    // subscribers are told after the answer, not before it: a charge does not wait on them
    owner.notifySummaryUpdated();
    if (fault == Fault.DROP_AFTER) {
      owner.drop();
    }
    return result(charge);
  }

  private static CallToolResult result(Map<String, Object> charge) {
    return CallToolResult.builder()
        .addTextContent("charged " + charge.get("amount") + " to " + charge.get("to"))
        .structuredContent(charge)
        .build();
  }

  private CallToolResult findCharge(McpSyncServerExchange exchange, CallToolRequest request) {
    Map<String, Object> charge = ledger.charge(String.valueOf(request.arguments().get("key")));
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("found", charge != null);
    if (charge != null) {
      answer.put("id", charge.get("id"));
    }
    return CallToolResult.builder()
        .structuredContent(answer)
        .addTextContent(charge == null ? "no charge" : "charge " + charge.get("id"))
        .build();
  }

  private CallToolResult getBalance(McpSyncServerExchange exchange, CallToolRequest request) {
    // a caller that asks for progress gets `steps` notifications (default 2)
    // first, the result right after the last
    Object token = request.progressToken();
    if (token != null) {
      Object asked = request.arguments() == null ? null : request.arguments().get("steps");
      int steps = asked instanceof Number n ? n.intValue() : 2;
      for (int step = 1; step <= steps; step++) {
        exchange.progressNotification(
            new McpSchema.ProgressNotification(
                token, (double) step, (double) steps, "counting, step " + step));
      }
    }
    exchange.loggingNotification(
        new McpSchema.LoggingMessageNotification(
            McpSchema.LoggingLevel.NOTICE,
            "balance",
            "balance read: " + (100 - ledger.effectCount())));
    return CallToolResult.builder()
        .structuredContent(Map.of("balance", 100 - ledger.effectCount()))
        .addTextContent("balance " + (100 - ledger.effectCount()))
        .build();
  }

  private static String keyOf(McpSyncServerExchange exchange, CallToolRequest request) {
    Object key = request.meta() == null ? null : request.meta().get(McpMeta.IDEMPOTENCY_KEY);
    if (key == null && exchange.transportContext() != null) {
      key = exchange.transportContext().get(HEADER_KEY);
    }
    return key == null ? "" : key.toString();
  }

  private static void sleep(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
