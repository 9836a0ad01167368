package dev.effectledger.connectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A process following tool-policy (executor, gateways, clients) that starts while the topic's
 * partition is out of reach reads it once it is back, instead of giving up until a restart. Its
 * first read used to fail for good ("Stopped reading tool-policy ... restart it"): an executor
 * started while a broker was down never took a policy version (found with ExecutorEarlySigtermIT's
 * set-up). Once past its first read, the old feed's polls rode out an outage too.
 */
class PolicyFeedOutageIT {

  private static final int POLICY_BROKER = 2;

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(3);

  @Test
  @Timeout(180)
  void aFeedStartedWhileToolPolicyIsOutOfReachReadsItOnceItIsBack() throws Exception {
    // tool-policy's only replica on one broker, so stopping that broker takes the partition away
    kafka.cluster().createTopicOnBroker(Topics.POLICY, POLICY_BROKER);
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(
            Fixtures.kafka(kafka.bootstrapServers()),
            new StringSerializer(),
            new ByteArraySerializer())) {
      producer.send(record("version 1")).get(30, TimeUnit.SECONDS);
      kafka.cluster().stopBroker(POLICY_BROKER);

      List<String> read = new CopyOnWriteArrayList<>();
      try (PolicyFeed feed =
          PolicyFeed.start(
              Fixtures.kafka(kafka.bootstrapServers()),
              document -> read.add(new String(document, StandardCharsets.UTF_8)),
              "policy-feed-outage-it")) {
        assertThat(feed.awaitCurrent(Duration.ofSeconds(60)))
            .as("a feed whose partition is out of reach lets its process start")
            .isTrue();
        assertThat(read).as("documents read while the partition's broker is stopped").isEmpty();

        kafka.cluster().startBroker(POLICY_BROKER);
        await("the feed reads the version written before the outage")
            .atMost(Duration.ofSeconds(90))
            .untilAsserted(() -> assertThat(read).containsExactly("version 1"));
        producer.send(record("version 2")).get(30, TimeUnit.SECONDS);
        await("the feed reads a version written after the outage")
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(() -> assertThat(read).containsExactly("version 1", "version 2"));
      }
    }
  }

  private static ProducerRecord<String, byte[]> record(String document) {
    return new ProducerRecord<>(
        Topics.POLICY, 0, "policy", document.getBytes(StandardCharsets.UTF_8));
  }
}
