package dev.effectledger.topology.internal;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.PolicyException;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.topology.LivePolicies;
import java.util.HashSet;
import java.util.Set;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ProcessingContext;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the tool policies {@code effectledger tools apply} publishes to tool-policy. The topic
 * has a partition per tool-intents partition, each with the same document, so every ledger task
 * reads each version itself and switches to it at one point of its own processing: the records it
 * processed before were decided under the old version, those after under the new, and the switch
 * commits with them (the version is kept in the task's {@value LedgerStore#POLICY} store). A task
 * that moves or restores goes on with the version its store holds; one that starts on an empty
 * store reads the topic from its start (it is compacted: the latest version) before the intents
 * that came after it.
 *
 * <p>A policy whose windows or pending timeouts got shorter re-indexes the task's entries in the
 * punctuations' bounded steps ({@link Ledger#startRebuild}), so the shorter deadlines are met;
 * longer ones need no rescan (an entry taken from the index before its new deadline is indexed
 * again). A record that is not a policy document the ledger can read is logged with what to do and
 * skipped: the task keeps the version it has.
 */
public final class PolicyProcessor implements Processor<String, byte[], Object, Object> {

  private static final Logger log = LoggerFactory.getLogger(PolicyProcessor.class);

  /** The one key of the policy store. */
  static final String APPLIED = "applied";

  private final LivePolicies live;
  private ProcessorContext<Object, Object> context;
  private LivePolicies.Task task;
  private KeyValueStore<String, byte[]> store;
  private Ledger ledger;

  public PolicyProcessor(LivePolicies live) {
    this.live = live;
  }

  @Override
  public void init(ProcessorContext<Object, Object> context) {
    this.context = context;
    this.task = live.task(context.taskId());
    this.store = context.getStateStore(LedgerStore.POLICY);
    KeyValueStore<String, LedgerEntry> entries = context.getStateStore(LedgerStore.NAME);
    KeyValueStore<Bytes, byte[]> deadlines = context.getStateStore(LedgerStore.DEADLINES);
    this.ledger = new Ledger(entries, deadlines, task.counts(), task.cursors());
    restore(context, task);
  }

  /** Moves {@code task} to the version its policy store keeps, if newer than what it has. */
  static void restore(ProcessingContext context, LivePolicies.Task task) {
    KeyValueStore<String, byte[]> store = context.getStateStore(LedgerStore.POLICY);
    byte[] stored = store.get(APPLIED);
    if (stored == null) {
      return;
    }
    try {
      task.advance(AppliedPolicy.fromJson(stored));
    } catch (PolicyException e) {
      throw new IllegalStateException(
          "Task "
              + context.taskId()
              + " kept a tool policy it cannot read: "
              + e.getMessage()
              + " Run the processor version that applied it, or apply a policy this version reads.",
          e);
    }
  }

  @Override
  public void process(Record<String, byte[]> record) {
    if (record.value() == null) {
      return;
    }
    AppliedPolicy next;
    try {
      next = AppliedPolicy.fromJson(record.value());
    } catch (PolicyException e) {
      log.error(
          "Task {} skips a tool-policy record it cannot apply ({}) and keeps version {}."
              + " Publish policies with 'effectledger tools apply'.",
          context.taskId(),
          e.getMessage(),
          task.current().version());
      return;
    }
    AppliedPolicy before = task.current();
    if (!task.advance(next)) {
      return;
    }
    store.put(APPLIED, record.value());
    boolean shorter = shortens(before.policies(), next.policies());
    if (shorter) {
      ledger.startRebuild();
    }
    log.info(
        "Task {} applies tool policy version {} (was {}){}",
        context.taskId(),
        next.version(),
        before.version(),
        shorter ? "; shorter deadlines: re-indexing its entries in steps" : "");
  }

  @Override
  public void close() {
    live.close(context.taskId());
  }

  /**
   * True when some tool's entries would leave their window or time out sooner under {@code after}
   * than under {@code before}.
   */
  static boolean shortens(ToolPolicies before, ToolPolicies after) {
    Set<String> tools = new HashSet<>(before.tools().keySet());
    tools.addAll(after.tools().keySet());
    for (String tool : tools) {
      var old = before.forEntryOf(tool);
      var now = after.forEntryOf(tool);
      if (now.window().compareTo(old.window()) < 0
          || now.pendingTimeout().compareTo(old.pendingTimeout()) < 0) {
        return true;
      }
    }
    return false;
  }
}
