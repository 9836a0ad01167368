package dev.effectledger.topology.internal;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ToolIntent;

/** What {@link IntentDecoder} made of one record of tool-intents. */
sealed interface DecodedIntent {

  /**
   * A well-formed intent, ready for the ledger. {@code aliases} are the keys the same step has
   * under the tool's other honoured key rules (empty unless its rules changed within the retry
   * horizon, see {@code AppliedPolicy}): the ledger answers from an entry under one of them rather
   * than start a second effect. {@code decider} is the key under the newest honoured rules the step
   * can be keyed by: the task owning it decides whether the step starts (null without aliases).
   */
  record Valid(ToolIntent intent, String replyTopic, java.util.List<Alias> aliases, String decider)
      implements DecodedIntent {
    Valid(ToolIntent intent, String replyTopic) {
      this(intent, replyTopic, java.util.List.of(), null);
    }

    /** The arguments hash the step has under the rules that give {@code key}, or null. */
    String hashOf(String key) {
      if (key.equals(intent.getIdempotencyKey())) {
        return intent.getArgumentsHash();
      }
      return aliases.stream()
          .filter(a -> a.key().equals(key))
          .map(Alias::argumentsHash)
          .findFirst()
          .orElse(null);
    }
  }

  /** The key a step has under other key rules, and its arguments hash under them. */
  record Alias(String key, String argumentsHash) {}

  /**
   * A record the ledger cannot act on. {@code key} and {@code replyTopic} are null when they could
   * not be read; a reply is sent only when there is a key to send it under.
   */
  record Invalid(
      ErrorCode code, String message, String key, String tenant, String tool, String replyTopic)
      implements DecodedIntent {}
}
