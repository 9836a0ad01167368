package dev.effectledger.connectors.reconcile;

import dev.effectledger.schema.Topics;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the reconciler found about each held key, for the console: owns the findings last published
 * to {@value Topics#FINDINGS}, the ones due at the end of a pass, and their best-effort producer.
 */
final class ReconcileFindings implements AutoCloseable {

  // Logged under the reconciler's name, so existing log settings still apply.
  private static final Logger log = LoggerFactory.getLogger(Reconciler.class);

  private static final com.fasterxml.jackson.databind.ObjectMapper FINDING_JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  private final Clock clock;

  /**
   * The finding this reconciler last published to {@value Topics#FINDINGS} per held key (store
   * key): published again only when it changes, tombstoned when the key leaves UNKNOWN.
   */
  private final Map<String, String> published = new HashMap<>();

  /** Findings to publish at the end of the pass: store key to JSON, null for a tombstone. */
  private final Map<String, String> findings = new HashMap<>();

  private final Producer<String, String> findingsProducer;
  private boolean findingsOn = true;

  ReconcileFindings(Producer<String, String> findingsProducer, Clock clock) {
    this.findingsProducer = findingsProducer;
    this.clock = clock;
  }

  /** Notes what this pass found about the held key {@code storeKey}, to publish if it changed. */
  void found(String storeKey, String finding) {
    String status = finding.substring(0, Math.max(0, finding.indexOf(':')));
    String before = published.get(storeKey);
    if (before != null && before.equals(status)) {
      return;
    }
    findings.put(
        storeKey,
        FINDING_JSON
            .createObjectNode()
            .put("status", status)
            .put("detail", finding.substring(finding.indexOf(':') + 1).trim())
            .put("since", clock.instant().toString())
            .put("by", "reconciler")
            .toString());
    published.put(storeKey, status);
  }

  /** The key {@code storeKey} is no longer held: a finding published for it goes. */
  void noLongerHeld(String storeKey) {
    if (published.remove(storeKey) != null) {
      findings.put(storeKey, null); // no longer held: the finding goes
    }
  }

  /**
   * Publishes this pass's findings to {@value Topics#FINDINGS}, for the console. Best effort: a
   * deployment without the topic (made by {@code effectledger processor} with topics.create) loses
   * only what operators see there, and is told once.
   */
  void publishFindings() {
    if (findings.isEmpty()) {
      return;
    }
    if (findingsOn) {
      try {
        var sends =
            findings.entrySet().stream()
                .map(
                    f ->
                        findingsProducer.send(
                            new ProducerRecord<>(Topics.FINDINGS, f.getKey(), f.getValue())))
                .toList();
        findingsProducer.flush();
        for (var send : sends) {
          send.get();
        }
      } catch (ExecutionException | RuntimeException e) {
        findingsOn = false;
        log.warn(
            "Could not publish what the lookups found to {} ({}); the console will not show it."
                + " Create the topic (compacted) or let effectledger processor create it.",
            Topics.FINDINGS,
            e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    findings.clear();
  }

  @Override
  public void close() {
    findingsProducer.close();
  }
}
