package dev.effectledger.topology.internal;

import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.LongSupplier;

/**
 * The time a stream thread gives the deadline index's rebuilds, across all its tasks: one
 * punctuation budget per wall-clock punctuation interval, refilled as time passes.
 *
 * <p>Each task rebuilds its index after it starts, within its punctuations' budget. A budget per
 * task let a thread running eight tasks spend eight budgets a second (1.6 s of every second at the
 * defaults) on rebuilds: after a processor restart on 10 million entries its stream thread rebuilt
 * for some 40 s before it answered an intent (a thread dump of {@code bench/run failover --entries
 * 10000000}, 2026-11-29). Shared per thread, the rebuilds take at most a budget's share of it, task
 * after task, and intents go on being answered meanwhile; a rebuild then takes longer (9 µs an
 * entry at 200 ms a second: about 45 s per million entries on a thread), during which a pending
 * timeout or a purge can come late, never be lost. One per thread and time source: a stream thread
 * runs its tasks' punctuations one after another, never two at once, and all the tasks of one
 * topology read the time from its {@code LedgerConfig.ticker()} (a test's own ticker gets a share
 * of its own).
 */
final class RebuildShare {

  private static final ThreadLocal<Map<LongSupplier, RebuildShare>> OF_THREAD =
      ThreadLocal.withInitial(WeakHashMap::new);

  private boolean started;
  private long last;
  private long left;

  /** The calling stream thread's share of the time {@code ticker} tells. */
  static RebuildShare ofThisThread(LongSupplier ticker) {
    return OF_THREAD.get().computeIfAbsent(ticker, t -> new RebuildShare());
  }

  /**
   * Nanoseconds the thread may rebuild for at {@code now}: the share refills at {@code budgetNanos}
   * per {@code windowNanos}, up to one budget (full at the first call), so punctuations that run a
   * little early or late still get their part.
   */
  long left(long now, long windowNanos, long budgetNanos) {
    if (!started) {
      started = true;
      left = budgetNanos;
    } else if (now > last) {
      double refill = (double) (now - last) * budgetNanos / windowNanos;
      left = (long) Math.min(budgetNanos, left + refill);
    }
    last = Math.max(last, now);
    return left;
  }

  /** Counts {@code nanos} spent rebuilding against the share. */
  void spend(long nanos) {
    left = Math.max(0, left - Math.max(0, nanos));
  }
}
