package dev.effectledger.schema;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Signed bypass approvals: an operator's permission to run one settled key once more, verifiable by
 * the ledger. A token {@code elv1.<payload>.<signature>}: the payload is base64url JSON {@code
 * {signer, tenant, key, operator, reason, expiresAt}}, the signature an Ed25519 signature of {@code
 * elv1.<payload>} by the signer's private key, base64url. The processors hold only the signers'
 * public keys ({@code ledger.bypass.signer.<name>}); whoever mints approvals ({@code effectledger
 * approve}, the console) holds a private key.
 *
 * <p>Ed25519 from the JDK (17 has it built in) rather than a JOSE library: one fixed algorithm, a
 * compact token, and nothing to negotiate, so there is no algorithm header to get wrong.
 */
public final class BypassApprovals {

  static final String PREFIX = "elv1.";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final Base64.Decoder UNB64 = Base64.getUrlDecoder();

  /** What an approval grants. */
  public record Approval(
      String signer,
      String tenant,
      String key,
      String operator,
      String reason,
      Instant expiresAt) {}

  /** The ledger's answer to an approval. */
  public sealed interface Verdict {
    /** Signed by a known signer, for this tenant and key, not expired. */
    record Valid(Approval approval) implements Verdict {}

    /** Why not, in words an operator can act on. */
    record Invalid(String why) implements Verdict {}
  }

  /** No signers: approvals are taken as given, as before signing existed. */
  public static final BypassApprovals UNVERIFIED = new BypassApprovals(Map.of());

  private final Map<String, PublicKey> signers;

  private BypassApprovals(Map<String, PublicKey> signers) {
    this.signers = Map.copyOf(signers);
  }

  /**
   * Verifies approvals against {@code signers}: name to public key, as {@link #encode(PublicKey)}
   * writes it.
   *
   * @throws IllegalArgumentException naming a key that is not an Ed25519 public key
   */
  public static BypassApprovals verifiedBy(Map<String, String> signers) {
    Map<String, PublicKey> keys = new LinkedHashMap<>();
    signers.forEach(
        (name, text) -> {
          try {
            keys.put(
                name,
                KeyFactory.getInstance("Ed25519")
                    .generatePublic(
                        new X509EncodedKeySpec(Base64.getDecoder().decode(text.trim()))));
          } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException(
                "ledger.bypass.signer."
                    + name
                    + " is not an Ed25519 public key as `effectledger approve keygen` prints it");
          }
        });
    return new BypassApprovals(keys);
  }

  /** Whether approvals are checked (some signer is configured). */
  public boolean verifying() {
    return !signers.isEmpty();
  }

  /** The verdict on {@code token} for {@code tenant}'s {@code key} at {@code now}. */
  public Verdict verify(String token, String tenant, String key, Instant now) {
    String[] parts = token == null ? new String[0] : token.split("\\.", -1);
    if (token == null || !token.startsWith(PREFIX) || parts.length != 3) {
      return new Verdict.Invalid(
          "the approval is not signed (mint one with `effectledger approve`)");
    }
    JsonNode payload;
    byte[] signature;
    try {
      payload = JSON.readTree(UNB64.decode(parts[1]));
      signature = UNB64.decode(parts[2]);
    } catch (IllegalArgumentException | java.io.IOException e) {
      return new Verdict.Invalid("the approval is malformed");
    }
    String signer = payload.path("signer").asText("");
    PublicKey publicKey = signers.get(signer);
    if (publicKey == null) {
      return new Verdict.Invalid(
          "the approval's signer '" + signer + "' is not one this ledger trusts");
    }
    try {
      Signature check = Signature.getInstance("Ed25519");
      check.initVerify(publicKey);
      check.update((PREFIX + parts[1]).getBytes(StandardCharsets.US_ASCII));
      if (!check.verify(signature)) {
        return new Verdict.Invalid(
            "the approval's signature does not match: it was altered or forged");
      }
    } catch (GeneralSecurityException e) {
      return new Verdict.Invalid(
          "the approval's signature does not match: it was altered or forged");
    }
    Approval approval;
    try {
      approval =
          new Approval(
              signer,
              payload.path("tenant").asText(""),
              payload.path("key").asText(""),
              payload.path("operator").asText(""),
              payload.path("reason").asText(""),
              Instant.parse(payload.path("expiresAt").asText("")));
    } catch (DateTimeParseException e) {
      return new Verdict.Invalid("the approval has no valid expiry");
    }
    if (!approval.tenant().equals(tenant) || !approval.key().equals(key)) {
      return new Verdict.Invalid(
          "the approval is for another key (" + approval.tenant() + "/" + approval.key() + ")");
    }
    if (!now.isBefore(approval.expiresAt())) {
      return new Verdict.Invalid("the approval expired at " + approval.expiresAt());
    }
    if (approval.operator().isBlank() || approval.reason().isBlank()) {
      return new Verdict.Invalid("the approval names no operator or no reason");
    }
    return new Verdict.Valid(approval);
  }

  /** {@code approval} signed with {@code privateKey}: the token an intent carries. */
  public static String sign(Approval approval, PrivateKey privateKey) {
    ObjectNode payload =
        JSON.createObjectNode()
            .put("signer", approval.signer())
            .put("tenant", approval.tenant())
            .put("key", approval.key())
            .put("operator", approval.operator())
            .put("reason", approval.reason())
            .put("expiresAt", approval.expiresAt().toString());
    String body = B64.encodeToString(payload.toString().getBytes(StandardCharsets.UTF_8));
    try {
      Signature signer = Signature.getInstance("Ed25519");
      signer.initSign(privateKey);
      signer.update((PREFIX + body).getBytes(StandardCharsets.US_ASCII));
      return PREFIX + body + "." + B64.encodeToString(signer.sign());
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("not an Ed25519 private key: " + e.getMessage(), e);
    }
  }

  /** A new Ed25519 key pair for a signer. */
  public static KeyPair generate() {
    try {
      return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("Ed25519 is part of every Java 17 runtime", e);
    }
  }

  /** A public key as the processors' configuration takes it (base64 X.509). */
  public static String encode(PublicKey key) {
    return Base64.getEncoder().encodeToString(key.getEncoded());
  }

  /** A private key as a signer's key file holds it (base64 PKCS#8). */
  public static String encode(PrivateKey key) {
    return Base64.getEncoder().encodeToString(key.getEncoded());
  }

  /** A private key from {@link #encode(PrivateKey)}'s text. */
  public static PrivateKey privateKey(String text) {
    try {
      return KeyFactory.getInstance("Ed25519")
          .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(text.trim())));
    } catch (GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "not an Ed25519 private key as `effectledger approve keygen` writes it");
    }
  }
}
