package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.admin.NewPartitions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("integration")
class CoPartitioningIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @Test
  void shouldRefuseIntentsAndOutcomesWithDifferentPartitionCountsThenAcceptEqualOnes()
      throws Exception {
    assertThatThrownBy(() -> CoPartitioning.verify(kafka.cluster().admin()))
        .as("missing topics")
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("create both with the same partition count");

    kafka.createTopics(Map.of(Topics.INTENTS, 4, Topics.OUTCOMES, 2));
    assertThatThrownBy(() -> CoPartitioning.verify(kafka.cluster().admin()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "tool-intents has 4 partitions but tool-outcomes has 2: they must be co-partitioned (same"
                + " count, keyed by idempotency key) so one task owns every event of a key. Recreate"
                + " tool-outcomes with 4 partitions.");

    kafka
        .cluster()
        .admin()
        .createPartitions(Map.of(Topics.OUTCOMES, NewPartitions.increaseTo(4)))
        .all()
        .get();
    // The controller has accepted the new partitions; brokers learn of them a moment later, and
    // describeTopics answers from a broker's metadata cache.
    await("every broker's metadata shows the new partitions: the co-partitioning check passes")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThatCode(() -> CoPartitioning.verify(kafka.cluster().admin()))
                    .doesNotThrowAnyException());
  }
}
