package dev.effectledger.testkit;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one {@link EmbeddedKafkaCluster} before a test class and stops it after:
 *
 * <pre>
 * &#64;RegisterExtension
 * static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);
 * </pre>
 *
 * Tests in the class share the cluster; each should use its own application id and topics.
 */
public final class KafkaClusterExtension implements BeforeAllCallback, AfterAllCallback {

  private final int brokers;
  private final Map<String, String> brokerConfig;
  private EmbeddedKafkaCluster cluster;

  private KafkaClusterExtension(int brokers, Map<String, String> brokerConfig) {
    this.brokers = brokers;
    this.brokerConfig = Map.copyOf(brokerConfig);
  }

  public static KafkaClusterExtension withBrokers(int brokers) {
    return new KafkaClusterExtension(brokers, Map.of());
  }

  /** A cluster whose brokers have {@code brokerConfig} on top of the defaults. */
  public static KafkaClusterExtension withBrokers(int brokers, Map<String, String> brokerConfig) {
    return new KafkaClusterExtension(brokers, brokerConfig);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    cluster = EmbeddedKafkaCluster.start(brokers, brokerConfig);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (cluster != null) {
      cluster.close();
      cluster = null;
    }
  }

  public EmbeddedKafkaCluster cluster() {
    if (cluster == null) {
      throw new IllegalStateException("The cluster runs only between beforeAll and afterAll");
    }
    return cluster;
  }

  public String bootstrapServers() {
    return cluster().bootstrapServers();
  }

  public void createTopics(Map<String, Integer> partitionsByTopic) {
    cluster().createTopics(partitionsByTopic);
  }
}
