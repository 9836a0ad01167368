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

  @Option(names = "--fault-percent", defaultValue = "0",
      description = "share of keys whose first request meets a fault: 503 before the effect, or the answer held,"
          + " dropped or 500 after it (default: ${DEFAULT-VALUE})")
  int faultPercent;

  @Option(names = "--seed", defaultValue = "1", description = "seed choosing the faulty keys (default: ${DEFAULT-VALUE})")
  long seed;

  @Option(names = "--hang", defaultValue = "30s", description = "how long a held answer is held (default: ${DEFAULT-VALUE})")
  String hang;

  @Override
  public Integer call() throws Exception {
    CountingDownstream downstream = CountingDownstream.start(new InetSocketAddress(host, port),
            dev.effectledger.policy.Durations.parse(hang).orElseThrow(() ->
                new IllegalArgumentException("--hang: '" + hang + "' is not a duration; write it like 30s or 500ms")))
        .honoursKeys(!ignoreKeys).faultPlan(seed, faultPercent);
    Lifecycle lifecycle = new Lifecycle("downstream", downstream);
    System.out.println("effectledger downstream: http://" + host + ":" + downstream.port() + "/charges"
        + (ignoreKeys ? " (ignoring keys)" : " (honouring Idempotency-Key)"));
    lifecycle.awaitStop();
    return 0;
  }
}
