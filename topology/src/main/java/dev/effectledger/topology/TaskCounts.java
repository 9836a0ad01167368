package dev.effectledger.topology;

import dev.effectledger.schema.LedgerState;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How many of one ledger task's entries are in flight (PENDING) and held (UNKNOWN), per tool: what
 * the console and {@code GET /v1/console/...} show as live gauges. Kept in memory, not in a store:
 * the task counts its entries during the deadline index's rebuild after it starts (which reads
 * every entry anyway) and moves the counts at each state change. An entry the rebuild has not
 * reached yet is counted when it reaches it, not at its changes, so each entry is counted once; the
 * counts are whole once {@link #rebuilding()} is false. Written by the task's stream thread, read
 * by the HTTP threads.
 */
public final class TaskCounts {

  private static final int PENDING = 0;
  private static final int HELD = 1;

  private final ConcurrentMap<String, AtomicLongArray> byTool = new ConcurrentHashMap<>();
  private volatile boolean rebuilding;

  /** Forgets every count: a rebuild starts counting from nothing. */
  public void restart() {
    byTool.clear();
    rebuilding = true;
  }

  /** The rebuild has counted every entry. */
  public void rebuilt() {
    rebuilding = false;
  }

  /** True while the counts may still miss entries the rebuild has not reached. */
  public boolean rebuilding() {
    return rebuilding;
  }

  /** Counts one entry of {@code tool} in {@code state} more (delta 1) or less (delta -1). */
  public void add(String tool, LedgerState state, int delta) {
    int slot = slot(state);
    if (slot >= 0) {
      byTool.computeIfAbsent(tool, t -> new AtomicLongArray(2)).addAndGet(slot, delta);
    }
  }

  /** Per tool: {@code [in flight, held]}. */
  public Map<String, long[]> snapshot() {
    Map<String, long[]> out = new TreeMap<>();
    byTool.forEach((tool, counts) -> out.put(tool, new long[] {counts.get(0), counts.get(1)}));
    return out;
  }

  private static int slot(LedgerState state) {
    if (state == LedgerState.PENDING) {
      return PENDING;
    }
    return state == LedgerState.UNKNOWN ? HELD : -1;
  }
}
