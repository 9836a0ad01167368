package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * An executor stopped with SIGTERM in its first seconds, after {@code /readyz} answered 200 and
 * while it still reads {@code tool-policy}, stops cleanly (status 0, "stopped cleanly"). It used to
 * end with status 143 and nothing on its output, as a kill -9 would: its shutdown hook was
 * registered only after that read (ProcessesIT failed so in two fresh-clone runs, 2026-11-28).
 *
 * <p>The read is held open on purpose: {@code tool-policy}'s only replica is on a broker that is
 * stopped, so the executor waits for its end offset (10 s) while its lanes, on the other two
 * brokers, run. An executor started while a broker is down meets the same.
 */
class ExecutorEarlySigtermIT {

  private static final int POLICY_BROKER = 2;

  // Kafka's internal topics on two replicas: they are created on first use, after POLICY_BROKER
  // is stopped, and three replicas cannot be placed on two brokers.
  @RegisterExtension
  static final KafkaClusterExtension kafka =
      KafkaClusterExtension.withBrokers(
          3,
          Map.of(
              "offsets.topic.replication.factor", "2",
              "transaction.state.log.replication.factor", "2"));

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
  @Timeout(180)
  void aSigtermWhileTheExecutorStillReadsToolPolicyStopsItCleanly() throws Exception {
    Map<String, Integer> topics = new HashMap<>();
    for (String topic : Topics.fixed()) {
      if (!topic.equals(Topics.POLICY)) {
        topics.put(topic, 1);
      }
    }
    topics.put(Topics.dispatch("payments"), 1);
    kafka.createTopics(topics);
    kafka.cluster().createTopicOnBroker(Topics.POLICY, POLICY_BROKER);
    kafka.cluster().stopBroker(POLICY_BROKER);

    try (SchemaRegistryServer registry = SchemaRegistryServer.start();
        CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1))) {
      jar.writeConfigs(registry, downstream, "executor-early-sigterm-it");
      // The window lasts the read's 10 s end-offset wait. A machine too slow to see /readyz and
      // look at the output within it gets another executor; three misses fail the test.
      JarFixture.Running executor = null;
      int from = 0; // where the chosen executor's lines start in executor.log
      List<String> missed = new ArrayList<>();
      for (int attempt = 1; attempt <= 3 && executor == null; attempt++) {
        Path log = dir.resolve("executor.log"); // every attempt appends to it
        int before = Files.exists(log) ? Files.readAllLines(log).size() : 0;
        JarFixture.Running started =
            jar.start("executor", "--config", "executor.properties", "--lanes", "payments");
        await("the executor process's /readyz answers 200")
            .atMost(Duration.ofSeconds(90))
            .failFast(started::assertAlive)
            .ignoreExceptions()
            .untilAsserted(
                () ->
                    assertThat(jar.get(jar.executorHealth() + "/readyz").statusCode())
                        .as("GET %s/readyz", jar.executorHealth())
                        .isEqualTo(200));
        // The window this test is about: the startup line comes once tool-policy has been read.
        List<String> own = started.output().subList(before, started.output().size());
        if (own.stream().noneMatch(l -> l.startsWith("effectledger executor: lanes"))) {
          executor = started;
          from = before;
        } else {
          missed.add("attempt " + attempt + ": " + own);
          started.process().destroy();
          assertThat(started.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
      }
      assertThat(executor)
          .as("an executor still reading tool-policy when /readyz answered; missed: %s", missed)
          .isNotNull();

      executor.process().destroy(); // SIGTERM
      assertThat(executor.process().waitFor(60, TimeUnit.SECONDS))
          .as("the executor ended within 60 s of SIGTERM")
          .isTrue();
      List<String> output = executor.output().subList(from, executor.output().size());
      assertThat(executor.process().exitValue()).as("executor output: %s", output).isZero();
      assertThat(output).contains("effectledger executor stopped cleanly");
    }
  }
}
