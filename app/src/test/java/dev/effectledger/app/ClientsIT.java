package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.gateway.Gateway;
import dev.effectledger.testkit.ClientSuites;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Python and TypeScript clients against the real thing: this test starts the embedded cluster,
 * the ledger, an executor in front of counting payment APIs and a gateway; the Java client calls
 * one step first; then the Python integration suite (clients/python/ tests_integration), the
 * TypeScript one (clients/typescript/test-integration, gateway and native) and the Python native
 * Kafka mode's (clients/python/tests_native, under Debian's python3 with Debian's
 * python3-confluent-kafka and python3-avro) run, each calling that same step again (the same key,
 * replayed) among their own actions; finally every action they report is counted on the payment
 * API: one effect each.
 */
@Tag("integration")
@Timeout(400)
class ClientsIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String REGISTRY_USER = "clients-it";
  private static final String REGISTRY_PASSWORD = "s3cr3t";
  private static final String REGISTRY_TOKEN = "clients-it-token";

  @Test
  void shouldTakeEffectOncePerActionFromJavaPythonAndTypeScriptWithOneKey() throws Exception {
    // A registry that demands credentials, as managed ones do: the Java parts carry them in the
    // URL's user info, the TypeScript and Python native clients as their basic option, and their
    // replaying clients as a bearer token (registering the intent schema and reading replies).
    SchemaRegistryServer schemas =
        SchemaRegistryServer.start()
            .requireAuthorization(
                "Basic "
                    + Base64.getEncoder()
                        .encodeToString(
                            (REGISTRY_USER + ":" + REGISTRY_PASSWORD)
                                .getBytes(StandardCharsets.UTF_8)),
                "Bearer " + REGISTRY_TOKEN);
    String registryUrl =
        schemas.url().replace("http://", "http://" + REGISTRY_USER + ":" + REGISTRY_PASSWORD + "@");
    try (schemas;
        GatewayPipeline pipeline =
            GatewayPipeline.start(kafka.bootstrapServers(), "clients-it", registryUrl);
        Gateway gateway =
            Gateway.start(pipeline.gatewayConfig("gw-clients", pipeline.ledgerUrl()));
        ToolCallClient java =
            ToolCallClient.builder()
                .bootstrapServers(pipeline.bootstrap())
                .schemaRegistryUrl(pipeline.registry())
                .keyRules(
                    "charge_card",
                    KeyRules.builder().ignore("/reason").require("/amount", "/to").build())
                .timeout(Duration.ofSeconds(60))
                .build()) {
      GatewayReadiness.awaitReady("gateway gw-clients", gateway, Duration.ofSeconds(90));
      // The ledger's file applied to tool-policy: the native clients' suites check that a client
      // given no key rules in code derives with these.
      PolicyTopic.publish(
          pipeline.kafka(),
          dev.effectledger.policy.AppliedPolicy.seed(pipeline.policies, pipeline.toolsYaml)
              .next(pipeline.policies, pipeline.toolsYaml, Instant.now(), "clients-it"),
          4);
      StepContext step = new StepContext("acme", "run-cross", "pay", "customer:7");
      CallResult first =
          java.invoke(ToolCall.of(step, "charge_card", "{\"amount\":700,\"to\":\"cus_7\"}"))
              .get(60, TimeUnit.SECONDS);
      assertThat(first).isInstanceOf(CallResult.Succeeded.class);
      assertThat(((CallResult.Succeeded) first).replayed()).isFalse();
      String javaKey = ((CallResult.Succeeded) first).key();
      Path report = Files.createTempFile("clients-it", ".jsonl");
      // One send_email step (a tool that refuses duplicates in flight) per native client, whose
      // effect takes 4 s: the client's second, concurrent call is answered DUPLICATE_IN_FLIGHT and
      // must wait for the first call's result, as the Java client does.
      pipeline.payments.slow(Duration.ofSeconds(4));
      Map<String, String> refuseKeys = new HashMap<>();
      for (String client : List.of("py", "ts")) {
        String key =
            IdempotencyKeys.derive(
                    new StepContext("acme", "run-" + client + "-native-refuse", "notify", ""),
                    "send_email",
                    "{\"to\":\"" + client + "@example.com\",\"subject\":\"receipt\"}",
                    KeyRules.NONE)
                .key();
        pipeline.payments.inject(key, CountingDownstream.Fault.SLOW_SUCCESS);
        refuseKeys.put("EFFECTLEDGER_REFUSE_KEY_" + client.toUpperCase(Locale.ROOT), key);
        // One reserve step (released after one retryable failure) per native client, whose first
        // request fails after 4 s: a second client listening by then, whose intent the ledger
        // reads after the release, must get the key's next life's answer, not the release.
        String released =
            IdempotencyKeys.derive(
                    new StepContext("acme", "run-" + client + "-native-release", "reserve", ""),
                    "reserve",
                    "{\"amount\":13}",
                    KeyRules.NONE)
                .key();
        pipeline.payments.inject(released, CountingDownstream.Fault.SLOW_UNAVAILABLE);
        refuseKeys.put("EFFECTLEDGER_RELEASE_KEY_" + client.toUpperCase(Locale.ROOT), released);
      }
      Map<String, String> env = new HashMap<>(refuseKeys);
      env.putAll(
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
              "run-cross/pay/customer:7",
              "EFFECTLEDGER_BOOTSTRAP",
              pipeline.bootstrap(),
              "EFFECTLEDGER_REGISTRY_URL",
              schemas.url(),
              "EFFECTLEDGER_REGISTRY_USER",
              REGISTRY_USER,
              "EFFECTLEDGER_REGISTRY_PASSWORD",
              REGISTRY_PASSWORD,
              "EFFECTLEDGER_REGISTRY_TOKEN",
              REGISTRY_TOKEN));

      ClientSuites.Run python = ClientSuites.python("tests_integration", env);
      ClientSuites.Run typescript = ClientSuites.npm("test:integration:dist", env);
      ClientSuites.Run pythonNative = ClientSuites.pythonNative("tests_native", env);

      assertThat(python.exit()).as(python.output()).isZero();
      assertThat(python.output()).contains("Ran 8 tests").contains("OK");
      assertThat(typescript.exit()).as(typescript.output()).isZero();
      assertThat(typescript.output()).contains("# pass 17").contains("# fail 0");
      assertThat(pythonNative.exit()).as(pythonNative.output()).isZero();
      assertThat(pythonNative.output()).contains("Ran 7 tests").contains("OK");
      List<JsonNode> actions = new ArrayList<>();
      for (String line : Files.readAllLines(report, StandardCharsets.UTF_8)) {
        actions.add(JSON.readTree(line));
      }
      assertThat(actions)
          .extracting(a -> a.get("name").asText())
          .containsExactlyInAnyOrder(
              "python: four retry layers",
              "python: after java",
              "python: attached after 202",
              "python: own key, reused",
              "python: bypass",
              "typescript: four retry layers",
              "typescript: after java and python",
              "typescript: attached after 202",
              "typescript: own key, reused",
              "typescript: bypass",
              "typescript native: four retry layers",
              "typescript native: after java, python and the gateway",
              "typescript native: duplicate refused in flight",
              "typescript native: answered after a release",
              "python native: four retry layers",
              "python native: after java and the others",
              "python native: duplicate refused in flight",
              "python native: answered after a release");
      for (JsonNode action : actions) {
        String key = action.get("key").asText();
        assertThat(pipeline.payments.effects(key)).as("effects of %s", action).isEqualTo(1);
        // An operator's approval runs the action once more, under one fresh effect key.
        assertThat(
                pipeline.payments.effectsByKey().entrySet().stream()
                    .filter(e -> e.getKey().startsWith(key + "~bypass-"))
                    .map(Map.Entry::getValue)
                    .toList())
            .as("effects of %s under a bypass effect key", action)
            .isEqualTo(action.path("bypassed").asBoolean() ? List.of(1) : List.of());
      }
      assertThat(actions)
          .filteredOn(a -> a.get("name").asText().contains("after java"))
          .extracting(a -> a.get("key").asText())
          .containsExactly(javaKey, javaKey, javaKey, javaKey);
    }
  }
}
