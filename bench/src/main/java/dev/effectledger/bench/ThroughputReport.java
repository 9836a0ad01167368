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

  /** The median CPU the whole process spent per intent past start-up, in µs. */
  private static double processCpu(List<Run> runs, String name, String guarantee) {
    return median(runs, name, guarantee, Run::processCpuMicrosPerRecord);
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
        .append(" runs each, alternating sides, after a warm-up round not counted. ")
        .append(
            "Rates are past each run's start-up (from the first sample of its committed offsets"
                + " at or past a tenth of the input, every 20 ms, to the end), which the ratios"
                + " use; the rate over the whole run, start-up included, is beside it.\n\n");
    md.append(
        "| topology | guarantee | intents/s (median) | whole run, intents/s (median) | stream"
            + " threads' CPU µs per intent (median) | the process's CPU µs per intent past"
            + " start-up (median) |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (String[] row :
        new String[][] {
          {"baseline", StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.BASELINE_BATCHED, StreamsConfig.EXACTLY_ONCE_V2},
          {"ledger", StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.SMALL_BATCHES, StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.UNCHECKED, StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.CACHED, StreamsConfig.EXACTLY_ONCE_V2},
          {Bench.TRANSACTIONAL_STORES_OFF, StreamsConfig.EXACTLY_ONCE_V2},
          {"baseline", StreamsConfig.AT_LEAST_ONCE},
          {"ledger", StreamsConfig.AT_LEAST_ONCE},
          {Bench.CACHED, StreamsConfig.AT_LEAST_ONCE},
          {Bench.TRANSACTIONAL_STORES_OFF, StreamsConfig.AT_LEAST_ONCE}
        }) {
      md.append(
          String.format(
              "| %s | %s | %,.0f | %,.0f | %.1f | %.1f |%n",
              row[0],
              row[1],
              median(runs, row[0], row[1]),
              median(runs, row[0], row[1], Run::wholeRunPerSecond),
              cpu(runs, row[0], row[1]),
              processCpu(runs, row[0], row[1])));
    }
    md.append(String.format("%n| ratio | value | target |%n| --- | ---: | --- |%n"));
    md.append(
        String.format(
            "| ledger / baseline, exactly_once_v2 | %.2f | >= 0.6 (toward 0.8) |%n",
            ledgerEos / baseEos));
    md.append(
        String.format(
            "| the same over the whole runs, start-up included | %.2f | (as measured until"
                + " 2026-11-27) |%n",
            median(runs, "ledger", StreamsConfig.EXACTLY_ONCE_V2, Run::wholeRunPerSecond)
                / median(runs, "baseline", StreamsConfig.EXACTLY_ONCE_V2, Run::wholeRunPerSecond)));
    md.append(
        String.format(
            "| ledger / baseline by round, exactly_once_v2 | %s | (each round's two runs back to"
                + " back) |%n",
            byRound(runs)));
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
            "| baseline / ledger, the process's CPU per intent past start-up, exactly_once_v2 |"
                + " %.2f | (the rate ratio, were both to keep every core busy: broker, clients,"
                + " JIT and GC included) |%n",
            processCpu(runs, "baseline", StreamsConfig.EXACTLY_ONCE_V2)
                / processCpu(runs, "ledger", StreamsConfig.EXACTLY_ONCE_V2)));
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
    for (String guarantee : List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE)) {
      md.append(
          String.format(
              "| ledger (transactional state stores, the default) / without them, %s | %.2f in"
                  + " rate, %.2f in stream threads' CPU per intent |"
                  + " (%s: enable.transactional.statestores=false) |%n",
              guarantee,
              median(runs, "ledger", guarantee)
                  / median(runs, Bench.TRANSACTIONAL_STORES_OFF, guarantee),
              cpu(runs, "ledger", guarantee) / cpu(runs, Bench.TRANSACTIONAL_STORES_OFF, guarantee),
              Bench.TRANSACTIONAL_STORES_OFF));
    }
    md.append(
        "\nAll runs:\n\n| topology | guarantee | intents/s | whole run, intents/s | stream"
            + " threads' CPU µs per intent | the process's CPU µs per intent past start-up | of"
            + " which the JIT compilers |\n"
            + "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    runs.forEach(
        r ->
            md.append(
                String.format(
                    "| %s | %s | %,.0f | %,.0f | %.1f | %.1f | %.1f |%n",
                    r.name(),
                    r.guarantee(),
                    r.perSecond(),
                    r.wholeRunPerSecond(),
                    r.cpuMicrosPerRecord(),
                    r.processCpuMicrosPerRecord(),
                    r.compileMicrosPerRecord())));
    Bench.writeReport("throughput", md);
  }

  /**
   * Each round's ledger / baseline under exactly_once_v2, in the order they ran: a round's two runs
   * follow each other, so the machine's drift over a run touches both alike.
   */
  static String byRound(List<Run> runs) {
    StringBuilder out = new StringBuilder();
    Run baseline = null;
    for (Run r : runs) {
      if (!r.guarantee().equals(StreamsConfig.EXACTLY_ONCE_V2)) {
        continue;
      }
      if (r.name().equals("baseline")) {
        baseline = r;
      } else if (r.name().equals("ledger") && baseline != null) {
        out.append(out.length() == 0 ? "" : ", ")
            .append(String.format("%.2f", r.perSecond() / baseline.perSecond()));
        baseline = null;
      }
    }
    return out.toString();
  }
}
