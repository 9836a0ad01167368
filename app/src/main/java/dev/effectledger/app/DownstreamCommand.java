package dev.effectledger.app;

import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.Durations;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger downstream}: the sample payment API, for local development and compose. */
@Command(
    name = "downstream",
    mixinStandardHelpOptions = true,
    description =
        "Run a sample payment API (POST /charges with Idempotency-Key, GET /charges?key=K) that counts effects per key.")
final class DownstreamCommand implements Callable<Integer> {

  @Option(
      names = "--host",
      defaultValue = "127.0.0.1",
      description = "address to bind (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--port", defaultValue = "8090", description = "port (default: ${DEFAULT-VALUE})")
  int port;

  @Option(
      names = "--ignore-keys",
      description = "act on every request, as an API without idempotency keys would")
  boolean ignoreKeys;

  @Option(
      names = "--fault-percent",
      defaultValue = "0",
      description =
          "share of keys whose first request meets a fault: 503 before the effect, or the answer held,"
              + " dropped or 500 after it (default: ${DEFAULT-VALUE})")
  int faultPercent;

  @Option(
      names = "--seed",
      defaultValue = "1",
      description = "seed choosing the faulty keys (default: ${DEFAULT-VALUE})")
  long seed;

  @Option(
      names = "--fault-mix",
      paramLabel = "FAULT=PERCENT,...",
      description =
          "share of keys meeting each fault on their first request, instead of --fault-percent: 503 (before the"
              + " effect), 429, 409, stall (held before the effect), slow (acts after --slow), hang (held after the effect),"
              + " reset (connection dropped after the effect), drop (connection dropped before it), 500 (after the effect);"
              + " e.g. 503=5,hang=3,reset=3,500=3,slow=5,drop=3")
  String faultMix;

  @Option(
      names = "--hang",
      defaultValue = "30s",
      description = "how long a held answer is held (default: ${DEFAULT-VALUE})")
  String hang;

  @Option(
      names = "--slow",
      defaultValue = "300ms",
      description = "how long a slow request waits before it acts (default: ${DEFAULT-VALUE})")
  String slow;

  private static final Map<String, Fault> FAULTS =
      Map.of(
          "503",
          Fault.UNAVAILABLE_BEFORE_EFFECT,
          "429",
          Fault.RATE_LIMITED,
          "409",
          Fault.CONFLICT_IN_PROGRESS,
          "stall",
          Fault.STALL_BEFORE_EFFECT,
          "slow",
          Fault.SLOW_SUCCESS,
          "hang",
          Fault.HANG_AFTER_EFFECT,
          "reset",
          Fault.DROP_AFTER_EFFECT,
          "drop",
          Fault.DROP_BEFORE_EFFECT,
          "500",
          Fault.ERROR_AFTER_EFFECT);

  @Override
  public Integer call() throws Exception {
    CountingDownstream downstream =
        CountingDownstream.start(new InetSocketAddress(host, port), duration("--hang", hang))
            .honoursKeys(!ignoreKeys)
            .slow(duration("--slow", slow));
    if (faultMix != null) {
      downstream.faultMix(seed, mix(faultMix));
    } else {
      downstream.faultPlan(seed, faultPercent);
    }
    Lifecycle lifecycle = new Lifecycle("downstream", downstream);
    System.out.println(
        "effectledger downstream: http://"
            + host
            + ":"
            + downstream.port()
            + "/charges"
            + (ignoreKeys ? " (ignoring keys)" : " (honouring Idempotency-Key)"));
    lifecycle.awaitStop();
    return 0;
  }

  private static Duration duration(String option, String text) {
    return Durations.parse(text)
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    option + ": '" + text + "' is not a duration; write it like 30s or 500ms"));
  }

  static Map<Fault, Integer> mix(String spec) {
    Map<Fault, Integer> mix = new EnumMap<>(Fault.class);
    for (String part : spec.split(",")) {
      String[] kv = part.trim().split("=");
      Fault fault = kv.length == 2 ? FAULTS.get(kv[0].trim()) : null;
      if (fault == null) {
        throw new IllegalArgumentException(
            "--fault-mix: '"
                + part
                + "' is not FAULT=PERCENT with FAULT one of "
                + new TreeSet<>(FAULTS.keySet()));
      }
      try {
        mix.put(fault, Integer.parseInt(kv[1].trim()));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "--fault-mix: '" + kv[1] + "' in '" + part + "' is not a whole percent");
      }
    }
    return mix;
  }
}
