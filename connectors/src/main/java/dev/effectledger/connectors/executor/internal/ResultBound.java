package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps an {@link EffectPerformer}'s outcomes publishable: owns replacing a result above {@link
 * EffectPerformer#MAX_RESULT_BYTES} by a marker, and dead-lettering the result, cut.
 */
final class ResultBound {

  // Logged under the performer's name, so existing log settings still apply.
  private static final Logger log = LoggerFactory.getLogger(EffectPerformer.class);

  private static final int MAX_RESULT_BYTES = EffectPerformer.MAX_RESULT_BYTES;

  private ResultBound() {}

  /**
   * A result too large to publish (a producer refuses records above its {@code max.request.size},
   * and an outcome that cannot be published would be retried for ever) is replaced in the outcome
   * by a marker naming its size and SHA-256, and dead-lettered, cut, with the dispatch's key. The
   * effect happened; the key still completes.
   */
  static EffectOutcome boundResult(
      Dispatch dispatch, EffectOutcome outcome, List<ProducerRecord<byte[], byte[]>> records) {
    if (!(outcome instanceof EffectOutcome.Succeeded s)) {
      return outcome;
    }
    byte[] result = s.resultJson().getBytes(StandardCharsets.UTF_8);
    if (result.length <= MAX_RESULT_BYTES) {
      return outcome;
    }
    String sha256 = DeadLetters.sha256(result);
    log.warn(
        "The result for key {} of tool {} is {} bytes, above {}: the outcome carries a marker, the result goes to {} cut",
        dispatch.getIdempotencyKey(),
        dispatch.getTool(),
        result.length,
        MAX_RESULT_BYTES,
        Topics.DISPATCH_DLQ);
    Headers headers =
        DeadLetters.headers(
            ErrorCode.RESULT_TOO_LARGE.name(),
            "the downstream's result for key "
                + dispatch.getIdempotencyKey()
                + " is "
                + result.length
                + " bytes; outcomes carry at most "
                + MAX_RESULT_BYTES,
            null,
            -1,
            -1);
    records.add(
        new ProducerRecord<>(
            Topics.DISPATCH_DLQ,
            null,
            EffectPerformer.utf8(dispatch.getIdempotencyKey()),
            DeadLetters.bounded(result, headers),
            headers));
    String marker =
        "{\"effectledger\":\""
            + ErrorCode.RESULT_TOO_LARGE
            + "\",\"bytes\":"
            + result.length
            + ",\"sha256\":\""
            + sha256
            + "\"}";
    return new EffectOutcome.Succeeded(marker, s.effectId(), s.records());
  }
}
