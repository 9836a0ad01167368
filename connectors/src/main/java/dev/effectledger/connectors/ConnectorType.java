package dev.effectledger.connectors;

import dev.effectledger.policy.ToolPolicy;
import java.time.Clock;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One kind of connector a tool policy can name: how its settings are checked without connecting to
 * anything, and how it is made. A new connector plugs in by registering one ({@link
 * Connectors#with}).
 *
 * @param name what tools.yaml's {@code connector:} field says
 * @param check validates a policy's settings, throwing {@link IllegalArgumentException} with one
 *     line per problem
 * @param create makes the connector for a policy (its settings already checked)
 */
public record ConnectorType(String name, Consumer<ToolPolicy> check, Factory create) {

  /** Makes a connector for one tool. */
  @FunctionalInterface
  public interface Factory {
    Connector create(ToolPolicy policy, Clock clock);
  }

  public ConnectorType {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(check, "check");
    Objects.requireNonNull(create, "create");
  }
}
