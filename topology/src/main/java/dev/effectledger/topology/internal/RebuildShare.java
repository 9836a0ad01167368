package dev.effectledger.topology.internal;

/**
 * The time a stream thread gives the deadline index's rebuilds, across all its tasks: at most one
 * punctuation budget per wall-clock punctuation interval.
 *
 * <p>Each task rebuilds its index after it starts, within its punctuations' budget. A budget per
 * task let a thread running eight tasks spend eight budgets a second (1.6 s of every second at the
 * defaults) on rebuilds: after a processor restart on 10 million entries its stream thread rebuilt
 * for some 40 s before it answered an intent (a thread dump of {@code bench/run failover --entries
 * 10000000}, 2026-11-29). Shared per thread, the rebuilds take at most a budget's share of it, task
 * after task, and intents go on being answered meanwhile; a rebuild then takes longer (9 µs an
 * entry at 200 ms a second: about 45 s per million entries on a thread), during which a pending
 * timeout or a purge can come late, never be lost. One per thread ({@link ThreadLocal}): a stream
 * thread runs its tasks' punctuations one after another, never two at once.
 */
final class RebuildShare {

  private static final ThreadLocal<RebuildShare> OF_THREAD =
      ThreadLocal.withInitial(RebuildShare::new);

  private boolean started;
  private long windowStart;
  private long spent;

  /** The calling stream thread's share. */
  static RebuildShare ofThisThread() {
    return OF_THREAD.get();
  }

  /**
   * Nanoseconds left at {@code now} in the current window of {@code windowNanos}, of {@code
   * budgetNanos}; a window starts at the first call past the previous one's end (or when the time
   * source went back: tests that start their ticker again on the same thread).
   */
  long left(long now, long windowNanos, long budgetNanos) {
    if (!started || now < windowStart || now - windowStart >= windowNanos) {
      started = true;
      windowStart = now;
      spent = 0;
    }
    return Math.max(0, budgetNanos - spent);
  }

  /** Counts {@code nanos} spent rebuilding against the current window. */
  void spend(long nanos) {
    spent += Math.max(0, nanos);
  }
}
