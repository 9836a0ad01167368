package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.schema.TopicVisibility;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.TopicDescription;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("integration")
class EmbeddedKafkaClusterIT {

  private static EmbeddedKafkaCluster kafka;

  @BeforeAll
  static void start() {
    kafka = EmbeddedKafkaCluster.start(1);
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  @Test
  void shouldReturnFromCreateTopicsOnlyOnceEveryPartitionCanBeDescribedWithALeader()
      throws Exception {
    // A check that runs right after creation (the processor's co-partitioning check) describes
    // the topics from a broker's metadata cache, which learns of them after the controller.
    for (int round = 0; round < 10; round++) {
      Map<String, Integer> topics = new LinkedHashMap<>();
      for (int i = 0; i < 5; i++) {
        topics.put("visible-" + round + "-" + i, 4);
      }
      kafka.createTopics(topics);
      Map<String, TopicDescription> described =
          kafka.admin().describeTopics(topics.keySet()).allTopicNames().get(10, TimeUnit.SECONDS);
      assertThat(described).containsOnlyKeys(topics.keySet());
      assertThat(described.values())
          .allSatisfy(
              d -> {
                assertThat(d.partitions()).hasSize(4);
                assertThat(d.partitions()).allSatisfy(p -> assertThat(p.leader()).isNotNull());
              });
    }
  }

  @Test
  void shouldNameTheTopicsThatNeverBecameVisible() {
    assertThatThrownBy(
            () ->
                TopicVisibility.await(
                    kafka.admin(), List.of("never-created"), Duration.ofMillis(500)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("[never-created]")
        .hasMessageContaining("check that every broker is up");
  }
}
