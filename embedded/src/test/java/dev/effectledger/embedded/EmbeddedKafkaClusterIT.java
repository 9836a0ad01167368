package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.TopicVisibility;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import kafka.server.BrokerServer;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("integration")
@org.junit.jupiter.api.Timeout(120)
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

  /**
   * Every port of the cluster is bound to loopback only (Kafka's test kit bound its ports on the
   * wildcard address whatever the listeners said), read from the kernel's table of listening TCP
   * sockets.
   */
  @Test
  void shouldListenOnLoopbackOnly() throws Exception {
    List<String> listening = new java.util.ArrayList<>();
    for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of(table))) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 3 && "0A".equals(f[3])) { // state LISTEN
          listening.add(f[1]); // local address:port, hex
        }
      }
    }
    for (int port : kafka.ports()) {
      String hexPort = String.format(":%04X", port);
      List<String> bound = listening.stream().filter(a -> a.endsWith(hexPort)).toList();
      assertThat(bound).as("sockets listening on port " + port).isNotEmpty();
      assertThat(bound)
          .as("port " + port + " bound to 127.0.0.1 (IPv4, or IPv4-mapped IPv6) only")
          .allSatisfy(
              a ->
                  assertThat(a).matches("(0100007F|0000000000000000FFFF00000100007F):[0-9A-F]{4}"));
    }
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

  /**
   * The moment after a topic is created when a broker describes its partitions with a leader that
   * does not serve them yet (Kafka 4.3 updates the metadata cache before {@code
   * ReplicaManager.applyDelta} makes the broker the leader): an idempotent producer's first batch
   * refused then can be orphaned by its next one and expire at {@code delivery.timeout.ms}
   * (KAFKA-15591). The test holds the broker's replica-state lock, which {@code applyDelta} takes,
   * so the moment lasts as long as the test wants: Kafka's own internals, reached by reflection, to
   * open the window deterministically instead of hoping a busy machine does.
   */
  @Test
  void shouldWaitUntilTheLeaderServesTheNewPartitionsNotOnlyUntilTheyAreDescribed()
      throws Exception {
    Object replicaStateLock = replicaStateChangeLock();
    Admin admin = kafka.admin();
    String topic = "visibility-window";
    CompletableFuture<Void> visible;
    synchronized (replicaStateLock) {
      admin
          .createTopics(List.of(new NewTopic(topic, 4, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
      // The window: described with a leader on every partition, not served yet.
      await("the broker's cache describes " + topic + " with a leader on every partition")
          .atMost(Duration.ofSeconds(30))
          .until(() -> describedWithLeaders(admin, topic));
      visible =
          CompletableFuture.runAsync(
              () -> TopicVisibility.await(admin, List.of(topic), Duration.ofSeconds(60)));
      await("TopicVisibility.await not to return while the leader does not serve " + topic)
          .during(Duration.ofSeconds(2))
          .atMost(Duration.ofSeconds(3))
          .untilAsserted(() -> assertThat(visible).isNotDone());
    }
    visible.get(30, TimeUnit.SECONDS);
    assertThat(
            admin
                .listOffsets(Map.of(new TopicPartition(topic, 0), OffsetSpec.latest()))
                .all()
                .get(10, TimeUnit.SECONDS))
        .hasSize(1);
  }

  private static boolean describedWithLeaders(Admin admin, String topic) {
    try {
      return admin
          .describeTopics(List.of(topic))
          .allTopicNames()
          .get(5, TimeUnit.SECONDS)
          .get(topic)
          .partitions()
          .stream()
          .allMatch(p -> p.leader() != null);
    } catch (Exception e) {
      return false; // not in the cache yet
    }
  }

  /** Broker 0's {@code ReplicaManager.replicaStateChangeLock}. */
  @SuppressWarnings("unchecked")
  private static Object replicaStateChangeLock() throws Exception {
    Field running = EmbeddedKafkaCluster.class.getDeclaredField("running");
    running.setAccessible(true);
    KafkaRaftServer server = ((KafkaRaftServer[]) running.get(kafka))[0];
    Field broker = KafkaRaftServer.class.getDeclaredField("broker");
    broker.setAccessible(true);
    Object replicaManager =
        ((scala.Option<BrokerServer>) broker.get(server)).get().replicaManager();
    Field lock = replicaManager.getClass().getDeclaredField("replicaStateChangeLock");
    lock.setAccessible(true);
    return lock.get(replicaManager);
  }
}
