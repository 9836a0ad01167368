package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.transactions.HangingTransactions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link JournalReader} load does about the transactions that hold a journal partition back:
 * owns finding the hanging ones, repairing them (markers committed again as started before any
 * abort, or a commit when the coordinator committed), and the error that stops a load still held
 * back at its limit.
 */
final class JournalRepair {

  // Logged under the reader's name, so existing log settings still apply.
  private static final Logger log = LoggerFactory.getLogger(JournalReader.class);

  private final JournalReader.Repairs repairs;
  private final Duration limit;

  /**
   * @param limit how long one load may wait for open transactions to end, named in the error
   */
  JournalRepair(JournalReader.Repairs repairs, Duration limit) {
    this.repairs = repairs;
    this.limit = limit;
  }

  List<HangingTransactions.Hanging> findHanging(List<TopicPartition> behind) {
    if (behind.isEmpty()) {
      return List.of();
    }
    try {
      return repairs.hanging(behind);
    } catch (RuntimeException e) {
      log.debug("Could not look for hanging transactions on {}: {}", behind, e.toString());
      return List.of();
    }
  }

  /**
   * Commits the hanging transactions whose coordinator decided to commit them. For the others,
   * commits again, as started, every marker from the first such offset of each partition to its
   * end, and only then aborts them. If that commit fails nothing is aborted.
   */
  void repair(
      AttemptJournal journal,
      List<HangingTransactions.Hanging> hanging,
      Map<TopicPartition, Long> ends) {
    Map<TopicPartition, Long> firstOpen = new LinkedHashMap<>();
    for (HangingTransactions.Hanging h : hanging) {
      if (h.decision() == HangingTransactions.Decision.COMMITTED) {
        if (repairs.end(h)) {
          log.warn(
              "Committed a hanging transaction on the attempt journal ({}): its coordinator had"
                  + " committed it, and the marker never reached the partition.",
              h);
        }
      } else {
        firstOpen.merge(h.partition(), h.startOffset(), Math::min);
      }
    }
    List<ProducerRecord<byte[], byte[]>> restarts = new ArrayList<>();
    firstOpen.forEach(
        (tp, from) ->
            restarts.addAll(journal.restarts(tp, repairs.readUncommitted(tp, from, ends.get(tp)))));
    if (!restarts.isEmpty()) {
      repairs.recommit(restarts);
    }
    for (HangingTransactions.Hanging h : hanging) {
      if (h.decision() != HangingTransactions.Decision.COMMITTED && repairs.end(h)) {
        log.warn(
            "Aborted a hanging transaction on the attempt journal ({}), left open by a broker crash:"
                + " no coordinator would ever end it. {} marker(s) from it on were committed again"
                + " as started first; their dispatches are answered from a lookup or held.",
            h,
            restarts.size());
      }
    }
  }

  IllegalStateException stalled(List<TopicPartition> partitions) {
    List<String> open = describeOpen(partitions);
    return new IllegalStateException(
        "Could not read the attempt journal "
            + partitions
            + " to its end within "
            + limit
            + " (a transaction on it stayed open); is the cluster healthy? The executor stops rather than run effects it"
            + " cannot tell apart from started ones; restart it."
            + (open.isEmpty()
                ? ""
                : " Open transactions on it: "
                    + String.join("; ", open)
                    + ". One its coordinator no longer lists as ongoing is a hanging transaction left by"
                    + " a broker crash; the executor aborts those it finds once they are older than"
                    + " the hanging threshold. Read docs/operations.md (Honest limits)"
                    + " before aborting one by hand: its start markers may belong to effects that ran."));
  }

  /** The open transactions on {@code partitions}, described; empty when they cannot be found. */
  private List<String> describeOpen(Collection<TopicPartition> partitions) {
    try {
      return repairs.describeOpen(partitions);
    } catch (RuntimeException e) {
      log.debug("Could not describe the open transactions on {}: {}", partitions, e.toString());
      return List.of();
    }
  }
}
