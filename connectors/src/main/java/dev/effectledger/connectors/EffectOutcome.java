package dev.effectledger.connectors;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/** What one call to a connector did. */
public sealed interface EffectOutcome {

  /** A stable code for the outcome's cause, e.g. {@code HTTP_503} or {@code CONNECTION_REFUSED}. */
  String code();

  /**
   * The effect happened.
   *
   * @param resultJson the downstream's answer as JSON text
   * @param effectId the downstream's id of the effect, for reconciliation; may be null
   * @param records records the executor must produce in its own transaction (the Kafka connector's
   *     effect); empty for other connectors
   */
  record Succeeded(String resultJson, String effectId, List<EffectRecord> records)
      implements EffectOutcome {
    public Succeeded {
      Objects.requireNonNull(resultJson, "resultJson");
      records = List.copyOf(records);
    }

    public Succeeded(String resultJson, String effectId) {
      this(resultJson, effectId, List.of());
    }

    @Override
    public String code() {
      return "OK";
    }
  }

  /** The downstream refused the request; it never will accept it. Never retried. */
  record Failed(String code, String message) implements EffectOutcome {}

  /**
   * The effect provably did not happen (connection refused, 429, 503); retried with backoff.
   *
   * @param retryAfter the downstream's requested wait, if it gave one
   */
  record Retryable(String code, String message, Optional<Duration> retryAfter)
      implements EffectOutcome {
    public Retryable(String code, String message) {
      this(code, message, Optional.empty());
    }
  }

  /** The effect may have happened (timeout after sending, 500, reset); nobody can tell. */
  record Ambiguous(String code, String message) implements EffectOutcome {}

  /**
   * A tool that performs several writes did some and not the others. Never retried: the ledger
   * holds the key for an operator, with {@code reportJson} (which writes happened, which did not,
   * the corrective action) as its result.
   *
   * @param message what happened, naming the writes (no argument values)
   * @param reportJson JSON naming the writes done and not done
   * @param correctiveAction what an operator does before settling the key
   */
  record Partial(String message, String reportJson, String correctiveAction)
      implements EffectOutcome {
    public Partial {
      Objects.requireNonNull(reportJson, "reportJson");
      Objects.requireNonNull(correctiveAction, "correctiveAction");
    }

    @Override
    public String code() {
      return "PARTIAL_SUCCESS";
    }
  }
}
