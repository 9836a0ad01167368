package dev.effectledger.app;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.embedded.StandaloneKafkaServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code effectledger broker}: an in-process KRaft broker and Schema Registry endpoints, for local
 * development.
 */
@Command(
    name = "broker",
    mixinStandardHelpOptions = true,
    description = {
      "Start an embedded KRaft broker and the Schema Registry endpoints (127.0.0.1) until stopped.",
      "Its controller and brokers listen on 127.0.0.1 only, with their data in a temporary"
          + " directory; --data-dir DIR runs one Kafka server whose data outlives it."
    })
final class BrokerCommand implements Callable<Integer> {

  @Option(
      names = "--registry-port",
      defaultValue = "8081",
      description = "Schema Registry port (default: ${DEFAULT-VALUE})")
  int registryPort;

  @Option(
      names = "--brokers",
      defaultValue = "1",
      description = "1 or 3 brokers (default: ${DEFAULT-VALUE})")
  int brokers;

  @Option(
      names = "--control-stdin",
      description =
          "read 'stop N' and 'start N' lines on standard input to stop and restart broker N (for chaos runs)")
  boolean controlStdin;

  @Option(
      names = "--data-dir",
      paramLabel = "DIR",
      description =
          "run one Kafka server whose data lives in DIR (formatted on first start) on fixed ports, so that it can"
              + " be killed and started again on its data, instead of a temporary cluster")
  Path dataDir;

  @Option(
      names = "--port",
      defaultValue = "9092",
      description = "with --data-dir: the client port (default: ${DEFAULT-VALUE})")
  int port;

  @Option(
      names = "--controller-port",
      defaultValue = "9093",
      description = "with --data-dir: the controller port (default: ${DEFAULT-VALUE})")
  int controllerPort;

  @Option(
      names = "--registry",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "serve the Schema Registry endpoints (default: on); --no-registry when another process serves them")
  boolean registry;

  @Option(
      names = "--registry-only",
      description = "serve only the Schema Registry endpoints, no broker")
  boolean registryOnly;

  @Override
  public Integer call() throws Exception {
    List<AutoCloseable> parts = new ArrayList<>();
    SchemaRegistryServer schemas =
        registry || registryOnly ? SchemaRegistryServer.start(registryPort) : null;
    if (schemas != null) {
      parts.add(schemas);
    }
    EmbeddedKafkaCluster cluster = null;
    if (!registryOnly) {
      if (dataDir != null) {
        StandaloneKafkaServer server = StandaloneKafkaServer.start(dataDir, port, controllerPort);
        parts.add(server);
        System.out.println("bootstrap.servers=" + server.bootstrapServers());
      } else {
        cluster = EmbeddedKafkaCluster.start(brokers);
        parts.add(cluster);
        System.out.println("bootstrap.servers=" + cluster.bootstrapServers());
      }
    }
    Collections.reverse(parts); // the broker stops before the registry it may still need
    Lifecycle lifecycle = new Lifecycle("broker", parts.toArray(AutoCloseable[]::new));
    if (schemas != null) {
      System.out.println("schema.registry.url=" + schemas.url());
    }
    System.out.println("effectledger broker: running; stop with Ctrl-C");
    System.out.flush();
    if (controlStdin && cluster != null) {
      EmbeddedKafkaCluster kafka = cluster;
      Thread control = new Thread(() -> control(kafka), "broker-control");
      control.setDaemon(true);
      control.start();
    }
    lifecycle.awaitStop();
    return 0;
  }

  private static void control(EmbeddedKafkaCluster kafka) {
    try (var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        String[] words = line.trim().split("\\s+");
        try {
          if (words.length == 2 && words[0].equals("stop")) {
            kafka.stopBroker(Integer.parseInt(words[1]));
            System.out.println("broker " + words[1] + " stopped");
          } else if (words.length == 2 && words[0].equals("start")) {
            kafka.startBroker(Integer.parseInt(words[1]));
            System.out.println("broker " + words[1] + " started");
          } else if (!line.isBlank()) {
            System.out.println("unknown control line '" + line + "'; write 'stop N' or 'start N'");
          }
        } catch (RuntimeException e) {
          System.out.println("could not '" + line + "': " + e.getMessage());
        }
        System.out.flush();
      }
    } catch (IOException e) {
      System.err.println("broker control input closed: " + e.getMessage());
    }
  }
}
