package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The built jar as separate OS processes, a processor and an executor, against the embedded broker:
 * a call goes through, its key is queried over HTTP, /metrics is scraped, and both stop cleanly on
 * SIGTERM. ({@link FencedExecutorIT}: an executor whose transactional id is taken over exits with
 * status 1.)
 */
@Tag("integration")
class ProcessesIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path dir;
  private JarFixture jar;

  @BeforeEach
  void fixture() {
    jar = new JarFixture(dir, kafka.bootstrapServers());
  }

  @AfterEach
  void killLeftovers() {
    jar.close();
  }

  @Test
  @Timeout(240)
  void shouldServeKeysAndMetricsAndStopCleanlyOnSigterm() throws Exception {
    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1))) {
      int port = jar.writeConfigs(registry, downstream, "processes-it");

      JarFixture.Running processor = jar.start("processor", "--config", "processor.properties");
      String base = "http://127.0.0.1:" + port;
      await("the processor process's /readyz answers 200")
          .atMost(Duration.ofSeconds(120))
          .failFast(processor::assertAlive)
          .ignoreExceptions()
          .untilAsserted(
              () -> {
                var ready = jar.get(base + "/readyz");
                assertThat(ready.statusCode())
                    .as("GET %s/readyz (%s)", base, ready.body().strip())
                    .isEqualTo(200);
              });
      JarFixture.Running executor =
          jar.start("executor", "--config", "executor.properties", "--lanes", "payments");
      assertThat(jar.get(base + "/healthz").statusCode()).isEqualTo(200);
      await("the executor process's /readyz answers 200")
          .atMost(Duration.ofSeconds(60))
          .failFast(executor::assertAlive)
          .ignoreExceptions()
          .untilAsserted(
              () -> {
                var ready = jar.get(jar.executorHealth() + "/readyz");
                assertThat(ready.statusCode())
                    .as("GET %s/readyz (%s)", jar.executorHealth(), ready.body().strip())
                    .isEqualTo(200);
              });

      StepContext step = new StepContext("acme", "run-1", "charge", "customer:1");
      CallResult answer;
      try (ToolCallClient client = jar.client(registry, Duration.ofSeconds(90))) {
        answer =
            client.invokeAndWait(
                ToolCall.of(step, "charge_card", "{\"amount\":10,\"to\":\"cus_1\"}"));
      }
      assertThat(answer).isInstanceOf(CallResult.Succeeded.class);
      CallResult.Succeeded result = (CallResult.Succeeded) answer;

      // The executor answered in its outcome's transaction; the ledger records the completion
      // when it reads that outcome, one commit later.
      await("the ledger records the completion of " + result.key())
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(jar.get(base + "/v1/keys/acme/" + result.key()).body())
                      .as("the entry of %s", result.key())
                      .contains("\"state\":\"SUCCEEDED\""));
      HttpResponse<String> entry = jar.get(base + "/v1/keys/acme/" + result.key());
      assertThat(entry.statusCode()).isEqualTo(200);
      assertThat(entry.body())
          .contains("\"state\":\"SUCCEEDED\"")
          .contains("\"effectId\":\"" + result.effectId() + "\"")
          .doesNotContain("cus_1");
      assertThat(jar.get(base + "/v1/keys/acme/v1:unknown").statusCode()).isEqualTo(404);
      assertThat(jar.get(base + "/v1/keys/globex/" + result.key()).statusCode())
          .as("keys are per tenant")
          .isEqualTo(404);
      assertThat(Main.run("status", result.key(), "--tenant", "acme", "--url", base)).isZero();

      String metrics = jar.get(base + "/metrics").body();
      assertThat(metrics)
          .contains(
              "effectledger_decisions_total{decision=\"dispatched\",tool=\"charge_card\"} 1.0")
          .contains("effectledger_decisions_total{decision=\"completed\",tool=\"charge_card\"} 1.0")
          .contains("effectledger_outcome_latency_seconds_count{tool=\"charge_card\"} 1")
          .contains("kafka_stream_");

      processor.process().destroy(); // SIGTERM
      executor.process().destroy();
      assertThat(processor.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(executor.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(processor.process().exitValue())
          .as("processor output: %s", processor.output())
          .isZero();
      assertThat(executor.process().exitValue())
          .as("executor output: %s", executor.output())
          .isZero();
      assertThat(processor.output()).contains("effectledger processor stopped cleanly");
      assertThat(executor.output()).contains("effectledger executor stopped cleanly");
      // Logs are quiet: a clean stop logs no error (ConsoleFindingsIT: the console's follower).
      assertThat(processor.output()).as("processor output").doesNotContain(" ERROR ");
      assertThat(executor.output()).as("executor output").doesNotContain(" ERROR ");
      assertThat(downstream.effects(result.key())).isEqualTo(1);
    }
  }
}
