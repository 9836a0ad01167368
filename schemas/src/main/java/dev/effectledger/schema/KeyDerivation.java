package dev.effectledger.schema;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.List;

/**
 * The idempotency key of key derivation v1 (docs/key-derivation.md): {@code "v1:" +
 * base64url(SHA-256(JCS({"args", "runId", "scope", "stepId", "tenant", "tool", "v": 1})))} without
 * padding, over the arguments once the tool's ignored fields are removed. One implementation for
 * the Java client that derives keys and the ledger, which derives a step's key under a tool's
 * earlier key rules to find the entry a retry made under them.
 */
public final class KeyDerivation {

  public static final String VERSION_PREFIX = "v1:";
  private static final ObjectMapper JSON = new ObjectMapper();

  private KeyDerivation() {}

  /**
   * The key of one step's call of {@code tool} with {@code arguments} under rules that leave out
   * {@code ignored}; leaves {@code arguments} as it was.
   */
  public static String key(
      String tenant,
      String runId,
      String stepId,
      String scope,
      String tool,
      JsonNode arguments,
      List<String> ignored) {
    JsonNode kept = arguments;
    if (!ignored.isEmpty()) {
      kept = arguments.deepCopy();
      for (String pointer : ignored) {
        ArgumentsHash.remove(kept, pointer);
      }
    }
    ObjectNode preimage = JSON.createObjectNode();
    preimage.set("args", kept);
    preimage.put("runId", runId);
    preimage.put("scope", scope);
    preimage.put("stepId", stepId);
    preimage.put("tenant", tenant);
    preimage.put("tool", tool);
    preimage.put("v", 1);
    byte[] canonical =
        ArgumentsHash.canonical(preimage.toString()).getBytes(StandardCharsets.UTF_8);
    return VERSION_PREFIX
        + Base64.getUrlEncoder().withoutPadding().encodeToString(sha256(canonical));
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }
}
