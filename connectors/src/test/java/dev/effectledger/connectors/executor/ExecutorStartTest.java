package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.jdbc.JdbcConnectorSettings;
import dev.effectledger.connectors.kafka.KafkaConnector;
import dev.effectledger.connectors.log.LogConnector;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

class ExecutorStartTest {

  private static final ExecutorConfig CONFIG =
      ExecutorConfig.of(new Properties(), List.of("payments"), "mock://x");

  private static ToolPolicy irreversible(String name, String lane) {
    return ToolPolicy.builder(name, ToolClass.IRREVERSIBLE)
        .window(Duration.ofDays(30))
        .pendingTimeout(Duration.ofMinutes(2))
        .onInFlight(InFlightPolicy.COALESCE)
        .onAmbiguous(AmbiguityPolicy.HOLD)
        .lane(lane)
        .connector("log")
        .maxAttempts(3)
        .bypassAllowed(false)
        .build();
  }

  private static void refuse(
      ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies) {
    new LaneTools(config.lanes(), connectors, policies).refuseUnsafeIrreversibleTools();
  }

  @Test
  void shouldRefuseIrreversibleToolWhoseConnectorCanActTwiceNamingIt() {
    ToolPolicies policies = ToolPolicies.of(irreversible("wire_money", "payments"));

    assertThatThrownBy(
            () ->
                refuse(
                    CONFIG,
                    Map.of("wire_money", new LogConnector(Path.of("x"), Clock.systemUTC())),
                    policies))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("[wire_money]")
        .hasMessageContaining("neither honours keys nor is transactional");
  }

  @Test
  void shouldAcceptIrreversibleToolOnTransactionalConnectorAndIgnoreOtherLanes() {
    ToolPolicies policies =
        ToolPolicies.of(irreversible("publish", "payments"), irreversible("elsewhere", "other"));

    assertThatCode(() -> refuse(CONFIG, Map.of("publish", new KafkaConnector("t")), policies))
        .doesNotThrowAnyException();
  }

  @Test
  void shouldAcceptIrreversibleToolOnKeyIgnoringApiWhoseEffectsCanBeLookedUp() throws Exception {
    var json = new ObjectMapper();
    ToolPolicies withLookup =
        ToolPolicies.of(
            irreversible("charge", "payments")
                .withSettings(
                    "http",
                    json.readTree(
                        "{\"url\":\"http://127.0.0.1:1/charges\",\"honoursKeys\":false,\"lookupUrl\":\"http://127.0.0.1:1/charges?key={key}\"}")));
    ToolPolicies withoutLookup =
        ToolPolicies.of(
            irreversible("charge", "payments")
                .withSettings(
                    "http",
                    json.readTree(
                        "{\"url\":\"http://127.0.0.1:1/charges\",\"honoursKeys\":false}")));

    assertThatCode(
            () ->
                refuse(
                    CONFIG,
                    Connectors.forLanes(withLookup, List.of("payments"), Clock.systemUTC()),
                    withLookup))
        .doesNotThrowAnyException();
    assertThatThrownBy(
            () ->
                refuse(
                    CONFIG,
                    Connectors.forLanes(withoutLookup, List.of("payments"), Clock.systemUTC()),
                    withoutLookup))
        .hasMessageContaining("[charge]")
        .hasMessageContaining("look an effect up");
  }

  @Test
  void shouldRefuseIrreversibleToolWithoutConnector() {
    assertThatThrownBy(
            () -> refuse(CONFIG, Map.of(), ToolPolicies.of(irreversible("wire_money", "payments"))))
        .hasMessageContaining("wire_money");
  }

  @Test
  void shouldRejectUnknownConnectorNameAndBadSettingsTogether() throws Exception {
    var json = new ObjectMapper();
    ToolPolicies policies =
        ToolPolicies.of(
            irreversible("a", "payments").withSettings("smtp", json.readTree("{}")),
            irreversible("b", "payments")
                .withSettings("jdbc", json.readTree("{\"url\":\"postgres://x\"}")));

    assertThatThrownBy(() -> Connectors.forLanes(policies, List.of("payments"), Clock.systemUTC()))
        .hasMessageContaining(
            "tools.a.connector: 'smtp' is not a connector; allowed: http, http-sequence, jdbc, kafka, log")
        .hasMessageContaining("tools.b.settings.url: 'postgres://x' must start with jdbc:")
        .hasMessageContaining("tools.b.settings.statement: missing");
    JdbcConnectorSettings.class.getName();
  }

  @Test
  void shouldCheckSettingsWithoutConnecting() throws Exception {
    var json = new ObjectMapper();
    ToolPolicies policies =
        ToolPolicies.of(
            irreversible("a", "payments").withSettings("kafka", json.readTree("{}")),
            irreversible("b", "payments")
                .withSettings(
                    "jdbc",
                    json.readTree(
                        "{\"url\":\"jdbc:postgresql://127.0.0.1:1/x\",\"statement\":\"SELECT 1\"}")));

    Assertions.assertThat(Connectors.check(policies))
        .containsExactly(
            "tools.a.settings.topic: missing; give the topic the effect records go to");
  }
}
