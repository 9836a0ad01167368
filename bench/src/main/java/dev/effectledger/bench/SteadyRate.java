package dev.effectledger.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * A run's rate past its start-up, from samples of its progress (records committed so far).
 *
 * <p>A run's whole time includes a start-up that does not depend on the input's size: joining the
 * group, creating the tasks, opening their stores, the first fetches and commits (measured
 * 2026-11-27, whole time less the records at the steady rate: 0.8-1.0 s for the baseline, 1.0-1.1 s
 * for the ledger). On a 200,000-intent run that is a third of the baseline's time and a quarter of
 * the ledger's, so a whole-run rate flatters the slower side. The steady rate is taken from the
 * first sample at or past a tenth of the input to the run's end.
 */
final class SteadyRate {

  private record Sample(long nanos, long done) {}

  private final long total;
  private final List<Sample> samples = new ArrayList<>();

  /** For a run of {@code total} records. */
  SteadyRate(long total) {
    this.total = total;
  }

  /** Records that {@code done} records were committed at {@code nanos} (System.nanoTime). */
  void sample(long nanos, long done) {
    samples.add(new Sample(nanos, done));
  }

  /**
   * Records per second from the first sample at or past a tenth of the input to {@code endNanos},
   * the time the run was seen to have committed everything; {@code wholeRun} if no sample fell
   * between (a run too short to tell).
   */
  double perSecond(long endNanos, double wholeRun) {
    for (Sample s : samples) {
      if (s.done() >= total / 10) {
        if (s.done() >= total || endNanos <= s.nanos()) {
          return wholeRun;
        }
        return (total - s.done()) / ((endNanos - s.nanos()) / 1e9);
      }
    }
    return wholeRun;
  }
}
