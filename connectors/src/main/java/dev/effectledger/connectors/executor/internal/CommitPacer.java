package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.executor.ExecutorConfig;
import java.time.Clock;
import java.time.Duration;
import java.util.Queue;
import org.apache.kafka.clients.consumer.Consumer;

/**
 * The executor poll loop's pacing: when a transaction is due ({@link #commitDue}), how long the
 * loop may block meanwhile ({@link #nextWait}, {@link #effectsWait}), and the backpressure that
 * pauses the consumer while too many effects wait or run ({@link #applyBackpressure}). Owns the
 * time of the last commit and whether the consumer is paused. Used by the poll thread only.
 */
public final class CommitPacer {

  /** The longest the poll loop blocks when nothing is running or waiting to be committed. */
  static final Duration IDLE_WAIT = Duration.ofMillis(50);

  /**
   * With early commits, how long the loop waits for running effects to finish before it takes what
   * the consumer has fetched meanwhile: a new dispatch waits at most this long to start, and the
   * loop looks at the consumer at most 500 times a second while effects run.
   */
  static final Duration EFFECTS_WAIT = Duration.ofMillis(2);

  private final ExecutorConfig config;
  private final Clock clock;
  private final OffsetTracker tracker;
  private final OutcomeTransactions transactions;
  private final Queue<Finished> finished;
  private final Consumer<byte[], byte[]> consumer;

  /** Effects read and not finished at which the consumer is paused. */
  private final int backlog;

  private boolean paused;
  private long lastCommitMs;

  /**
   * @param finished finished effects not yet moved into a transaction
   * @param backlog how many effects read and not finished pause the consumer
   */
  public CommitPacer(
      ExecutorConfig config,
      Clock clock,
      OffsetTracker tracker,
      OutcomeTransactions transactions,
      Queue<Finished> finished,
      Consumer<byte[], byte[]> consumer,
      int backlog) {
    this.config = config;
    this.clock = clock;
    this.tracker = tracker;
    this.transactions = transactions;
    this.finished = finished;
    this.consumer = consumer;
    this.backlog = backlog;
  }

  /** Whether {@link #applyBackpressure} has paused the consumer. */
  public boolean paused() {
    return paused;
  }

  /** A new assignment is not paused. */
  public void forgetPause() {
    paused = false;
  }

  /** A transaction is being committed now: the intervals count from here. */
  public void committing() {
    lastCommitMs = clock.millis();
  }

  /**
   * Whether to commit now: the commit interval is up, or (early commits) every effect read so far
   * has finished, something waits to be published and the minimum interval is up. Dispatches become
   * readable in bursts, one per ledger commit; this commits each burst when its effects are done
   * rather than at a point of the interval unrelated to it.
   */
  public boolean commitDue() {
    long sinceLast = sinceLastCommitMs();
    if (sinceLast >= config.commitInterval().toMillis()) {
      return true;
    }
    return config.commitsEarly()
        && sinceLast >= config.minCommitInterval().toMillis()
        && tracker.pending() == 0
        && !transactions.isEmpty();
  }

  /**
   * How long the loop may block: up to {@link #IDLE_WAIT} when nothing is running or waiting to be
   * committed, else only until the next commit is due, so that a finished effect waits for its
   * commit no longer than the commit interval (with early commits and nothing running, no longer
   * than the minimum interval).
   */
  public Duration nextWait() {
    if (tracker.pending() == 0 && transactions.isEmpty() && finished.isEmpty()) {
      return IDLE_WAIT;
    }
    long untilCommit = config.commitInterval().toMillis() - sinceLastCommitMs();
    if (config.commitsEarly() && tracker.pending() == 0) {
      untilCommit =
          Math.min(untilCommit, config.minCommitInterval().toMillis() - sinceLastCommitMs());
    }
    return Duration.ofMillis(Math.max(1, Math.min(IDLE_WAIT.toMillis(), untilCommit)));
  }

  /**
   * How long the loop waits for running effects before it looks at the consumer again: {@link
   * #EFFECTS_WAIT}, or less when the commit is due sooner.
   */
  public Duration effectsWait() {
    long untilCommit = config.commitInterval().toMillis() - sinceLastCommitMs();
    return Duration.ofMillis(Math.max(1, Math.min(EFFECTS_WAIT.toMillis(), untilCommit)));
  }

  private long sinceLastCommitMs() {
    return clock.millis() - lastCommitMs;
  }

  /**
   * Pauses the whole assignment once {@code backlog} effects are read and not finished, and resumes
   * it once fewer are.
   */
  public void applyBackpressure() {
    boolean full = tracker.pending() >= backlog;
    if (full && !paused) {
      consumer.pause(consumer.assignment());
      paused = true;
    } else if (!full && paused) {
      consumer.resume(consumer.paused());
      paused = false;
    }
  }
}
