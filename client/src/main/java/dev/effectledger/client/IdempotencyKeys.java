package dev.effectledger.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

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

  public static final String VERSION_PREFIX = "v1:";
  private static final ObjectMapper JSON = new ObjectMapper();

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
    ObjectNode preimage = JSON.createObjectNode();
    preimage.set("args", arguments);
    preimage.put("runId", step.runId());
    preimage.put("scope", step.businessScope());
    preimage.put("stepId", step.stepId());
    preimage.put("tenant", step.tenant());
    preimage.put("tool", tool);
    preimage.put("v", 1);
    byte[] keyHash = sha256(canonical(preimage.toString()).getBytes(StandardCharsets.UTF_8));
    return new DerivedKey(
        VERSION_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(keyHash),
        canonical,
        ArgumentsHash.of(canonical));
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

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }
}
