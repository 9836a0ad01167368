package dev.effectledger.connectors;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.connectors.http.HttpConnector;
import dev.effectledger.connectors.http.HttpConnectorSettings;
import dev.effectledger.connectors.jdbc.JdbcConnector;
import dev.effectledger.connectors.jdbc.JdbcConnectorSettings;
import dev.effectledger.connectors.kafka.KafkaConnector;
import dev.effectledger.connectors.log.LogConnector;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Builds each tool's connector from its policy: {@code http}, {@code jdbc}, {@code kafka}, {@code log}. */
public final class Connectors {

  private Connectors() {}

  /**
   * One connector per tool on {@code lanes}, by tool name.
   *
   * @throws IllegalArgumentException listing every tool whose connector or settings are wrong
   */
  public static Map<String, Connector> forLanes(ToolPolicies policies, List<String> lanes, Clock clock) {
    Map<String, Connector> connectors = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      if (!lanes.contains(policy.lane())) {
        continue;
      }
      try {
        connectors.put(policy.name(), create(policy, clock));
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
  public static List<String> check(ToolPolicies policies) {
    List<String> problems = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      try {
        switch (policy.connector()) {
          case "http" -> HttpConnectorSettings.from(policy.name(), policy.settings());
          case "jdbc" -> JdbcConnectorSettings.from(policy.name(), policy.settings());
          case "kafka", "log" -> simple(policy, policy.connector().equals("kafka") ? "topic" : "file");
          default -> throw unknown(policy);
        }
      } catch (IllegalArgumentException e) {
        problems.addAll(List.of(e.getMessage().split("\n")));
      }
    }
    return problems;
  }

  public static Connector create(ToolPolicy policy, Clock clock) {
    String tool = policy.name();
    JsonNode settings = policy.settings();
    return switch (policy.connector()) {
      case "http" -> new HttpConnector(HttpConnectorSettings.from(tool, settings), clock);
      case "jdbc" -> JdbcConnector.pooled(JdbcConnectorSettings.from(tool, settings));
      case "kafka" -> new KafkaConnector(simple(policy, "topic"));
      case "log" -> new LogConnector(Path.of(simple(policy, "file")), clock);
      default -> throw unknown(policy);
    };
  }

  /** Settings of a connector that takes one required value. */
  private static String simple(ToolPolicy policy, String field) {
    Settings s = new Settings(policy.name(), policy.settings());
    s.allowOnly(Set.of(field));
    String value = s.requiredText(field, field.equals("topic") ? "the topic the effect records go to" : "the file to append effects to");
    s.check();
    return value;
  }

  private static IllegalArgumentException unknown(ToolPolicy policy) {
    return new IllegalArgumentException("tools." + policy.name() + ".connector: '" + policy.connector()
        + "' is not a connector; allowed: http, jdbc, kafka, log");
  }
}
