package dev.effectledger.mcp;

/**
 * The names Effect Ledger uses in MCP messages. MCP's {@code _meta} keys take a reverse-DNS prefix
 * (the specification reserves {@code modelcontextprotocol.io/} and {@code mcp.dev/}); ours is
 * {@code effectledger.dev/}.
 */
public final class McpMeta {

  /** In a {@code tools/call}'s {@code _meta}: the key the upstream should dedup the effect on. */
  public static final String IDEMPOTENCY_KEY = "effectledger.dev/idempotencyKey";

  /** In a {@code tools/call}'s {@code _meta}, from an orchestrator: the durable run's id. */
  public static final String RUN_ID = "effectledger.dev/runId";

  /** In a {@code tools/call}'s {@code _meta}, from an orchestrator: the logical step's id. */
  public static final String STEP_ID = "effectledger.dev/stepId";

  /** In a {@code tools/call}'s {@code _meta}, from an orchestrator: the business scope. */
  public static final String SCOPE = "effectledger.dev/scope";

  /** In a gateway's {@code CallToolResult}'s {@code _meta}: the answer is a stored one. */
  public static final String REPLAYED = "effectledger.dev/replayed";

  /** In a gateway's {@code CallToolResult}'s {@code _meta}: the downstream's id of the effect. */
  public static final String EFFECT_ID = "effectledger.dev/effectId";

  /** The HTTP header the key also travels in over Streamable HTTP, as HTTP APIs take it. */
  public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

  private McpMeta() {}
}
