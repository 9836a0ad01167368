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
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * An executor process that can no longer commit (another producer took its transactional id) does
 * not stay up doing nothing: it says why and exits with status 1, so that a supervisor restarts it.
 * Its own cluster: a processor reads tool-intents from the start, and ProcessesIT writes there too.
 */
@Tag("integration")
class FencedExecutorIT {

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
  void shouldExitWithStatusOneWhenTheExecutorIsFenced() throws Exception {
    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1));
        Admin admin =
            Admin.create(
                Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
      int port = jar.writeConfigs(registry, downstream, "fenced-it");
      JarFixture.Running processor = jar.start("processor", "--config", "processor.properties");
      await("the processor process's /readyz answers 200")
          .atMost(Duration.ofSeconds(120))
          .failFast(processor::assertAlive)
          .ignoreExceptions()
          .untilAsserted(
              () -> {
                var ready = jar.get("http://127.0.0.1:" + port + "/readyz");
                assertThat(ready.statusCode())
                    .as("the processor's /readyz on port %s (%s)", port, ready.body().strip())
                    .isEqualTo(200);
              });
      JarFixture.Running executor =
          jar.start("executor", "--config", "executor.properties", "--lanes", "payments");
      try (ToolCallClient client = jar.client(registry, Duration.ofSeconds(90))) {
        CallResult first =
            client.invokeAndWait(
                ToolCall.of(
                    new StepContext("acme", "run-1", "charge", "c:1"),
                    "charge_card",
                    "{\"amount\":10,\"to\":\"cus_1\"}"));
        assertThat(first).isInstanceOf(CallResult.Succeeded.class);
        // the executor's own metrics count the effect it ran, by tool and outcome
        String metrics = jar.get(jar.executorHealth() + "/metrics").body();
        assertThat(metrics)
            .contains(
                "effectledger_executor_effects_total{outcome=\"succeeded\",tool=\"charge_card\"} 1.0")
            .contains("effectledger_executor_in_flight{tool=\"charge_card\"} 0.0")
            .contains("effectledger_executor_effect_seconds_count{tool=\"charge_card\"} 1");

        // Another producer takes the executor's transactional id: its next transaction is fenced.
        String transactionalId =
            admin.listTransactions().all().get(30, TimeUnit.SECONDS).stream()
                .map(TransactionListing::transactionalId)
                .filter(id -> id.startsWith("fenced-it-executor-"))
                .findFirst()
                .orElseThrow();
        Properties fencing = new Properties();
        fencing.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        fencing.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        try (KafkaProducer<byte[], byte[]> usurper =
            new KafkaProducer<>(fencing, new ByteArraySerializer(), new ByteArraySerializer())) {
          usurper.initTransactions();
        }
        client.invoke(
            ToolCall.of(
                new StepContext("acme", "run-1", "charge", "c:2"),
                "charge_card",
                "{\"amount\":20,\"to\":\"cus_2\"}"));

        assertThat(executor.process().waitFor(90, TimeUnit.SECONDS))
            .as("the fenced executor exits")
            .isTrue();
        assertThat(executor.process().exitValue())
            .as("executor output: %s", executor.output())
            .isEqualTo(1);
        assertThat(String.join("\n", executor.output()))
            .contains("stopped on its own")
            .contains("Fenced")
            .contains("exiting with status 1")
            .contains("effectledger executor stopped after a failure");
      }
    }
  }
}
