package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The console's follower of {@value Topics#FINDINGS}: it shows what the reconciler found, and stops
 * quietly with its processor.
 */
@Tag("integration")
class ConsoleFindingsIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @Test
  @Timeout(120)
  void shouldShowTheReconcilersFindingsAndStopWithoutAnError() throws Exception {
    kafka.createTopics(Map.of(Topics.FINDINGS, 1));
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
      producer
          .send(
              new ProducerRecord<>(
                  Topics.FINDINGS,
                  "acme/v1:k1",
                  "{\"status\":\"NO_EFFECT\",\"since\":\"2026-11-26T10:00:00Z\","
                      + "\"by\":\"reconciler\",\"detail\":\"no charge with this key\"}"))
          .get();
    }

    PrintStream err = System.err;
    ByteArrayOutputStream logged = new ByteArrayOutputStream();
    try (SchemaRegistryServer registry = SchemaRegistryServer.start()) {
      ConsoleActions actions =
          new ConsoleActions(
              props,
              registry.url(),
              () -> ToolPolicies.of(),
              "console",
              null,
              Duration.ofDays(1),
              Clock.systemUTC());
      try {
        await("the console reads the reconciler's finding on acme/v1:k1")
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () ->
                    assertThat(actions.finding("acme", "v1:k1"))
                        .as("the console's finding on acme/v1:k1")
                        .isNotEmpty());
        assertThat(actions.finding("acme", "v1:k1"))
            .startsWith("NO_EFFECT (since 2026-11-26T10:00:00Z, reconciler)")
            .endsWith("no charge with this key");
        // Kept: a few more of the follower's polls (1 s each) so that close() meets it mid-follow
        // with its fetch session open; nothing observable marks that session.
        Thread.sleep(1500);
        System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8));
      } finally {
        actions.close();
        System.setErr(err);
      }
    }
    // Closed while following, it logged an ERROR with a stack trace (interrupted in its consumer's
    // close) at every processor's stop.
    assertThat(logged.toString(StandardCharsets.UTF_8)).doesNotContain("ERROR");
  }
}
