package dev.effectledger.bench;

import dev.effectledger.bench.Bench.Run;
import dev.effectledger.bench.Bench.Workload;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.streams.StreamsConfig;

/**
 * {@code bench/run scaling}: the ledger with 1, 2 and 4 instances (one stream thread each) on 8
 * partitions, and its report.
 */
final class ScalingBench {

  private ScalingBench() {}

  /**
   * {@code bench/run scaling}: the ledger with 1, 2 and 4 instances (one stream thread each) on 8
   * partitions.
   */
  static int run(int intents, int repeats) throws Exception {
    List<Integer> sizes = List.of(1, 2, 4);
    Map<Integer, List<Double>> results = new TreeMap<>();
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka);
      Workload workload = Bench.produce(kafka.bootstrapServers(), intents);
      Bench.say("warm-up run (2 instances), not counted");
      double warmUp =
          StreamsMeter.measure(
                  kafka.bootstrapServers(),
                  "ledger",
                  StreamsConfig.EXACTLY_ONCE_V2,
                  () -> LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)),
                  Topics.INTENTS,
                  "scaling-warm-up",
                  intents,
                  2,
                  1)
              .perSecond();
      for (int r = 0; r < repeats; r++) {
        // Each repeat starts at another size, so JIT warm-up within a repeat favours none of them.
        for (int i = 0; i < sizes.size(); i++) {
          int n = sizes.get((i + r) % sizes.size());
          Run run =
              StreamsMeter.measure(
                  kafka.bootstrapServers(),
                  "ledger",
                  StreamsConfig.EXACTLY_ONCE_V2,
                  () -> LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)),
                  Topics.INTENTS,
                  "scaling-" + n + "-" + r,
                  intents,
                  n,
                  1);
          results.computeIfAbsent(n, k -> new ArrayList<>()).add(run.perSecond());
        }
      }
      double one = medianOf(results.get(1));
      StringBuilder md = new StringBuilder("# Scaling: ledger instances on 8 partitions\n\n");
      md.append("Command: `bench/run scaling --intents ")
          .append(intents)
          .append(" --repeats ")
          .append(repeats)
          .append("`  \n");
      md.append(Bench.machine()).append("  \n");
      md.append(
              "One embedded broker (in the same JVM), 8 partitions, exactly_once_v2, commit.interval.ms=100, each instance a"
                  + " Kafka Streams client with one stream thread and its own state directory; ")
          .append(intents)
          .append(" intents, ")
          .append((intents - workload.distinct()) * 100 / intents)
          .append("% duplicates. A warm-up run of 2 instances first (")
          .append(String.format("%,.0f", warmUp))
          .append(" intents/s, not counted); then ")
          .append(repeats)
          .append(" repeats, each starting at another size; the median is reported.\n\n");
      md.append(
          "| instances | intents/s (median) | speed-up over 1 | all runs |\n| ---: | ---: | ---: | --- |\n");
      for (int n : sizes) {
        double v = medianOf(results.get(n));
        md.append(
            String.format(
                "| %d | %,.0f | %.2f | %s |%n",
                n,
                v,
                v / one,
                results.get(n).stream().map(x -> String.format("%,.0f", x)).toList()));
      }
      Path base = Bench.reportBase("scaling");
      Path chart = Charts.scaling(results, Path.of(base + ".png"));
      md.append("\n![throughput by instances](").append(chart.getFileName()).append(")\n");
      Bench.writeReport(base, md);
    }
    return 0;
  }

  /**
   * The middle of {@code values} once sorted; of an even count, the upper of the two middle ones.
   */
  static double medianOf(List<Double> values) {
    return values.stream().sorted().toList().get(values.size() / 2);
  }
}
