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

  public static Connector create(ToolPolicy policy, Clock clock) {
    String tool = policy.name();
    JsonNode settings = policy.settings();
    return switch (policy.connector()) {
      case "http" -> new HttpConnector(HttpConnectorSettings.from(tool, settings), clock);
      case "jdbc" -> JdbcConnector.pooled(JdbcConnectorSettings.from(tool, settings));
      case "kafka" -> {
        Settings s = new Settings(tool, settings);
        s.allowOnly(Set.of("topic"));
        String topic = s.requiredText("topic", "the topic the effect records go to");
        s.check();
        yield new KafkaConnector(topic);
      }
      case "log" -> {
        Settings s = new Settings(tool, settings);
        s.allowOnly(Set.of("file"));
        String file = s.requiredText("file", "the file to append effects to");
        s.check();
        yield new LogConnector(Path.of(file), clock);
      }
      default -> throw new IllegalArgumentException("tools." + tool + ".connector: '" + policy.connector()
          + "' is not a connector; allowed: http, jdbc, kafka, log");
    };
  }
}
