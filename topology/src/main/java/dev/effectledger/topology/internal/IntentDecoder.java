package dev.effectledger.topology.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.WireFormatException;
import dev.effectledger.topology.LedgerConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.errors.StreamsException;

/**
 * Turns raw tool-intents records into intents or named rejections. Decoding happens here rather
 * than in a Kafka Streams deserialization handler because a rejected intent needs a reply on the
 * result topic as well as a dead-letter record, and only a processor can produce both in the same
 * transaction.
 */
final class IntentDecoder {

  private static final Pattern TENANT = Pattern.compile("[A-Za-z0-9._:-]{1,128}");
  private static final JsonFactory JSON = new JsonFactory();

  private final Deserializer<ToolIntent> deserializer;
  private final int maxArgumentsBytes;
  private final Pattern replyTopics;
  private final int partitions;
  private final ToolPolicies policies;
  private final boolean verifyHash;

  IntentDecoder(Deserializer<ToolIntent> deserializer, LedgerConfig config) {
    this.deserializer = deserializer;
    this.maxArgumentsBytes = config.maxArgumentsBytes();
    this.replyTopics = config.replyTopics();
    this.partitions = config.intentPartitions();
    this.policies = config.policies();
    this.verifyHash = config.verifyArgumentsHash();
  }

  /**
   * The record at {@code partition} of tool-intents (negative when unknown) as an intent or a named
   * rejection.
   */
  DecodedIntent decode(byte[] rawKey, byte[] rawValue, int partition) {
    String recordKey = rawKey == null ? null : new String(rawKey, StandardCharsets.UTF_8);
    String replyKey = recordKey == null || recordKey.isEmpty() ? null : recordKey;
    if (rawValue == null) {
      return invalid(ErrorCode.MALFORMED_RECORD, "record has no value", replyKey, null);
    }
    ToolIntent intent;
    try {
      intent = deserializer.deserialize(Topics.INTENTS, rawValue);
    } catch (WireFormatException e) {
      if (e.reason() == WireFormatException.Reason.REGISTRY_UNAVAILABLE) {
        // Not bad input: fail the task so it retries rather than dead-lettering a good intent.
        throw new StreamsException("Schema Registry unavailable while reading an intent", e);
      }
      ErrorCode code =
          e.reason() == WireFormatException.Reason.UNKNOWN_SCHEMA_ID
              ? ErrorCode.UNKNOWN_SCHEMA_ID
              : ErrorCode.MALFORMED_RECORD;
      return invalid(code, e.getMessage(), replyKey, null);
    } catch (SerializationException e) {
      return invalid(ErrorCode.MALFORMED_RECORD, e.getMessage(), replyKey, null);
    }
    String replyTopic = intent.getReplyTopic() == null ? Topics.RESULTS : intent.getReplyTopic();
    if (!replyTopics.matcher(replyTopic).matches()) {
      return new DecodedIntent.Invalid(
          ErrorCode.INVALID_REPLY_TOPIC,
          "replyTopic '" + replyTopic + "' does not match " + replyTopics.pattern(),
          keyOf(intent, replyKey),
          intent.getTenant(),
          intent.getTool(),
          Topics.RESULTS);
    }
    String key = intent.getIdempotencyKey();
    if (recordKey == null || recordKey.isEmpty() || key.isEmpty()) {
      return new DecodedIntent.Invalid(
          ErrorCode.MISSING_KEY,
          recordKey == null || recordKey.isEmpty()
              ? "record has no key"
              : "intent has an empty idempotencyKey",
          keyOf(intent, replyKey),
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    if (!recordKey.equals(key)) {
      return new DecodedIntent.Invalid(
          ErrorCode.KEY_MISMATCH,
          "record key differs from the intent's idempotencyKey",
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    int expected =
        partitions > 0 && partition >= 0
            ? Utils.toPositive(Utils.murmur2(rawKey)) % partitions
            : partition;
    if (expected != partition) {
      return new DecodedIntent.Invalid(
          ErrorCode.WRONG_PARTITION,
          "the intent is in partition "
              + partition
              + " of "
              + Topics.INTENTS
              + ", but Kafka's default partitioner puts its key in partition "
              + expected
              + " of "
              + partitions,
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    String missing = missingField(intent);
    if (missing != null) {
      return new DecodedIntent.Invalid(
          ErrorCode.INVALID_INTENT, missing, key, intent.getTenant(), intent.getTool(), replyTopic);
    }
    byte[] arguments = intent.getArguments().getBytes(StandardCharsets.UTF_8);
    if (arguments.length > maxArgumentsBytes) {
      return new DecodedIntent.Invalid(
          ErrorCode.ARGUMENTS_TOO_LARGE,
          "arguments are " + arguments.length + " bytes; the limit is " + maxArgumentsBytes,
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    ToolPolicy policy = policies.forTool(intent.getTool()).orElse(null);
    boolean checkHash = verifyHash && policy != null && policy.isLedgered();
    // The hash check parses the arguments and refuses what is not JSON itself; only the intents
    // it does not check need this scan.
    if (!checkHash && !isJson(arguments)) {
      return new DecodedIntent.Invalid(
          ErrorCode.ARGUMENTS_NOT_JSON,
          "arguments are not one JSON value",
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    if (checkHash) {
      DecodedIntent.Invalid refused = checkArguments(intent, policy, key, replyTopic);
      if (refused != null) {
        return refused;
      }
    }
    return new DecodedIntent.Valid(intent, replyTopic);
  }

  /**
   * Refuses an intent whose arguments lack a field the tool's key rules require, or whose
   * argumentsHash is not its arguments' hash under those rules; null when neither. Only for tools
   * that go through the ledger: the hash is what tells a retry from a reused key, and a wrong one
   * would let a key carry other arguments unnoticed.
   */
  private static DecodedIntent.Invalid checkArguments(
      ToolIntent intent, ToolPolicy policy, String key, String replyTopic) {
    JsonNode arguments;
    String expected;
    try {
      arguments = ArgumentsHash.parse(intent.getArguments());
      expected = ArgumentsHash.of(arguments, policy.key().ignore());
    } catch (IllegalArgumentException e) {
      return new DecodedIntent.Invalid(
          ErrorCode.ARGUMENTS_NOT_JSON,
          e.getMessage(),
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    for (String pointer : policy.key().require()) {
      JsonNode value = arguments.at(pointer);
      if (value.isMissingNode() || value.isNull()) {
        return new DecodedIntent.Invalid(
            ErrorCode.MISSING_REQUIRED_FIELD,
            "tool '"
                + intent.getTool()
                + "' needs argument "
                + pointer
                + " to tell one action from another",
            key,
            intent.getTenant(),
            intent.getTool(),
            replyTopic);
      }
    }
    if (expected.equals(intent.getArgumentsHash())) {
      return null;
    }
    String rules =
        policy.key().ignore().isEmpty() ? "" : " once " + policy.key().ignore() + " are left out";
    return new DecodedIntent.Invalid(
        ErrorCode.ARGUMENTS_HASH_MISMATCH,
        "argumentsHash "
            + intent.getArgumentsHash()
            + " is not the arguments' hash: they hash to "
            + expected
            + rules
            + " (tool '"
            + intent.getTool()
            + "')",
        key,
        intent.getTenant(),
        intent.getTool(),
        replyTopic);
  }

  private static String keyOf(ToolIntent intent, String recordKey) {
    return intent.getIdempotencyKey().isEmpty() ? recordKey : intent.getIdempotencyKey();
  }

  private static String missingField(ToolIntent intent) {
    if (!TENANT.matcher(intent.getTenant()).matches()) {
      return "tenant must be 1-128 of A-Z a-z 0-9 . _ : -";
    }
    if (intent.getTool().isEmpty()) {
      return "tool is empty";
    }
    if (intent.getArgumentsHash().isEmpty()) {
      return "argumentsHash is empty";
    }
    if (intent.getRunId().isEmpty() || intent.getStepId().isEmpty()) {
      return "runId and stepId must be set";
    }
    return null;
  }

  /** True when the bytes hold exactly one JSON value; streams the tokens, builds no tree. */
  private static boolean isJson(byte[] bytes) {
    try (JsonParser parser = JSON.createParser(bytes)) {
      if (parser.nextToken() == null) {
        return false;
      }
      parser.skipChildren();
      return parser.nextToken() == null;
    } catch (IOException e) {
      return false;
    }
  }

  private static DecodedIntent invalid(
      ErrorCode code, String message, String key, String replyTopic) {
    return new DecodedIntent.Invalid(
        code, message, key, "", "", replyTopic == null ? Topics.RESULTS : replyTopic);
  }
}
