package dev.effectledger.topology.internal;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The ledger store and its deadline index, one task's share of both. The entries are changelogged;
 * the index is not, and is rebuilt from the entries when the task starts ({@link #rebuildIndex}).
 *
 * <p>The index holds {@code [kind][deadline, 8 bytes big-endian][store key]}, so RocksDB keeps it
 * sorted by deadline within each kind and finding what is due is one range scan that touches only
 * due entries. Index entries may go stale (an entry completed before its pending deadline, a window
 * changed); whoever reads one re-checks the entry against the current policy, so a stale index
 * entry costs one lookup and is never wrong.
 *
 * <p>Taken index entries are deleted, and RocksDB keeps their tombstones until a compaction; a scan
 * from the start of a kind would step over every one of them at each punctuation, a cost that grows
 * with the store (measured: bench/run state). So the index also keeps, per kind, a lower bound of
 * the index keys still in it ({@code [W][kind]}): a scan starts there, moves it past what it took,
 * and indexing below it (an outcome that arrived late, a re-index) lowers it. A key, not a
 * deadline: many entries can share one deadline.
 *
 * <p>For the same reason an entry that completes, is released or held before its pending deadline
 * keeps its pending index entry until that deadline: deleting it then would leave a tombstone ahead
 * of the wall-clock scan, which starts at now and would step over every such tombstone each second
 * (a profile of the 10-million-key bench found that scan's seeks the stream threads' largest cost).
 * The stale entry is taken at its deadline, costs one lookup and is skipped.
 */
final class Ledger {

  /** Which deadline an index entry is for. */
  enum Deadline {
    /** Wall-clock time a PENDING entry times out. */
    PENDING((byte) 'P'),
    /** Record time a SUCCEEDED or FAILED entry leaves its window. */
    EXPIRY((byte) 'E');

    private final byte prefix;

    Deadline(byte prefix) {
      this.prefix = prefix;
    }
  }

  /** A due index entry: its deadline and the store key it points at. */
  record Due(long deadline, String storeKey) {}

  private static final byte[] PRESENT = {1};
  private static final byte SCAN_FROM = 'W';

  private final KeyValueStore<String, LedgerEntry> entries;
  private final KeyValueStore<Bytes, byte[]> deadlines;

  Ledger(KeyValueStore<String, LedgerEntry> entries, KeyValueStore<Bytes, byte[]> deadlines) {
    this.entries = entries;
    this.deadlines = deadlines;
  }

  LedgerEntry get(String storeKey) {
    return entries.get(storeKey);
  }

  void put(LedgerEntry entry) {
    entries.put(LedgerStore.key(entry.getTenant(), entry.getIdempotencyKey()), entry);
  }

  void remove(String storeKey) {
    entries.delete(storeKey);
  }

  void index(Deadline kind, long deadline, String storeKey) {
    Bytes key = indexKey(kind, deadline, storeKey);
    deadlines.put(key, PRESENT);
    if (key.compareTo(scanFrom(kind)) < 0) {
      deadlines.put(scanFromKey(kind), key.get());
    }
  }

  /**
   * Removes and returns up to {@code max} index entries of {@code kind} due at or before {@code
   * now}, earliest first.
   */
  List<Due> takeDue(Deadline kind, long now, int max) {
    List<Due> due = new ArrayList<>();
    List<Bytes> taken = new ArrayList<>();
    Bytes from = scanFrom(kind);
    // Inclusive bound just past every key due at `now`: store keys are never empty.
    Bytes to = indexKey(kind, now + 1, "");
    if (from.compareTo(to) > 0) {
      return due;
    }
    try (KeyValueIterator<Bytes, byte[]> it = deadlines.range(from, to)) {
      while (it.hasNext() && due.size() < max) {
        KeyValue<Bytes, byte[]> next = it.next();
        ByteBuffer key = ByteBuffer.wrap(next.key.get());
        key.get();
        long deadline = key.getLong();
        if (deadline > now) {
          break;
        }
        String storeKey = StandardCharsets.UTF_8.decode(key).toString();
        due.add(new Due(deadline, storeKey));
        taken.add(next.key);
      }
    }
    taken.forEach(deadlines::delete);
    // Full: what is left starts just after the last key taken. Else everything due at `now` is
    // taken.
    Bytes next = due.size() >= max ? justAfter(taken.get(taken.size() - 1)) : to;
    if (next.compareTo(from) > 0) {
      deadlines.put(scanFromKey(kind), next.get());
    }
    return due;
  }

  private Bytes scanFrom(Deadline kind) {
    byte[] stored = deadlines.get(scanFromKey(kind));
    return stored == null ? Bytes.wrap(new byte[] {kind.prefix}) : Bytes.wrap(stored);
  }

  /** The smallest key after {@code key} in RocksDB's byte order: the key and a zero byte. */
  private static Bytes justAfter(Bytes key) {
    return Bytes.wrap(Arrays.copyOf(key.get(), key.get().length + 1));
  }

  private static Bytes scanFromKey(Deadline kind) {
    return Bytes.wrap(new byte[] {SCAN_FROM, kind.prefix});
  }

  /**
   * Indexes every live entry of the store: a PENDING one at {@code pendingDeadlineOf}, a settled
   * one at {@code expiryOf}. The index has no changelog of its own (it is derivable from the
   * entries, and its changelog cost as many writes as the entries'), so it is rebuilt this way each
   * time the task starts, after its ledger store is restored: on an empty state directory, after a
   * crash under at-least-once (RocksDB runs without a write-ahead log, so the index may have lost
   * what the changelog restored into the entries), and when the task moved here and back. Indexing
   * an entry again is harmless (the same index key), and so is an index entry left from before (it
   * is re-checked when due). It also re-applies the current windows, so a changed window purges on
   * time.
   *
   * @return how many entries it indexed
   */
  long rebuildIndex(
      ToLongFunction<LedgerEntry> pendingDeadlineOf, ToLongFunction<LedgerEntry> expiryOf) {
    long indexed = 0;
    try (KeyValueIterator<String, LedgerEntry> it = entries.all()) {
      while (it.hasNext()) {
        KeyValue<String, LedgerEntry> next = it.next();
        if (isFinal(next.value)) {
          index(Deadline.EXPIRY, expiryOf.applyAsLong(next.value), next.key);
          indexed++;
        } else if (next.value.getState() == LedgerState.PENDING) {
          index(Deadline.PENDING, pendingDeadlineOf.applyAsLong(next.value), next.key);
          indexed++;
        }
      }
    }
    return indexed;
  }

  static boolean isFinal(LedgerEntry entry) {
    return entry.getState() == LedgerState.SUCCEEDED || entry.getState() == LedgerState.FAILED;
  }

  private static Bytes indexKey(Deadline kind, long deadline, String storeKey) {
    byte[] key = storeKey.getBytes(StandardCharsets.UTF_8);
    return Bytes.wrap(
        ByteBuffer.allocate(1 + Long.BYTES + key.length)
            .put(kind.prefix)
            .putLong(Math.max(0, deadline))
            .put(key)
            .array());
  }
}
