package dev.effectledger.bench;

import dev.effectledger.bench.StateBench.Figures;
import java.io.IOException;
import java.util.List;

/** The report of {@code bench/run state}: size, restore and purge of a small and a large store. */
final class StateReport {

  private StateReport() {}

  /** A wait from {@code StateBench.awaitCompactions}: negative when it gave up. */
  private static String settled(double seconds) {
    return seconds >= 0
        ? String.format("settled in %.0f s", seconds)
        : String.format("still compacting after %.0f s", -seconds);
  }

  static void write(Figures small, Figures large, String command) throws IOException {
    StringBuilder md = Bench.reportHead("Ledger state: size, restore and purge", command);
    md.append("  \n");
    md.append(
        "Each store on a fresh embedded broker, 8 partitions, exactly_once_v2, record cache on, 24 h window. Entries are"
            + " completed by SUCCEEDED outcomes produced directly. Disk bytes are the RocksDB files after a clean close"
            + " (LZ4-compressed SSTs as Kafka Streams configures them); changelog bytes are the broker's log size of the ledger"
            + " store's changelog (not compacted yet). Restore: a new instance with an empty state directory, until RUNNING."
            + " Purge: once RocksDB has no compaction pending or running after the restore (the time it took is given),"
            + " ticks on every partition move stream time past the window; the cost is the time from the first to the"
            + " last expiry over the entries expired (each: a store delete, an index delete, an audit record, two changelog"
            + " tombstones), and the CPU time the stream threads spent from their first to their last expiry over the same"
            + " count (the purge's own work with its RocksDB reads, without RocksDB's background compactions or the"
            + " broker, which share the 2 cores).\n\n");
    md.append(
        "Restore time is from the first store partition's restore start to the last one's end (the listener's"
            + " view), the changelogs of the ledger store and of the deadline index together.\n\n");
    md.append(
        "| store | keys | ledger bytes/entry on disk | deadline index bytes/entry | changelog bytes/entry | restore"
            + " (s) | restore per million entries (s) | expired | purge µs/entry | purge stream-thread CPU µs/entry |\n"
            + "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (Figures f : List.of(small, large)) {
      md.append(
          String.format(
              "| %s | %,d | %.0f | %.0f | %.0f | %.1f | %.1f | %,d | %.1f | %.1f |%n",
              f == small ? "small" : "large",
              f.keys(),
              (double) f.diskBytes() / f.keys(),
              (double) f.deadlineDiskBytes() / f.keys(),
              (double) f.changelogBytes() / f.keys(),
              f.restoreSeconds(),
              f.restoreSeconds() / (f.keys() / 1e6),
              f.expired(),
              f.purgeMicrosPerEntry(),
              f.purgeCpuMicrosPerEntry()));
    }
    md.append(
        String.format(
            "%nStore size at %,d keys: %,d MiB ledger + %,d MiB deadline index on disk, %,d MiB changelog.%n",
            large.keys(),
            large.diskBytes() >> 20,
            large.deadlineDiskBytes() >> 20,
            large.changelogBytes() >> 20));
    md.append(
        String.format(
            "Purge cost, large store / small store: %.2f in time, %.2f in stream-thread CPU (flat is 1.0).%n",
            large.purgeMicrosPerEntry() / small.purgeMicrosPerEntry(),
            large.purgeCpuMicrosPerEntry() / small.purgeCpuMicrosPerEntry()));
    md.append(
        String.format(
            "Waited for RocksDB's compactions after the restore before the purge: %s (small), %s (large).%n",
            settled(small.compactionSettleSeconds()), settled(large.compactionSettleSeconds())));
    Bench.writeReport("state", md);
  }
}
