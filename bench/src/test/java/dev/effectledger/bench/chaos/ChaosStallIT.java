package dev.effectledger.bench.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.effectledger.bench.Processes;
import dev.effectledger.bench.Processes.Node;
import dev.effectledger.bench.chaos.ChaosWorkload.Action;
import dev.effectledger.client.StepContext;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The report of a stalled chaos run, read from a real broker holding what a stall leaves: a
 * transaction open and silent, a group behind, steps unanswered, a part that stopped.
 */
@Tag("integration")
class ChaosStallIT {

  @TempDir Path dir;

  @Test
  void shouldNameTheOpenTransactionTheLateGroupTheUnansweredStepsAndTheEndOfEachLog()
      throws Exception {
    HttpServer processor = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    processor.createContext(
        "/v1/keys/",
        exchange -> {
          byte[] body = "{\"error\":\"no entry\"}".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(404, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    processor.start();
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
        Processes processes = new Processes(dir)) {
      kafka.createTopics(Map.of("tool-outcomes", 2));
      Properties client = new Properties();
      client.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      try (KafkaProducer<String, String> plain = producer(client, null)) {
        for (int i = 0; i < 5; i++) {
          plain.send(new ProducerRecord<>("tool-outcomes", 0, "k" + i, "v")).get();
        }
      }
      try (Admin admin = Admin.create(client)) {
        admin
            .alterConsumerGroupOffsets(
                "chaos", Map.of(new TopicPartition("tool-outcomes", 0), new OffsetAndMetadata(1)))
            .all()
            .get(30, TimeUnit.SECONDS);
      }
      Node part =
          processes.node("part", List.of("sh", "-c", "echo starting; echo gave up")).start();
      part.process().waitFor(30, TimeUnit.SECONDS);

      try (KafkaProducer<String, String> open = producer(client, "left-open")) {
        open.initTransactions();
        open.beginTransaction();
        open.send(new ProducerRecord<>("tool-outcomes", 1, "k", "v")).get();
        Thread.sleep(1500); // the transaction's producer falls silent for longer than `silent`

        // Two agents: each numbers its steps from 0, so a step is known by its agent and its id.
        ChaosWorkload workload = new ChaosWorkload(2, 3, 50);
        List<Action> actions = workload.all();
        StepContext first = actions.get(0).steps().get(0);
        Action otherAgents = workload.actions(1).get(0);
        assertThat(otherAgents.steps().get(0).stepId()).isEqualTo(first.stepId());
        int steps = actions.stream().mapToInt(a -> a.steps().size()).sum();
        String report =
            new ChaosStall(
                    workload,
                    HttpClient.newHttpClient(),
                    client,
                    processor.getAddress().getPort(),
                    Duration.ofSeconds(1))
                .describe(
                    Set.of(ChaosStall.answerOf(first.runId(), first.stepId())), List.of(part));

        Action second = actions.get(1);
        assertThat(report)
            .contains((steps - 1) + " steps without a final answer")
            .contains(
                "  " + second.key(second.steps().get(0)) + ": HTTP 404 {\"error\":\"no entry\"}")
            .doesNotContain(actions.get(0).key(first))
            .contains("  " + otherAgents.key(otherAgents.steps().get(0)) + ": HTTP 404")
            .contains("group chaos: behind on [tool-outcomes-0 at 1 of 5]")
            .contains("group effectledger-executor: no partition behind")
            .contains("1 partitions with a transaction open and silent:")
            .containsPattern(
                "  tool-outcomes-1: producer \\d+ epoch 0 open from offset 0, silent \\d+ s")
            .contains("part (not running), its log ends:\n    starting\n    gave up");
      }
    } finally {
      processor.stop(0);
    }
  }

  private static KafkaProducer<String, String> producer(Properties client, String transactionalId) {
    Properties props = new Properties();
    props.putAll(client);
    if (transactionalId != null) {
      props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    }
    return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
  }
}
