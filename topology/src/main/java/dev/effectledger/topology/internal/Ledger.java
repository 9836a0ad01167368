package dev.effectledger.topology.internal;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.topology.HeldKeys;
import dev.effectledger.topology.IndexCursors;
import dev.effectledger.topology.TaskCounts;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The ledger store and its deadline index, one task's share of both. The entries are changelogged;
 * the index is not, and is rebuilt from the entries after the task starts ({@link #startRebuild}).
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
 * deadline: many entries can share one deadline. The task's processors remember the cursors they
 * read and write ({@link IndexCursors}), so indexing a key reads no cursor from the store.
 *
 * <p>For the same reason an entry that completes, is released or held before its pending deadline
 * keeps its pending index entry until that deadline: deleting it then would leave a tombstone ahead
 * of the wall-clock scan, which starts at now and would step over every such tombstone each second
 * (a profile of the 10-million-key bench found that scan's seeks the stream threads' largest cost).
 * The stale entry is taken at its deadline, costs one lookup and is skipped.
 *
 * <p>The same store holds the index of held keys ({@link HeldKeys}: {@code [H][store key]}, one per
 * UNKNOWN entry), so listing what waits for an operator reads only those, and the task's live
 * counts of in-flight and held entries ({@link TaskCounts}). Both are kept at each state change
 * ({@link #moved}) and rebuilt with the deadlines.
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

  /** Where a rebuild stands: the next store key to index (empty: from the first). */
  private static final Bytes REBUILD_FROM = Bytes.wrap(new byte[] {'R'});

  private final KeyValueStore<String, LedgerEntry> entries;
  private final KeyValueStore<Bytes, byte[]> deadlines;
  private final TaskCounts counts;
  private final IndexCursors cursors;

  Ledger(KeyValueStore<String, LedgerEntry> entries, KeyValueStore<Bytes, byte[]> deadlines) {
    this(entries, deadlines, new TaskCounts(), new IndexCursors());
  }

  /**
   * With the task's live counts and index cursors, which every ledger of the task's processors
   * shares.
   */
  Ledger(
      KeyValueStore<String, LedgerEntry> entries,
      KeyValueStore<Bytes, byte[]> deadlines,
      TaskCounts counts,
      IndexCursors cursors) {
    this.entries = entries;
    this.deadlines = deadlines;
    this.counts = counts;
    this.cursors = cursors;
  }

  TaskCounts counts() {
    return counts;
  }

  /**
   * Records that the entry under {@code storeKey} of {@code tool} moved from state {@code from}
   * (null: it is new) to {@code to} (null: it left the store): keeps the held index and the task's
   * counts. An entry a running rebuild has not reached yet is left to the rebuild's count.
   */
  void moved(String storeKey, String tool, LedgerState from, LedgerState to) {
    if (from == to) {
      return;
    }
    if (to == LedgerState.UNKNOWN) {
      deadlines.put(HeldKeys.indexKey(storeKey), PRESENT);
    } else if (from == LedgerState.UNKNOWN) {
      deadlines.delete(HeldKeys.indexKey(storeKey));
    }
    if (counts.rebuilding()) {
      byte[] cursor = deadlines.get(REBUILD_FROM);
      if (cursor != null
          && Bytes.wrap(storeKey.getBytes(StandardCharsets.UTF_8)).compareTo(Bytes.wrap(cursor))
              >= 0) {
        return; // the rebuild counts it when it gets there
      }
    }
    if (from != null) {
      counts.add(tool, from, -1);
    }
    if (to != null) {
      counts.add(tool, to, 1);
    }
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
      scanFrom(kind, key);
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
      scanFrom(kind, next);
    }
    return due;
  }

  private Bytes scanFrom(Deadline kind) {
    if (!cursors.knows(kind.prefix)) {
      cursors.set(kind.prefix, deadlines.get(scanFromKey(kind)));
    }
    byte[] stored = cursors.cursor(kind.prefix);
    return stored == null ? Bytes.wrap(new byte[] {kind.prefix}) : Bytes.wrap(stored);
  }

  private void scanFrom(Deadline kind, Bytes key) {
    deadlines.put(scanFromKey(kind), key.get());
    cursors.set(kind.prefix, key.get());
  }

  /** The smallest key after {@code key} in RocksDB's byte order: the key and a zero byte. */
  private static Bytes justAfter(Bytes key) {
    return Bytes.wrap(Arrays.copyOf(key.get(), key.get().length + 1));
  }

  private static Bytes scanFromKey(Deadline kind) {
    return Bytes.wrap(new byte[] {SCAN_FROM, kind.prefix});
  }

  /**
   * Starts a rebuild of the index from the entries, carried out by {@link #rebuildStep}. The index
   * has no changelog of its own (it is derivable from the entries, and its changelog cost as many
   * writes as theirs), so a task rebuilds it each time it starts, after its ledger store is
   * restored: the state directory may be empty, the index may have lost what the changelog restored
   * into the entries (a crash under at-least-once: RocksDB runs without a write-ahead log), or the
   * task may have run elsewhere meanwhile. Indexing an entry again is harmless (the same index
   * key), and so is an index entry left from before (it is re-checked when due). A rebuild also
   * re-applies the current windows, so a changed window purges on time.
   */
  void startRebuild() {
    List<Bytes> held = new ArrayList<>();
    try (KeyValueIterator<Bytes, byte[]> it = deadlines.range(HeldKeys.FIRST, HeldKeys.PAST_LAST)) {
      it.forEachRemaining(kv -> held.add(kv.key));
    }
    held.forEach(deadlines::delete); // re-indexed from the entries, which alone are kept for sure
    counts.restart();
    cursors.forget(); // the store may have been restored, or changed while the task ran elsewhere
    deadlines.put(REBUILD_FROM, new byte[0]);
  }

  /** True while a rebuild has entries left to index. */
  boolean rebuilding() {
    return deadlines.get(REBUILD_FROM) != null;
  }

  /**
   * Indexes up to {@code max} entries from where the rebuild stands, in store-key order: a PENDING
   * one at {@code pendingDeadlineOf}, a settled one at {@code expiryOf}. Done in steps, within the
   * punctuations' budget, rather than all at once when the task starts: at about 9 µs an entry
   * (measured: bench/run state), a whole store at once would hold the task back from processing for
   * seconds per million entries; meanwhile a deadline can only be late, never lost.
   *
   * <p>{@code started} is given the incarnation of each entry that has one (the intent offset that
   * started it).
   *
   * @return how many entries it looked at; 0 when no rebuild is under way
   */
  int rebuildStep(
      ToLongFunction<LedgerEntry> pendingDeadlineOf,
      ToLongFunction<LedgerEntry> expiryOf,
      LongConsumer started,
      int max) {
    byte[] cursor = deadlines.get(REBUILD_FROM);
    if (cursor == null) {
      return 0;
    }
    int seen = 0;
    String last = null;
    boolean more;
    try (KeyValueIterator<String, LedgerEntry> it =
        cursor.length == 0
            ? entries.all()
            : entries.range(new String(cursor, StandardCharsets.UTF_8), null)) {
      while (it.hasNext() && seen < max) {
        KeyValue<String, LedgerEntry> next = it.next();
        if (isFinal(next.value)) {
          index(Deadline.EXPIRY, expiryOf.applyAsLong(next.value), next.key);
        } else if (next.value.getState() == LedgerState.PENDING) {
          index(Deadline.PENDING, pendingDeadlineOf.applyAsLong(next.value), next.key);
        } else if (next.value.getState() == LedgerState.UNKNOWN) {
          deadlines.put(HeldKeys.indexKey(next.key), PRESENT);
        }
        counts.add(next.value.getTool(), next.value.getState(), 1);
        if (next.value.getIncarnation() != null) {
          started.accept(next.value.getIncarnation());
        }
        last = next.key;
        seen++;
      }
      more = it.hasNext();
    }
    if (more) {
      // The smallest store key after the last one indexed.
      deadlines.put(REBUILD_FROM, (last + '\u0000').getBytes(StandardCharsets.UTF_8));
    } else {
      deadlines.delete(REBUILD_FROM);
      counts.rebuilt();
    }
    return seen;
  }

  static boolean isFinal(LedgerEntry entry) {
    return entry.getState() == LedgerState.SUCCEEDED || entry.getState() == LedgerState.FAILED;
  }

  static Bytes indexKey(Deadline kind, long deadline, String storeKey) {
    byte[] key = storeKey.getBytes(StandardCharsets.UTF_8);
    return Bytes.wrap(
        ByteBuffer.allocate(1 + Long.BYTES + key.length)
            .put(kind.prefix)
            .putLong(Math.max(0, deadline))
            .put(key)
            .array());
  }
}
