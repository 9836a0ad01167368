package dev.effectledger.embedded;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * One real Kafka server (KRaft, broker and controller in one node) with its data in a directory
 * that outlives it and fixed ports: killed with SIGKILL and started again on the same directory, it
 * recovers its logs as a production broker does. The directory is formatted on first start. Unlike
 * {@link EmbeddedKafkaCluster}, nothing is temporary; it is what a single-broker deployment looks
 * like to the clients.
 */
public final class StandaloneKafkaServer implements AutoCloseable {

  private final KafkaRaftServer server;
  private final int port;

  private StandaloneKafkaServer(KafkaRaftServer server, int port) {
    this.server = server;
    this.port = port;
  }

  /**
   * Formats {@code dataDir} if it is new, then starts the server with clients on 127.0.0.1:{@code
   * port} and its controller on 127.0.0.1:{@code controllerPort}.
   */
  public static StandaloneKafkaServer start(Path dataDir, int port, int controllerPort) {
    try {
      Files.createDirectories(dataDir);
      Properties props = properties(dataDir, port, controllerPort);
      Path file = dataDir.resolve("server.properties");
      try (Writer out = Files.newBufferedWriter(file)) {
        props.store(out, "written by effectledger broker --data-dir");
      }
      if (!Files.exists(dataDir.resolve("logs").resolve("meta.properties"))) {
        int status =
            StorageTool.execute(
                new String[] {"format", "-t", Uuid.randomUuid().toString(), "-c", file.toString()},
                new PrintStream(OutputStream.nullOutputStream()));
        if (status != 0) {
          throw new IllegalStateException(
              "Could not format " + dataDir + " for Kafka (status " + status + ")");
        }
      }
      KafkaRaftServer server =
          new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
      server.startup();
      return new StandaloneKafkaServer(server, port);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not prepare the Kafka data directory " + dataDir, e);
    }
  }

  private static Properties properties(Path dataDir, int port, int controllerPort) {
    Properties props = new Properties();
    props.put("process.roles", "broker,controller");
    props.put("node.id", "1");
    props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
    props.put(
        "listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
    props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
    props.put("controller.listener.names", "CONTROLLER");
    props.put("inter.broker.listener.name", "PLAINTEXT");
    props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    props.put("log.dirs", dataDir.resolve("logs").toString());
    props.put("offsets.topic.replication.factor", "1");
    props.put("offsets.topic.num.partitions", "4");
    props.put("transaction.state.log.replication.factor", "1");
    props.put("transaction.state.log.min.isr", "1");
    props.put("transaction.state.log.num.partitions", "4");
    props.put("group.initial.rebalance.delay.ms", "0");
    props.put("auto.create.topics.enable", "false");
    return props;
  }

  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  @Override
  public void close() {
    server.shutdown();
    server.awaitShutdown();
  }
}
