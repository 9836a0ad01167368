package dev.effectledger.bench;

import dev.effectledger.bench.Bench.Run;
import java.io.IOException;
import java.time.LocalDate;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.streams.StreamsConfig;

/** The report of {@code bench/run throughput}: medians of the runs, side by side, as ratios. */
final class ThroughputReport {

  private ThroughputReport() {}

  private static double median(List<Run> runs, String name, String guarantee) {
    return median(runs, name, guarantee, Run::perSecond);
  }

  private static double median(
      List<Run> runs, String name, String guarantee, ToDoubleFunction<Run> figure) {
    double[] values =
        runs.stream()
            .filter(r -> r.name().equals(name) && r.guarantee().equals(guarantee))
            .mapToDouble(figure)
            .sorted()
            .toArray();
    return values[values.length / 2];
  }

  /** The median CPU its stream threads spent per intent, in µs. */
  private static double cpu(List<Run> runs, String name, String guarantee) {
    return median(runs, name, guarantee, Run::cpuMicrosPerRecord);
  }

  static void write(List<Run> runs, int intents, int distinct, int repeats) throws IOException {
    double baseEos = median(runs, "baseline", StreamsConfig.EXACTLY_ONCE_V2);
    double baseAlos = median(runs, "baseline", StreamsConfig.AT_LEAST_ONCE);
    double ledgerEos = median(runs, "ledger", StreamsConfig.EXACTLY_ONCE_V2);
    double ledgerAlos = median(runs, "ledger", StreamsConfig.AT_LEAST_ONCE);
    StringBuilder md = new StringBuilder();
    md.append("# Throughput: ledger gate against the baseline dedup topology\n\n");
    md.append("Command: `bench/run throughput --intents ")
        .append(intents)
        .append(" --repeats ")
        .append(repeats)
        .append("`  \n");
    md.append("Machine: ")
        .append(Runtime.getRuntime().availableProcessors())
        .append(" cores, ")
        .append(Runtime.getRuntime().maxMemory() / (1024 * 1024))
        .append(" MiB heap, Java ")
        .append(System.getProperty("java.version"))
        .append("; one embedded broker, ")
        .append(Bench.PARTITIONS)
        .append(" partitions, 2 stream threads, commit.interval.ms=100 for both guarantees; date ")
        .append(LocalDate.now())
        .append(".  \n");
    md.append(Bench.input(intents, distinct))
        .append(
            ", the same bytes for both sides; arguments {amount, to,"
                + " reason}, the tool's key rules leaving out /reason. ")
        .append("Median of ")
        .append(repeats)
        .append(" runs each, alternating sides, after a warm-up round not counted.\n\n");
    md.append(
        "| topology | guarantee | intents/s (median) | stream threads' CPU µs per intent"
            + " (median) |\n| --- | --- | ---: | ---: |\n");
    for (String[] row :
        new String[][] {
          {"baseline", StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.BASELINE_BATCHED, StreamsConfig.EXACTLY_ONCE_V2},
          {"ledger", StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.SMALL_BATCHES, StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.UNCHECKED, StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.CACHED, StreamsConfig.EXACTLY_ONCE_V2},
          {"baseline", StreamsConfig.AT_LEAST_ONCE},
          {"ledger", StreamsConfig.AT_LEAST_ONCE},
          {Bench.CACHED, StreamsConfig.AT_LEAST_ONCE}
        }) {
      md.append(
          String.format(
              "| %s | %s | %,.0f | %.1f |%n",
              row[0], row[1], median(runs, row[0], row[1]), cpu(runs, row[0], row[1])));
    }
    md.append(String.format("%n| ratio | value | target |%n| --- | ---: | --- |%n"));
    md.append(
        String.format(
            "| ledger / baseline, exactly_once_v2 | %.2f | >= 0.8 |%n", ledgerEos / baseEos));
    md.append(
        String.format(
            "| ledger exactly_once_v2 / at_least_once | %.2f | >= 0.85 (overhead <= 15%%) |%n",
            ledgerEos / ledgerAlos));
    md.append(
        String.format(
            "| baseline / ledger, stream threads' CPU per intent, exactly_once_v2 | %.2f |"
                + " (the work per intent, without the broker) |%n",
            cpu(runs, "baseline", StreamsConfig.EXACTLY_ONCE_V2)
                / cpu(runs, "ledger", StreamsConfig.EXACTLY_ONCE_V2)));
    md.append(
        String.format(
            "| baseline exactly_once_v2 / at_least_once | %.2f | (reference) |%n",
            baseEos / baseAlos));
    md.append(
        String.format(
            "| ledger / ledger without the arguments-hash check, exactly_once_v2 | %.2f | (the check's cost) |%n",
            ledgerEos / median(runs, Bench.UNCHECKED, StreamsConfig.EXACTLY_ONCE_V2)));
    double batchedBaseEos = median(runs, Bench.BASELINE_BATCHED, StreamsConfig.EXACTLY_ONCE_V2);
    md.append(
        String.format(
            "| ledger / ledger with 16 KiB producer batches, exactly_once_v2 | %.2f | (what the ledger's batch size pays) |%n",
            ledgerEos / median(runs, Bench.SMALL_BATCHES, StreamsConfig.EXACTLY_ONCE_V2)));
    md.append(
        String.format(
            "| baseline with 128 KiB batches / baseline, exactly_once_v2 | %.2f | (the same setting on the baseline) |%n",
            batchedBaseEos / baseEos));
    md.append(
        String.format(
            "| ledger / baseline with 128 KiB batches, exactly_once_v2 | %.2f | (both sides with the same batch size) |%n",
            ledgerEos / batchedBaseEos));
    double cachedEos = median(runs, Bench.CACHED, StreamsConfig.EXACTLY_ONCE_V2);
    md.append(
        String.format(
            "| ledger with the record cache / baseline, exactly_once_v2 | %.2f | (ledger.store.caching=true) |%n",
            cachedEos / baseEos));
    md.append(
        String.format(
            "| ledger with the record cache / without it (the default), exactly_once_v2 | %.2f | (what the cache pays) |%n",
            cachedEos / ledgerEos));
    md.append(
        "\nAll runs:\n\n| topology | guarantee | intents/s | stream threads' CPU µs per intent |\n"
            + "| --- | --- | ---: | ---: |\n");
    runs.forEach(
        r ->
            md.append(
                String.format(
                    "| %s | %s | %,.0f | %.1f |%n",
                    r.name(), r.guarantee(), r.perSecond(), r.cpuMicrosPerRecord())));
    Bench.writeReport("throughput", md);
  }

  /** Writes {@code bench/results/<name>-<date>.md} and prints it. */
}
