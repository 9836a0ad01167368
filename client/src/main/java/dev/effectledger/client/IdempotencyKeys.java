package dev.effectledger.client;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.KeyDerivation;

/**
 * Derives idempotency keys, version 1 (docs/key-derivation.md):
 *
 * <ol>
 *   <li>parse the arguments; remove each volatile field; refuse when a required field is missing or
 *       null;
 *   <li>{@code canonical = JCS(arguments)} (RFC 8785), {@code argumentsHash = "sha256:" +
 *       hex(SHA-256(canonical))};
 *   <li>{@code key = "v1:" + base64url(SHA-256(JCS({"args": arguments, "runId", "scope", "stepId",
 *       "tenant", "tool", "v": 1})))} without padding.
 * </ol>
 */
public final class IdempotencyKeys {

  public static final String VERSION_PREFIX = KeyDerivation.VERSION_PREFIX;

  private IdempotencyKeys() {}

  /**
   * @throws KeyDerivationException when the arguments are not JSON or lack a required field
   */
  public static DerivedKey derive(
      StepContext step, String tool, String argumentsJson, KeyRules rules) {
    if (tool == null || tool.isBlank()) {
      throw new IllegalArgumentException("tool must be set: it is part of the idempotency key");
    }
    JsonNode arguments = parse(argumentsJson);
    for (String pointer : rules.volatileFields()) {
      ArgumentsHash.remove(arguments, pointer);
    }
    for (String pointer : rules.requiredFields()) {
      JsonNode value = arguments.at(pointer);
      if (value.isMissingNode() || value.isNull()) {
        throw new KeyDerivationException(
            ErrorCode.MISSING_REQUIRED_FIELD.name(),
            "tool " + tool + " needs argument " + pointer + " to tell one action from another");
      }
    }
    String canonical = canonical(arguments.toString());
    String key =
        KeyDerivation.key(
            step.tenant(),
            step.runId(),
            step.stepId(),
            step.businessScope(),
            tool,
            arguments,
            java.util.List.of());
    return new DerivedKey(key, canonical, ArgumentsHash.of(canonical));
  }

  private static JsonNode parse(String json) {
    JsonNode node;
    try {
      node = ArgumentsHash.parse(json); // the ledger's own parse and I-JSON checks
    } catch (IllegalArgumentException e) {
      throw new KeyDerivationException(ErrorCode.ARGUMENTS_NOT_JSON.name(), e.getMessage());
    }
    if (!node.isObject()) {
      throw new KeyDerivationException(
          ErrorCode.ARGUMENTS_NOT_OBJECT.name(),
          "arguments must be a JSON object of named arguments");
    }
    return node;
  }

  private static String canonical(String json) {
    try {
      return ArgumentsHash.canonical(json);
    } catch (IllegalArgumentException e) {
      throw new KeyDerivationException(ErrorCode.ARGUMENTS_NOT_JSON.name(), e.getMessage());
    }
  }
}
