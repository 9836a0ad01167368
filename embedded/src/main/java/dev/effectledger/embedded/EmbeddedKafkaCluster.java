package dev.effectledger.embedded;

import dev.effectledger.schema.TopicVisibility;
import java.io.OutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * A real KRaft cluster in this JVM (Kafka's {@link KafkaClusterTestKit}): one controller and one or
 * three brokers, listening on loopback, with internal topics sized to the broker count so
 * transactions work on a single broker.
 */
public final class EmbeddedKafkaCluster implements AutoCloseable {

  private final KafkaClusterTestKit cluster;
  private final int brokers;
  private Admin admin;

  private EmbeddedKafkaCluster(KafkaClusterTestKit cluster, int brokers) {
    this.cluster = cluster;
    this.brokers = brokers;
  }

  /** Formats and starts a cluster of {@code brokers} brokers and waits until they are ready. */
  public static EmbeddedKafkaCluster start(int brokers) {
    return start(brokers, Map.of());
  }

  /**
   * Formats and starts a cluster of {@code brokers} brokers, with {@code brokerConfig} on top of
   * the defaults, and waits until they are ready.
   */
  public static EmbeddedKafkaCluster start(int brokers, Map<String, String> brokerConfig) {
    if (brokers != 1 && brokers != 3) {
      throw new IllegalArgumentException("brokers must be 1 or 3, was " + brokers);
    }
    short replication = (short) Math.min(brokers, 3);
    try {
      KafkaClusterTestKit.Builder builder =
          new KafkaClusterTestKit.Builder(
                  new TestKitNodes.Builder()
                      .setCombined(true)
                      .setNumBrokerNodes(brokers)
                      .setNumControllerNodes(1)
                      .build())
              .setConfigProp("offsets.topic.replication.factor", Short.toString(replication))
              .setConfigProp("offsets.topic.num.partitions", "4")
              .setConfigProp(
                  "transaction.state.log.replication.factor", Short.toString(replication))
              .setConfigProp("transaction.state.log.min.isr", "1")
              .setConfigProp("transaction.state.log.num.partitions", "4")
              .setConfigProp("group.initial.rebalance.delay.ms", "0")
              .setConfigProp("auto.create.topics.enable", "false");
      brokerConfig.forEach(builder::setConfigProp);
      KafkaClusterTestKit cluster = builder.build();
      formatQuietly(cluster);
      cluster.startup();
      cluster.waitForReadyBrokers();
      return new EmbeddedKafkaCluster(cluster, brokers);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while starting the embedded Kafka cluster", e);
    } catch (Exception e) {
      throw new IllegalStateException(
          "Could not start the embedded Kafka cluster: " + e.getMessage(), e);
    }
  }

  /** Formatting prints the bootstrap metadata to standard output; nobody needs to read it. */
  private static void formatQuietly(KafkaClusterTestKit cluster) throws Exception {
    PrintStream out = System.out;
    System.setOut(new PrintStream(OutputStream.nullOutputStream()));
    try {
      cluster.format();
    } finally {
      System.setOut(out);
    }
  }

  public String bootstrapServers() {
    return cluster.bootstrapServers();
  }

  /** Stops broker {@code id} (its port stays reserved), as a crashed or restarting broker. */
  public void stopBroker(int id) {
    var broker = cluster.brokers().get(id);
    if (broker == null) {
      throw new IllegalArgumentException(
          "no broker " + id + "; brokers are " + cluster.brokers().keySet());
    }
    broker.shutdown();
    broker.awaitShutdown();
  }

  /** Starts broker {@code id} again after {@link #stopBroker}. */
  public void startBroker(int id) {
    cluster.brokers().get(id).startup();
  }

  public int brokers() {
    return brokers;
  }

  public synchronized Admin admin() {
    if (admin == null) {
      admin = cluster.admin();
    }
    return admin;
  }

  /**
   * Creates {@code topic} with one partition whose only replica is on broker {@code id}: stopping
   * that broker ({@link #stopBroker}) takes the partition out of reach.
   */
  public void createTopicOnBroker(String topic, int id) {
    try {
      admin()
          .createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(id)))))
          .all()
          .get(60, TimeUnit.SECONDS);
      TopicVisibility.await(admin(), List.of(topic), Duration.ofSeconds(60));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating topic " + topic, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Could not create topic " + topic + " on broker " + id, e);
    }
  }

  /** Creates each topic with its partition count, replicated to every broker (at most 3). */
  public void createTopics(Map<String, Integer> partitionsByTopic) {
    List<NewTopic> topics = new ArrayList<>();
    partitionsByTopic.forEach(
        (name, partitions) ->
            topics.add(new NewTopic(name, partitions, (short) Math.min(brokers, 3))));
    try {
      admin().createTopics(topics).all().get(60, TimeUnit.SECONDS);
      TopicVisibility.await(admin(), partitionsByTopic.keySet(), Duration.ofSeconds(60));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "Interrupted while creating topics " + partitionsByTopic.keySet(), e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Could not create topics " + partitionsByTopic.keySet(), e);
    }
  }

  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close();
    }
    try {
      cluster.close();
    } catch (Exception e) {
      throw new IllegalStateException("Could not stop the embedded Kafka cluster", e);
    }
  }
}
