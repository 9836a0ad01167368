package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Python client (clients/python) against the real thing: this test starts the embedded cluster,
 * the ledger, an executor in front of counting payment APIs and a gateway, has the Java client call
 * one step first, then runs the Python integration suite (clients/python/ tests_integration) with
 * python3 and checks, on the payment API, that every action the suite reports took effect exactly
 * once.
 */
@Tag("integration")
@Timeout(300)
class PythonClientIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  static final Path PYTHON_CLIENT = Path.of("..", "clients", "python");
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void shouldPassThePythonSuiteWithOneEffectPerActionAndTheJavaClientsKeys() throws Exception {
    try (GatewayPipeline pipeline =
            GatewayPipeline.start(kafka.bootstrapServers(), "python-client-it");
        Gateway gateway = Gateway.start(pipeline.gatewayConfig("gw-py", pipeline.ledgerUrl()));
        ToolCallClient java =
            ToolCallClient.builder()
                .bootstrapServers(pipeline.bootstrap())
                .schemaRegistryUrl(pipeline.registry())
                .keyRules(
                    "charge_card",
                    KeyRules.builder().ignore("/reason").require("/amount", "/to").build())
                .timeout(Duration.ofSeconds(60))
                .build()) {
      await().atMost(Duration.ofSeconds(90)).until(gateway::isReady);
      StepContext step = new StepContext("acme", "run-cross", "pay", "customer:7");
      CallResult first =
          java.invoke(ToolCall.of(step, "charge_card", "{\"amount\":700,\"to\":\"cus_7\"}"))
              .get(60, TimeUnit.SECONDS);
      assertThat(first).isInstanceOf(CallResult.Succeeded.class);
      String javaKey = ((CallResult.Succeeded) first).key();
      Path report = Files.createTempFile("python-client-it", ".jsonl");

      Run run =
          python(
              Map.of(
                  "EFFECTLEDGER_GATEWAY_URL",
                  gateway.uri().toString(),
                  "EFFECTLEDGER_TOKEN",
                  GatewayPipeline.TOKEN,
                  "EFFECTLEDGER_REPORT",
                  report.toString(),
                  "EFFECTLEDGER_JAVA_KEY",
                  javaKey,
                  "EFFECTLEDGER_JAVA_STEP",
                  "run-cross/pay/customer:7"),
              "tests_integration");

      assertThat(run.exit()).as(run.output()).isZero();
      assertThat(run.output()).contains("Ran 7 tests").contains("OK");
      List<JsonNode> actions = new ArrayList<>();
      for (String line : Files.readAllLines(report, StandardCharsets.UTF_8)) {
        actions.add(JSON.readTree(line));
      }
      assertThat(actions)
          .extracting(a -> a.get("name").asText())
          .containsExactlyInAnyOrder(
              "four retry layers", "java then python", "attached after 202", "own key, reused");
      for (JsonNode action : actions) {
        assertThat(pipeline.payments.effects(action.get("key").asText()))
            .as("effects of %s", action)
            .isEqualTo(1);
      }
      assertThat(actions)
          .filteredOn(a -> a.get("name").asText().equals("java then python"))
          .extracting(a -> a.get("key").asText())
          .containsExactly(javaKey);
    }
  }

  record Run(int exit, String output) {}

  /** Runs {@code python3 -m unittest} over a suite of the Python client, with its sources. */
  static Run python(Map<String, String> env, String suite)
      throws IOException, InterruptedException {
    ProcessBuilder builder =
        new ProcessBuilder("python3", "-m", "unittest", "discover", "-v", "-s", suite, "-t", ".")
            .directory(PYTHON_CLIENT.toFile())
            .redirectErrorStream(true);
    builder.environment().put("PYTHONPATH", "src");
    builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    builder.environment().putAll(env);
    Process process = builder.start();
    byte[] out = process.getInputStream().readAllBytes();
    if (!process.waitFor(240, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return new Run(process.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
