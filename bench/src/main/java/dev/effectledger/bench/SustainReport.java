package dev.effectledger.bench;

import dev.effectledger.topology.LedgerConfig;
import java.io.IOException;
import java.time.Duration;
import java.util.List;

/**
 * The report of {@code bench/run sustain}: the minutes' figures, and whether the ledger's state
 * held steady after the first window (entries in the store within 10%, the later half's peak of
 * memtables and disk at most 25% above the earlier half's, the lag under five seconds of load).
 */
final class SustainReport {

  private static final double PLATEAU_TOLERANCE = 0.10;
  private static final double BYTES_TOLERANCE = 0.25;

  private SustainReport() {}

  /** What one minute of the run ended with. */
  record Minute(
      int minute,
      long produced,
      long completed,
      long expired,
      long live,
      long stored,
      long memtableBytes,
      long diskBytes,
      long lag) {}

  private static long stateBytes(Minute m) {
    return m.diskBytes() + Math.max(0, m.memtableBytes());
  }

  /**
   * Writes the report; true when the live entries and the lag held steady after the first window.
   */
  static boolean write(
      List<Minute> samples,
      int rate,
      double capacity,
      double load,
      Duration window,
      long late,
      String command)
      throws IOException {
    Duration purge = LedgerConfig.DEFAULT_PURGE_INTERVAL;
    // The first minute in which entries of the whole first window have had their purge.
    int steadyFrom = (int) Math.min(samples.size(), (window.plus(purge).toSeconds() + 59) / 60 + 1);
    Minute first = samples.get(steadyFrom - 1);
    Minute last = samples.get(samples.size() - 1);
    double growth = (double) (last.stored() - first.stored()) / Math.max(1, first.stored());
    long maxLag =
        samples.subList(steadyFrom - 1, samples.size()).stream()
            .mapToLong(Minute::lag)
            .max()
            .orElse(0);
    long completedSteady = last.completed() - first.completed();
    long expiredSteady = last.expired() - first.expired();
    double expectedLive = rate * window.toMillis() / 1000.0;
    // RocksDB's bytes move in a saw-tooth (memtables fill and flush, files pile up until a
    // compaction drops the deleted entries): bounded means the later steady minutes' peak is no
    // higher than the earlier ones'.
    List<Minute> steady = samples.subList(steadyFrom - 1, samples.size());
    int half = steady.size() / 2;
    long earlyPeak =
        steady.subList(0, half).stream().mapToLong(SustainReport::stateBytes).max().orElse(0);
    long latePeak =
        steady.subList(half, steady.size()).stream()
            .mapToLong(SustainReport::stateBytes)
            .max()
            .orElse(0);
    double bytesGrowth = (double) latePeak / Math.max(1, earlyPeak);
    boolean plateau =
        samples.size() > steadyFrom
            && Math.abs(growth) <= PLATEAU_TOLERANCE
            && maxLag <= 5L * rate * 2
            && bytesGrowth <= 1 + BYTES_TOLERANCE;

    StringBuilder md = Bench.reportHead("Sustained load: ledger state over many windows", command);
    md.append("  \n");
    md.append(
            "One embedded broker, 8 partitions, exactly_once_v2, 2 stream threads, the processor's default punctuations (")
        .append("expiry every ")
        .append(LedgerConfig.DEFAULT_PENDING_CHECK_INTERVAL.toMillis())
        .append(" ms of wall clock and ")
        .append(purge.toSeconds())
        .append(" s of stream time, ")
        .append(LedgerConfig.DEFAULT_PUNCTUATION_BUDGET.toMillis())
        .append(" ms budget each); one write-idempotent tool, window ")
        .append(window)
        .append(". Each key: an intent, then a")
        .append(
            " SUCCEEDED outcome from a stand-in executor that answers each committed dispatch at once.  \n");
    md.append(
        capacity > 0
            ? String.format(
                "Calibration: %,.0f completed keys/s as fast as the ledger reads; load %.0f%% of it: **%,d keys/s**"
                    + " (%,d records/s).%n%n",
                capacity, load * 100, rate, rate * 2)
            : String.format("Load: **%,d keys/s** (%,d records/s), as given.%n%n", rate, rate * 2));
    md.append(
        "Live entries: dispatched minus expired, from the ledger's decisions; in the store: the ledger store read whole."
            + " Memtables: RocksDB's cur-size-all-mem-tables; disk: both stores' files.\n\n");
    md.append(
        "| minute | keys produced | completed | expired | live entries | in the store | memtables (MiB) | disk (MiB) |"
            + " lag (records) |\n");
    md.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (Minute m : samples) {
      md.append(
          String.format(
              "| %d | %,d | %,d | %,d | %,d | %,d | %s | %.1f | %,d |%n",
              m.minute(),
              m.produced(),
              m.completed(),
              m.expired(),
              m.live(),
              m.stored(),
              m.memtableBytes() < 0 ? "n/a" : String.format("%.1f", m.memtableBytes() / 1048576.0),
              m.diskBytes() / 1048576.0,
              m.lag()));
    }
    md.append(String.format("%n| figure | value | holds when |%n| --- | ---: | --- |%n"));
    md.append(
        String.format(
            "| entries in the store, minute %d to %d | %+.1f%% | within ±%.0f%% |%n",
            first.minute(), last.minute(), growth * 100, PLATEAU_TOLERANCE * 100));
    md.append(
        String.format(
            "| peak memtables + disk, later half of minutes %d to %d / earlier half | %.2f | at most %.2f |%n",
            first.minute(), last.minute(), bytesGrowth, 1 + BYTES_TOLERANCE));
    md.append(
        String.format(
            "| expired / completed, minute %d to %d | %.3f | about 1 |%n",
            first.minute(), last.minute(), (double) expiredSteady / Math.max(1, completedSteady)));
    md.append(
        String.format(
            "| entries in the store at the end / (load × window) | %.2f | about 1: the sizing rule |%n",
            last.stored() / expectedLive));
    md.append(
        String.format(
            "| entries in the store / live entries counted, at the end | %.3f | about 1 |%n",
            (double) last.stored() / Math.max(1, last.live())));
    md.append(
        String.format(
            "| memtables and disk per entry in the store, at the end | %,.0f bytes | (reference) |%n",
            (double) (last.diskBytes() + Math.max(0, last.memtableBytes()))
                / Math.max(1, last.stored())));
    md.append(
        String.format(
            "| largest lag from minute %d | %,d records | under 5 s of load (%,d) |%n",
            first.minute(), maxLag, 5L * rate * 2));
    md.append(String.format("| late outcomes | %,d | 0 |%n", late));
    md.append(
        String.format(
            "%n**%s.**%n",
            plateau
                ? "The ledger's state held steady under sustained load"
                : "The ledger's state did NOT hold steady: see the live entries and the lag above"));
    Bench.writeReport("sustain", md);
    return plateau && late == 0;
  }
}
