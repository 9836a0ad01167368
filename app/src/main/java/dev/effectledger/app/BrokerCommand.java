package dev.effectledger.app;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.embedded.SchemaRegistryServer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger broker}: an in-process KRaft broker and Schema Registry endpoints, for local development. */
@Command(name = "broker", mixinStandardHelpOptions = true,
    description = "Start an embedded KRaft broker and the Schema Registry endpoints on 127.0.0.1 until stopped.")
final class BrokerCommand implements Callable<Integer> {

  @Option(names = "--registry-port", defaultValue = "8081", description = "Schema Registry port (default: ${DEFAULT-VALUE})")
  int registryPort;

  @Override
  public Integer call() throws Exception {
    SchemaRegistryServer registry = SchemaRegistryServer.start(registryPort);
    EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
    Lifecycle lifecycle = new Lifecycle("broker", kafka, registry);
    System.out.println("bootstrap.servers=" + kafka.bootstrapServers());
    System.out.println("schema.registry.url=" + registry.url());
    System.out.println("effectledger broker: running; stop with Ctrl-C");
    System.out.flush();
    lifecycle.awaitStop();
    return 0;
  }
}
