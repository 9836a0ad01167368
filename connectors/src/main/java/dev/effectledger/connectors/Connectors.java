package dev.effectledger.connectors;

import dev.effectledger.connectors.http.HttpConnector;
import dev.effectledger.connectors.http.HttpConnectorSettings;
import dev.effectledger.connectors.http.HttpSequenceConnector;
import dev.effectledger.connectors.jdbc.JdbcConnector;
import dev.effectledger.connectors.jdbc.JdbcConnectorSettings;
import dev.effectledger.connectors.kafka.KafkaConnector;
import dev.effectledger.connectors.log.LogConnector;
import dev.effectledger.policy.FieldReader;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The connectors tools can name, by name, and the connectors of a set of lanes built from them.
 * {@link #builtIn()} knows {@code http}, {@code http-sequence}, {@code jdbc}, {@code kafka} and
 * {@code log}; {@link #with} adds another (an MCP connector, a vendor's SDK) without touching the
 * others.
 */
public final class Connectors {

  private static final Connectors BUILT_IN =
      new Connectors(Map.of())
          .with(
              new ConnectorType(
                  "http",
                  p -> HttpConnectorSettings.from(p.name(), p.settings()),
                  (p, clock) ->
                      new HttpConnector(HttpConnectorSettings.from(p.name(), p.settings()), clock)))
          .with(
              new ConnectorType(
                  "http-sequence",
                  p -> HttpSequenceConnector.check(p.name(), p.settings()),
                  (p, clock) -> HttpSequenceConnector.from(p.name(), p.settings(), clock)))
          .with(
              new ConnectorType(
                  "jdbc",
                  p -> JdbcConnectorSettings.from(p.name(), p.settings()),
                  (p, clock) ->
                      JdbcConnector.pooled(JdbcConnectorSettings.from(p.name(), p.settings()))))
          .with(
              new ConnectorType(
                  "kafka",
                  p -> oneSetting(p, "topic", "give the topic the effect records go to"),
                  (p, clock) ->
                      new KafkaConnector(
                          oneSetting(p, "topic", "give the topic the effect records go to"))))
          .with(
              new ConnectorType(
                  "log",
                  p -> oneSetting(p, "file", "give the file to append effects to"),
                  (p, clock) ->
                      new LogConnector(
                          Path.of(oneSetting(p, "file", "give the file to append effects to")),
                          clock)));

  /** By name, sorted: problems list the names in order. */
  private final SortedMap<String, ConnectorType> types;

  private Connectors(Map<String, ConnectorType> types) {
    this.types = Collections.unmodifiableSortedMap(new TreeMap<>(types));
  }

  /** The connectors this release ships. */
  public static Connectors builtIn() {
    return BUILT_IN;
  }

  /** These connectors and {@code type}, which replaces one of the same name. */
  public Connectors with(ConnectorType type) {
    Map<String, ConnectorType> more = new TreeMap<>(types);
    more.put(type.name(), type);
    return new Connectors(more);
  }

  /**
   * One connector per tool on {@code lanes}, by tool name, from the built-in connectors.
   *
   * @throws IllegalArgumentException listing every tool whose connector or settings are wrong
   */
  public static Map<String, Connector> forLanes(
      ToolPolicies policies, List<String> lanes, Clock clock) {
    return BUILT_IN.create(policies, lanes, clock);
  }

  /** Checks every tool's connector against the built-in connectors; see {@link #checkAll}. */
  public static List<String> check(ToolPolicies policies) {
    return BUILT_IN.checkAll(policies);
  }

  /** The built-in connector for one tool. */
  public static Connector create(ToolPolicy policy, Clock clock) {
    return BUILT_IN.connectorFor(policy, clock);
  }

  /**
   * One connector per tool on {@code lanes}, by tool name.
   *
   * @throws IllegalArgumentException listing every tool whose connector or settings are wrong
   */
  public Map<String, Connector> create(ToolPolicies policies, List<String> lanes, Clock clock) {
    Map<String, Connector> connectors = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      if (!lanes.contains(policy.lane())) {
        continue;
      }
      try {
        connectors.put(policy.name(), connectorFor(policy, clock));
      } catch (IllegalArgumentException e) {
        problems.add(e.getMessage());
      }
    }
    if (!problems.isEmpty()) {
      connectors.values().forEach(Connector::close);
      throw new IllegalArgumentException(String.join("\n", problems));
    }
    return connectors;
  }

  /**
   * Checks every tool's connector name and settings without connecting to anything; one line per
   * problem, empty when all are valid.
   */
  public List<String> checkAll(ToolPolicies policies) {
    List<String> problems = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      try {
        typeOf(policy).check().accept(policy);
      } catch (IllegalArgumentException e) {
        problems.addAll(List.of(e.getMessage().split("\n")));
      }
    }
    return problems;
  }

  /** The connector for one tool. */
  public Connector connectorFor(ToolPolicy policy, Clock clock) {
    return typeOf(policy).create().create(policy, clock);
  }

  private ConnectorType typeOf(ToolPolicy policy) {
    ConnectorType type = types.get(policy.connector());
    if (type == null) {
      throw new IllegalArgumentException(
          "tools."
              + policy.name()
              + ".connector: '"
              + policy.connector()
              + "' is not a connector; allowed: "
              + String.join(", ", types.keySet()));
    }
    return type;
  }

  /** The one required setting of a connector that takes one. */
  private static String oneSetting(ToolPolicy policy, String field, String what) {
    FieldReader s = FieldReader.of("tools." + policy.name() + ".settings", policy.settings());
    s.allowOnly(List.of(field));
    String value = s.requiredText(field, what);
    s.check();
    return value;
  }
}
