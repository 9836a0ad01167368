package dev.effectledger.connectors.reconcile;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Settles held keys from their lookups: owns turning a downstream's answer about a held key into
 * the resolving outcome for tool-outcomes (SUCCEEDED when found, RETRYABLE when provably not, none
 * when it could not tell), and publishing a pass's outcomes.
 */
final class Resolutions implements AutoCloseable {

  private final Producer<String, Outcome> producer;
  private final ReconcileFindings findings;
  private final Clock clock;

  Resolutions(Producer<String, Outcome> producer, ReconcileFindings findings, Clock clock) {
    this.producer = producer;
    this.findings = findings;
    this.clock = clock;
  }

  ToolReport resolve(
      Connector connector,
      AuditEvent held,
      List<ProducerRecord<String, Outcome>> out,
      String storeKey) {
    Lookup lookup = connector.lookup(effectKey(held));
    findings.found(
        storeKey,
        lookup.status()
            + ": "
            + switch (lookup.status()) {
              case FOUND -> "the downstream has the effect; settled as applied";
              case NOT_FOUND -> "the downstream has no effect; released";
              default -> "the downstream could not tell; still held";
            });
    Outcome.Builder outcome =
        Outcome.newBuilder()
            .setIdempotencyKey(held.getIdempotencyKey())
            .setTenant(held.getTenant())
            .setTool(held.getTool())
            .setAttempt(held.getAttempt())
            .setEffectKey(effectKey(held))
            .setIncarnation(held.getIncarnation())
            .setCompletedAt(clock.instant());
    switch (lookup.status()) {
      case FOUND -> {
        outcome
            .setStatus(OutcomeStatus.SUCCEEDED)
            .setResultJson(lookup.resultJson() == null ? "null" : lookup.resultJson())
            .setEffectId(lookup.effectId());
        out.add(new ProducerRecord<>(Topics.OUTCOMES, held.getIdempotencyKey(), outcome.build()));
        return new ToolReport(0, 0, 1, 0, 0);
      }
      case NOT_FOUND -> {
        outcome
            .setStatus(OutcomeStatus.RETRYABLE)
            .setError(
                ErrorInfo.newBuilder()
                    .setCode("RECONCILED_NO_EFFECT")
                    .setMessage("the downstream has no effect for the key")
                    .setRetriable(true)
                    .setCorrectiveAction("Send the intent again; it will run once.")
                    .build());
        out.add(new ProducerRecord<>(Topics.OUTCOMES, held.getIdempotencyKey(), outcome.build()));
        return new ToolReport(0, 0, 0, 1, 0);
      }
      default -> {
        return new ToolReport(0, 0, 0, 0, 1);
      }
    }
  }

  void publish(List<ProducerRecord<String, Outcome>> resolutions) {
    var sends = resolutions.stream().map(producer::send).toList();
    producer.flush();
    for (var send : sends) {
      try {
        send.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException(
            "Could not publish a reconciliation outcome; run the reconciler again", e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while publishing reconciliation outcomes", e);
      }
    }
  }

  /** The key the downstream knows the effect by: its effect key, else its idempotency key. */
  static String effectKey(AuditEvent event) {
    return event.getEffectKey() != null ? event.getEffectKey() : event.getIdempotencyKey();
  }

  @Override
  public void close() {
    producer.close();
  }
}
