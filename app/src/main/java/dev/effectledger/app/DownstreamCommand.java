package dev.effectledger.app;

import dev.effectledger.embedded.CountingDownstream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger downstream}: the sample payment API, for local development and compose. */
@Command(name = "downstream", mixinStandardHelpOptions = true,
    description = "Run a sample payment API (POST /charges with Idempotency-Key, GET /charges?key=K) that counts effects per key.")
final class DownstreamCommand implements Callable<Integer> {

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "address to bind (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--port", defaultValue = "8090", description = "port (default: ${DEFAULT-VALUE})")
  int port;

  @Option(names = "--ignore-keys", description = "act on every request, as an API without idempotency keys would")
  boolean ignoreKeys;

  @Override
  public Integer call() throws Exception {
    CountingDownstream downstream = CountingDownstream.start(new InetSocketAddress(host, port), Duration.ofSeconds(30))
        .honoursKeys(!ignoreKeys);
    Lifecycle lifecycle = new Lifecycle("downstream", downstream);
    System.out.println("effectledger downstream: http://" + host + ":" + downstream.port() + "/charges"
        + (ignoreKeys ? " (ignoring keys)" : " (honouring Idempotency-Key)"));
    lifecycle.awaitStop();
    return 0;
  }
}
