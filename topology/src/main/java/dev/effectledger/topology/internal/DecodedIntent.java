package dev.effectledger.topology.internal;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ToolIntent;

/** What {@link IntentDecoder} made of one record of tool-intents. */
sealed interface DecodedIntent {

  /** A well-formed intent, ready for the ledger. */
  record Valid(ToolIntent intent, String replyTopic) implements DecodedIntent {}

  /**
   * A record the ledger cannot act on. {@code key} and {@code replyTopic} are null when they could
   * not be read; a reply is sent only when there is a key to send it under.
   */
  record Invalid(
      ErrorCode code, String message, String key, String tenant, String tool, String replyTopic)
      implements DecodedIntent {}
}
