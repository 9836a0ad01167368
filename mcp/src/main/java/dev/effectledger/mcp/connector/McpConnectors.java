package dev.effectledger.mcp.connector;

import dev.effectledger.connectors.ConnectorType;
import dev.effectledger.connectors.Connectors;

/** The {@code mcp} connector type, and the connectors an executor knows with it. */
public final class McpConnectors {

  /** tools.yaml's {@code connector: mcp}. */
  public static final ConnectorType TYPE =
      new ConnectorType(
          "mcp",
          p -> McpConnectorSettings.from(p.name(), p.settings()),
          (p, clock) ->
              new McpConnector(p.name(), McpConnectorSettings.from(p.name(), p.settings())));

  private McpConnectors() {}

  /** The built-in connectors and {@code mcp}. */
  public static Connectors all() {
    return Connectors.builtIn().with(TYPE);
  }
}
