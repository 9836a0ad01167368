package dev.effectledger.topology.internal;

import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ledger's refusals of an intent: a reply naming the reason, an audit record, and, for an
 * intent that cannot be decided at all, a dead-letter record with it. Nothing is refused silently.
 */
final class Refusals {

  private static final Logger log = LoggerFactory.getLogger(IntentProcessor.class);

  private final LedgerActions actions;

  Refusals(LedgerActions actions) {
    this.actions = actions;
  }

  /**
   * Answers the intent with {@code code} and audits it: CONFLICT for a reused key, else REJECTED.
   */
  void refuse(ToolIntent intent, String replyTopic, ErrorCode code, String message, long now) {
    actions
        .outputs()
        .reply(
            Replies.rejected(
                intent.getIdempotencyKey(),
                intent.getTenant(),
                intent.getTool(),
                code.toError(message),
                now),
            replyTopic,
            now);
    actions
        .outputs()
        .audit(
            intent.getIdempotencyKey(),
            intent.getTenant(),
            intent.getTool(),
            code == ErrorCode.IDEMPOTENCY_KEY_REUSED ? AuditType.CONFLICT : AuditType.REJECTED,
            null,
            0,
            code.name(),
            now);
  }

  /**
   * Dead-letters an intent that cannot be read or is not valid, naming why; when its key can be
   * read, its caller also gets the refusal as a reply, and the audit says it.
   */
  void deadLetter(Record<byte[], byte[]> record, DecodedIntent.Invalid invalid) {
    log.warn("Dead-lettering an intent: {} for key {}", invalid.code(), invalid.key());
    long now = record.timestamp();
    actions
        .outputs()
        .deadLetter(record.key(), record.value(), invalid.code(), invalid.message(), now);
    if (invalid.key() != null) {
      actions
          .outputs()
          .reply(
              Replies.rejected(
                  invalid.key(),
                  invalid.tenant(),
                  invalid.tool(),
                  invalid.code().toError(invalid.message()),
                  now),
              invalid.replyTopic(),
              now);
      actions
          .outputs()
          .audit(
              invalid.key(),
              invalid.tenant(),
              invalid.tool(),
              AuditType.REJECTED,
              null,
              0,
              invalid.code().name(),
              now);
    }
  }
}
