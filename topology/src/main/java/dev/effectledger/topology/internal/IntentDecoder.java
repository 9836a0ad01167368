package dev.effectledger.topology.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ArgumentRules;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.KeyDerivation;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.WireFormatException;
import dev.effectledger.topology.LedgerConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
  private final boolean verifyHash;

  IntentDecoder(Deserializer<ToolIntent> deserializer, LedgerConfig config) {
    this.deserializer = deserializer;
    this.maxArgumentsBytes = config.maxArgumentsBytes();
    this.replyTopics = config.replyTopics();
    this.partitions = config.intentPartitions();
    this.verifyHash = config.verifyArgumentsHash();
  }

  /**
   * The record at {@code partition} of tool-intents (negative when unknown) as an intent or a named
   * rejection.
   */
  DecodedIntent decode(
      byte[] rawKey,
      byte[] rawValue,
      int partition,
      AppliedPolicy applied,
      long recordTime,
      boolean routed) {
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
    // A routed intent's record key is the key of the task it was sent to (the processor checks that
    // it is one of the step's keys); the partition check below holds for it all the same.
    if (!routed && !recordKey.equals(key)) {
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
    ToolPolicy policy = applied.policies().forTool(intent.getTool()).orElse(null);
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
      return checkArguments(
          intent,
          policy,
          applied.honouredRules(intent.getTool(), policy, recordTime),
          key,
          replyTopic);
    }
    return new DecodedIntent.Valid(intent, replyTopic);
  }

  /**
   * Checks an intent's arguments against the tool's key rules: refused when they lack a field the
   * rules require, or when its argumentsHash is not its arguments' hash under them. Only for tools
   * that go through the ledger: the hash is what tells a retry from a reused key, and a wrong one
   * would let a key carry other arguments unnoticed.
   *
   * <p>{@code honoured} are the rules the tool's key may have been derived under, current first
   * (more than one only within the retry horizon of a change, see {@code AppliedPolicy}). The
   * intent is accepted under the first whose checks it passes; when its key is the one the step
   * derives under those rules, the keys it derives under the others are its aliases.
   */
  private static DecodedIntent checkArguments(
      ToolIntent intent,
      ToolPolicy policy,
      List<ArgumentRules> honoured,
      String key,
      String replyTopic) {
    JsonNode arguments;
    try {
      arguments = ArgumentsHash.parse(intent.getArguments());
    } catch (IllegalArgumentException e) {
      return new DecodedIntent.Invalid(
          ErrorCode.ARGUMENTS_NOT_JSON,
          e.getMessage(),
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    DecodedIntent.Invalid firstRefusal = null;
    for (ArgumentRules rules : honoured) {
      DecodedIntent.Invalid refused = check(intent, arguments, rules, key, replyTopic);
      if (refused == null) {
        return withAliases(intent, replyTopic, arguments, rules, honoured, key);
      }
      if (firstRefusal == null) {
        firstRefusal = refused;
      }
    }
    return firstRefusal;
  }

  private static DecodedIntent.Invalid check(
      ToolIntent intent, JsonNode arguments, ArgumentRules rules, String key, String replyTopic) {
    String missing = missingRequired(arguments, rules);
    if (missing != null) {
      return new DecodedIntent.Invalid(
          ErrorCode.MISSING_REQUIRED_FIELD,
          "tool '"
              + intent.getTool()
              + "' needs argument "
              + missing
              + " to tell one action from another",
          key,
          intent.getTenant(),
          intent.getTool(),
          replyTopic);
    }
    String expected = ArgumentsHash.of(arguments, rules.ignore());
    if (expected.equals(intent.getArgumentsHash())) {
      return null;
    }
    String left = rules.ignore().isEmpty() ? "" : " once " + rules.ignore() + " are left out";
    return new DecodedIntent.Invalid(
        ErrorCode.ARGUMENTS_HASH_MISMATCH,
        "argumentsHash "
            + intent.getArgumentsHash()
            + " is not the arguments' hash: they hash to "
            + expected
            + left
            + " (tool '"
            + intent.getTool()
            + "')",
        key,
        intent.getTenant(),
        intent.getTool(),
        replyTopic);
  }

  private static String missingRequired(JsonNode arguments, ArgumentRules rules) {
    for (String pointer : rules.require()) {
      JsonNode value = arguments.at(pointer);
      if (value.isMissingNode() || value.isNull()) {
        return pointer;
      }
    }
    return null;
  }

  /**
   * The intent with the keys its step derives under the honoured rules other than {@code matched},
   * and the decider (the key under the first honoured rules, current first, whose required fields
   * the arguments have), when its own key is the one it derives under {@code matched}: a caller's
   * own key has no aliases.
   */
  private static DecodedIntent.Valid withAliases(
      ToolIntent intent,
      String replyTopic,
      JsonNode arguments,
      ArgumentRules matched,
      List<ArgumentRules> honoured,
      String key) {
    if (honoured.size() < 2 || !key.equals(derive(intent, arguments, matched))) {
      return new DecodedIntent.Valid(intent, replyTopic);
    }
    List<DecodedIntent.Alias> aliases = new ArrayList<>();
    String decider = null;
    for (ArgumentRules rules : honoured) {
      if (missingRequired(arguments, rules) != null) {
        continue;
      }
      String derived = rules.equals(matched) ? key : derive(intent, arguments, rules);
      if (decider == null) {
        decider = derived;
      }
      if (!derived.equals(key) && aliases.stream().noneMatch(a -> a.key().equals(derived))) {
        aliases.add(new DecodedIntent.Alias(derived, ArgumentsHash.of(arguments, rules.ignore())));
      }
    }
    return aliases.isEmpty()
        ? new DecodedIntent.Valid(intent, replyTopic)
        : new DecodedIntent.Valid(intent, replyTopic, aliases, decider);
  }

  private static String derive(ToolIntent intent, JsonNode arguments, ArgumentRules rules) {
    return KeyDerivation.key(
        intent.getTenant(),
        intent.getRunId(),
        intent.getStepId(),
        intent.getBusinessScope(),
        intent.getTool(),
        arguments,
        rules.ignore());
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
