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

  private record Sample(long nanos, long done, long cpuNanos, long compileNanos) {}

  private final long total;
  private final List<Sample> samples = new ArrayList<>();

  /** For a run of {@code total} records. */
  SteadyRate(long total) {
    this.total = total;
  }

  /**
   * Records that {@code done} records were committed at {@code nanos} (System.nanoTime), when the
   * process had used {@code cpuNanos} of CPU time and its JIT compilers {@code compileNanos}.
   */
  void sample(long nanos, long done, long cpuNanos, long compileNanos) {
    samples.add(new Sample(nanos, done, cpuNanos, compileNanos));
  }

  /**
   * Records per second from the first sample at or past a tenth of the input to {@code endNanos},
   * the time the run was seen to have committed everything; {@code wholeRun} if no sample fell
   * between (a run too short to tell).
   */
  double perSecond(long endNanos, double wholeRun) {
    Sample s = from();
    if (s == null || endNanos <= s.nanos()) {
      return wholeRun;
    }
    return (total - s.done()) / ((endNanos - s.nanos()) / 1e9);
  }

  /**
   * The process's CPU time per record in µs over the same stretch as {@link #perSecond}, to {@code
   * endCpuNanos}; NaN if no sample fell within the run. Where both sides keep every core busy, the
   * inverse ratio of two runs' figures is the ratio of their rates, without what the machine's
   * other tenants take from either.
   */
  double cpuMicrosPerRecord(long endCpuNanos) {
    Sample s = from();
    return s == null ? Double.NaN : (endCpuNanos - s.cpuNanos()) / 1e3 / (total - s.done());
  }

  /**
   * The JIT compilers' time per record in µs over the same stretch as {@link #perSecond}, to {@code
   * endCompileNanos}; NaN if no sample fell within the run. Work a JVM does while its code is still
   * being compiled, which a long-running one has done; the compilers' time, not their CPU, so more
   * than what they took of {@link #cpuMicrosPerRecord} when they waited for a core.
   */
  double compileMicrosPerRecord(long endCompileNanos) {
    Sample s = from();
    return s == null ? Double.NaN : (endCompileNanos - s.compileNanos()) / 1e3 / (total - s.done());
  }

  /** The first sample at or past a tenth of the input, if it is short of the whole. */
  private Sample from() {
    for (Sample s : samples) {
      if (s.done() >= total / 10) {
        return s.done() >= total ? null : s;
      }
    }
    return null;
  }
}
