package dev.effectledger.topology;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where one ledger task's scans of its deadline index start, one cursor per kind of deadline, as
 * its index store keeps them, remembered so that indexing a new key does not read the store. Each
 * of the task's processors has a ledger of its own over the same stores and may move a cursor (the
 * intents' processor takes what is due and indexes new keys, the outcomes' processor indexes
 * completions), so they share this, as they share {@link TaskCounts}. Every write of a cursor goes
 * to the store and here; {@link #forget()} when the store may have changed underneath (the task's
 * processors start on a restored store), after which each cursor is read from the store again.
 * Reading the cursor for every new key was a RocksDB read per intent: 3.5% of the ledger's stream
 * threads in a profile of {@code bench/run throughput} (docs/performance.md, 2026-11-27). Used by
 * the thread running the task, which changes when the task moves to another stream thread of the
 * instance, hence a concurrent map.
 */
public final class IndexCursors {

  /** A cursor read from a store that had none. */
  private static final byte[] NONE = new byte[0];

  private final Map<Byte, byte[]> known = new ConcurrentHashMap<>();

  /** True when the cursor of {@code kind} is remembered (read or written since the last forget). */
  public boolean knows(byte kind) {
    return known.containsKey(kind);
  }

  /** The remembered cursor of {@code kind}; null when the store has none or it is not known. */
  public byte[] cursor(byte kind) {
    byte[] cursor = known.get(kind);
    return cursor == NONE ? null : cursor;
  }

  /** The store now keeps {@code cursor} for {@code kind} (null: none). */
  public void set(byte kind, byte[] cursor) {
    known.put(kind, cursor == null ? NONE : cursor);
  }

  /** Forgets every cursor: the next read of each goes to the store. */
  public void forget() {
    known.clear();
  }
}
