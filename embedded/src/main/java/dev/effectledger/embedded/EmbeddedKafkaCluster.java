package dev.effectledger.embedded;

import dev.effectledger.schema.TopicVisibility;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A real KRaft cluster in this JVM: one controller (node {@value #CONTROLLER_ID}) and one or three
 * brokers (nodes 0 to 2), each a {@code KafkaRaftServer} on loopback ports of its own with its data
 * in a temporary directory, internal topics sized to the broker count so transactions work on a
 * single broker.
 *
 * <p>Why not Kafka's {@code KafkaClusterTestKit}: from Kafka 4.4 it needs {@code
 * org.apache.kafka.test.TestUtils} from kafka-clients' test jar, which Maven Central does not
 * serve, and it is a test library the {@code broker} and {@code demo} commands should not ship. The
 * servers here are the ones a deployment runs ({@code KafkaRaftServer}, formatted with {@code
 * StorageTool}, as {@link StandaloneKafkaServer} is), started and stopped directly.
 */
public final class EmbeddedKafkaCluster implements AutoCloseable {

  static final int CONTROLLER_ID = 3000;

  private final Path root;
  private final int controllerPort;
  private final List<Properties> brokerProps;
  private final KafkaRaftServer controller;
  private final KafkaRaftServer[] running; // guarded by this; null: stopped
  private Admin admin;

  private EmbeddedKafkaCluster(
      Path root,
      int controllerPort,
      List<Properties> brokerProps,
      KafkaRaftServer controller,
      KafkaRaftServer[] running) {
    this.root = root;
    this.controllerPort = controllerPort;
    this.brokerProps = brokerProps;
    this.controller = controller;
    this.running = running;
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
    Path root = null;
    KafkaRaftServer controller = null;
    KafkaRaftServer[] running = new KafkaRaftServer[brokers];
    try {
      root = Files.createTempDirectory("effectledger-kafka");
      String clusterId = Uuid.randomUuid().toString();
      int controllerPort = LoopbackPorts.stable();
      String voters = CONTROLLER_ID + "@127.0.0.1:" + controllerPort;
      Properties controllerProps = new Properties();
      controllerProps.put("process.roles", "controller");
      controllerProps.put("node.id", Integer.toString(CONTROLLER_ID));
      controllerProps.put("controller.quorum.voters", voters);
      controllerProps.put("listeners", "CONTROLLER://127.0.0.1:" + controllerPort);
      controllerProps.put("controller.listener.names", "CONTROLLER");
      controllerProps.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT");
      controllerProps.put("log.dirs", root.resolve("controller").toString());
      format(root.resolve("controller.properties"), controllerProps, clusterId);

      short replication = (short) Math.min(brokers, 3);
      List<Properties> brokerProps = new ArrayList<>();
      for (int id = 0; id < brokers; id++) {
        // outside the ephemeral range: a client reconnecting while the broker is stopped cannot
        // take the port it restarts on
        int port = LoopbackPorts.stable();
        Properties props = new Properties();
        props.put("process.roles", "broker");
        props.put("node.id", Integer.toString(id));
        props.put("controller.quorum.voters", voters);
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + port);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", root.resolve("broker-" + id).toString());
        props.put("offsets.topic.replication.factor", Short.toString(replication));
        props.put("offsets.topic.num.partitions", "4");
        props.put("transaction.state.log.replication.factor", Short.toString(replication));
        props.put("transaction.state.log.min.isr", "1");
        props.put("transaction.state.log.num.partitions", "4");
        props.put("group.initial.rebalance.delay.ms", "0");
        props.put("auto.create.topics.enable", "false");
        props.putAll(brokerConfig);
        format(root.resolve("broker-" + id + ".properties"), props, clusterId);
        brokerProps.add(props);
      }

      controller = server(controllerProps);
      for (int id = 0; id < brokers; id++) {
        running[id] = server(brokerProps.get(id));
      }
      EmbeddedKafkaCluster cluster =
          new EmbeddedKafkaCluster(root, controllerPort, brokerProps, controller, running);
      try {
        cluster.awaitBrokers(brokers, Duration.ofSeconds(60));
      } catch (RuntimeException e) {
        cluster.close(); // its admin client too
        throw e;
      }
      return cluster;
    } catch (RuntimeException | IOException e) {
      for (KafkaRaftServer broker : running) {
        stopQuietly(broker);
      }
      stopQuietly(controller);
      deleteQuietly(root);
      throw new IllegalStateException(
          "Could not start the embedded Kafka cluster: " + e.getMessage(), e);
    }
  }

  /** Formats a node's log directory for {@code clusterId}, its settings kept in {@code file}. */
  private static void format(Path file, Properties props, String clusterId) throws IOException {
    try (Writer out = Files.newBufferedWriter(file)) {
      props.store(out, "an embedded Kafka node");
    }
    // formatting prints the bootstrap metadata to standard output; nobody needs to read it
    int status =
        StorageTool.execute(
            new String[] {"format", "-t", clusterId, "-c", file.toString()},
            new PrintStream(OutputStream.nullOutputStream()));
    if (status != 0) {
      throw new IllegalStateException("Could not format " + file + " (status " + status + ")");
    }
  }

  private static KafkaRaftServer server(Properties props) {
    KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
    server.startup();
    return server;
  }

  /** Waits until {@code count} brokers are registered and answer. */
  private void awaitBrokers(int count, Duration wait) {
    long deadline = System.nanoTime() + wait.toNanos();
    RuntimeException last = null;
    while (System.nanoTime() < deadline) {
      try {
        int seen = admin().describeCluster().nodes().get(5, TimeUnit.SECONDS).size();
        if (seen >= count) {
          return;
        }
      } catch (ExecutionException | TimeoutException e) {
        last = new IllegalStateException(e.getMessage(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for the brokers", e);
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for the brokers", e);
      }
    }
    throw new IllegalStateException(
        count + " brokers did not register within " + wait.toSeconds() + " s", last);
  }

  /** The brokers' addresses, for clients. */
  public String bootstrapServers() {
    return String.join(
        ",",
        brokerProps.stream()
            .map(p -> p.getProperty("advertised.listeners").replace("PLAINTEXT://", ""))
            .toList());
  }

  /** Every port the cluster listens on: the controller's and each broker's. */
  List<Integer> ports() {
    List<Integer> ports = new ArrayList<>();
    ports.add(controllerPort);
    for (Properties props : brokerProps) {
      String listener = props.getProperty("listeners");
      ports.add(Integer.parseInt(listener.substring(listener.lastIndexOf(':') + 1)));
    }
    return ports;
  }

  /** Stops broker {@code id} (its port stays its own), as a crashed or restarting broker. */
  public synchronized void stopBroker(int id) {
    checkBroker(id);
    KafkaRaftServer broker = running[id];
    if (broker != null) {
      broker.shutdown();
      broker.awaitShutdown();
      running[id] = null;
    }
  }

  /** Starts broker {@code id} again after {@link #stopBroker}, on its port and its data. */
  public synchronized void startBroker(int id) {
    checkBroker(id);
    if (running[id] == null) {
      running[id] = server(brokerProps.get(id));
    }
  }

  private void checkBroker(int id) {
    if (id < 0 || id >= running.length) {
      throw new IllegalArgumentException(
          "no broker " + id + "; brokers are 0 to " + (running.length - 1));
    }
  }

  public int brokers() {
    return running.length;
  }

  public synchronized Admin admin() {
    if (admin == null) {
      admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()));
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
            topics.add(new NewTopic(name, partitions, (short) Math.min(brokers(), 3))));
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

  /** Stops the brokers, then the controller, and deletes their data. */
  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close(Duration.ofSeconds(5));
      admin = null;
    }
    for (int id = 0; id < running.length; id++) {
      stopQuietly(running[id]);
      running[id] = null;
    }
    stopQuietly(controller);
    deleteQuietly(root);
  }

  private static void stopQuietly(KafkaRaftServer server) {
    if (server != null) {
      try {
        server.shutdown();
        server.awaitShutdown();
      } catch (RuntimeException e) {
        // stopping what is left: one node's trouble does not keep the others running
      }
    }
  }

  private static void deleteQuietly(Path root) {
    if (root == null) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // a temporary directory: the OS clears it
    }
  }
}
