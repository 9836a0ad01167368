package dev.effectledger.topology.internal;

import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ProcessingContext;
import org.apache.kafka.streams.processor.api.ProcessorContext;

/**
 * A ledger task's punctuations: the deadline index's rebuild after the task starts, the PENDING
 * entries whose timeout passed (re-dispatched or held, by their tool's policy), and the settled
 * entries whose window passed (purged), each in batches within one time budget so a punctuation
 * never stalls the task's processing for long. The transitions themselves are {@link
 * LedgerActions}'.
 */
final class LedgerPunctuations {

  private final LedgerActions actions;
  private final Ledger ledger;
  private final LivePolicies.Task task;
  private final ProcessingContext context;
  private final int batchSize;
  private final long budgetNanos;
  private final long intervalNanos;
  private final LongSupplier ticker;
  private final boolean exactlyOnce;

  LedgerPunctuations(
      LedgerActions actions,
      Ledger ledger,
      LivePolicies.Task task,
      ProcessingContext context,
      LedgerConfig config,
      boolean exactlyOnce) {
    this.actions = actions;
    this.ledger = ledger;
    this.task = task;
    this.context = context;
    this.batchSize = config.batchSize();
    this.budgetNanos = config.punctuationBudget().toNanos();
    this.intervalNanos = config.pendingCheckInterval().toNanos();
    this.ticker = config.ticker();
    this.exactlyOnce = exactlyOnce;
  }

  /** Schedules the wall-clock and stream-time punctuations on the task's {@code context}. */
  void schedule(ProcessorContext<?, ?> context, LedgerConfig config) {
    context.schedule(
        config.pendingCheckInterval(), PunctuationType.WALL_CLOCK_TIME, this::onWallClock);
    context.schedule(config.purgeInterval(), PunctuationType.STREAM_TIME, this::onStreamTime);
  }

  /**
   * Wall-clock punctuation: go on with the index's rebuild if the task started recently,
   * re-dispatch or hold the PENDING entries whose timeout passed, then purge the settled entries
   * whose window passed in the task's stream time, within one budget. Purging here too, every
   * second rather than once per stream-time interval, is what lets expiry keep pace with a
   * sustained completion rate.
   */
  void onWallClock(long wallNow) {
    long budgetEnd = ticker.getAsLong() + budgetNanos;
    rebuildIndex(budgetEnd);
    timeoutsDue(wallNow, budgetEnd);
    purgeDue(context.currentStreamTimeMs(), budgetEnd);
  }

  /** Stream-time punctuation: purge what is due, within a budget, right after stream time moved. */
  void onStreamTime(long streamTime) {
    long budgetEnd = ticker.getAsLong() + budgetNanos;
    rebuildIndex(budgetEnd);
    purgeDue(streamTime, budgetEnd);
  }

  /**
   * Goes on with the deadline index's rebuild after the task started, while the budget lasts and
   * the stream thread's {@link RebuildShare} has time left.
   */
  private void rebuildIndex(long budgetEnd) {
    if (!ledger.rebuilding()) {
      return;
    }
    RebuildShare share = RebuildShare.ofThisThread(ticker);
    long start = ticker.getAsLong();
    long left = share.left(start, intervalNanos, budgetNanos);
    if (left == 0) {
      return; // the thread's other tasks used this interval's share
    }
    long end = Math.min(budgetEnd, start + left);
    while (ledger.rebuildStep(
                actions::pendingDeadline,
                actions::expiresAt,
                exactlyOnce ? task::intentsReadAtLeast : offset -> {},
                batchSize)
            == batchSize
        && ticker.getAsLong() < end) {
      // the next batch
    }
    share.spend(ticker.getAsLong() - start);
  }

  private void timeoutsDue(long wallNow, long budgetEnd) {
    List<Ledger.Due> batch;
    do {
      batch = ledger.takeDue(Ledger.Deadline.PENDING, wallNow, batchSize);
      batch.forEach(due -> timeOut(due, wallNow));
    } while (batch.size() == batchSize && ticker.getAsLong() < budgetEnd);
  }

  private void timeOut(Ledger.Due due, long wallNow) {
    LedgerEntry entry = ledger.get(due.storeKey());
    if (entry == null || entry.getState() != LedgerState.PENDING) {
      return;
    }
    ToolPolicy policy = actions.policyOf(entry.getTool());
    long deadline = LedgerActions.pendingDeadline(entry, policy);
    if (deadline > wallNow) {
      ledger.index(Ledger.Deadline.PENDING, deadline, due.storeKey());
    } else if (policy.mayRedispatchAfter(entry.getAttempts())) {
      actions.redispatch(entry, policy, wallNow);
    } else {
      actions.hold(
          entry,
          ErrorCode.PENDING_TIMEOUT,
          "no outcome within " + policy.pendingTimeout() + " after attempt " + entry.getAttempts(),
          wallNow);
    }
  }

  private void purgeDue(long streamTime, long budgetEnd) {
    if (streamTime < 0) {
      return; // no record yet: no stream time
    }
    List<Ledger.Due> batch;
    do {
      batch = ledger.takeDue(Ledger.Deadline.EXPIRY, streamTime, batchSize);
      batch.forEach(due -> purge(due, streamTime));
    } while (batch.size() == batchSize && ticker.getAsLong() < budgetEnd);
  }

  private void purge(Ledger.Due due, long streamTime) {
    LedgerEntry entry = ledger.get(due.storeKey());
    if (entry == null || !Ledger.isFinal(entry)) {
      return;
    }
    long expiresAt = actions.expiresAt(entry);
    if (expiresAt > streamTime) {
      ledger.index(Ledger.Deadline.EXPIRY, expiresAt, due.storeKey());
    } else {
      actions.expire(due.storeKey(), entry, streamTime);
    }
  }
}
