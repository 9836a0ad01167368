package dev.effectledger.gateway;

import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.TokenRefused;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Who may call, and as which tenant: bearer tokens mapped to tenants, stored as the SHA-256 of the
 * token (never the token). The tenant of every intent comes from here, never from a request body.
 *
 * <p>Configured as {@code gateway.credentials.<name>.sha256} (hex SHA-256 of the token, e.g. {@code
 * printf %s "$TOKEN" | sha256sum}), {@code gateway.credentials.<name>.tenant} and, optionally,
 * {@code gateway.credentials.<name>.tools} (comma-separated; a call of another tool is 403).
 *
 * <p>Besides them, with {@code gateway.auth.issuer} and {@code gateway.auth.audience} set ({@link
 * #withTokens}), OAuth 2.1 access tokens (JWTs) from that identity provider, checked by {@link
 * AccessTokens}: the tenant from the token's tenant claim, and the scopes deciding what it may do.
 */
public final class Credentials {

  /**
   * A caller the gateway knows. An empty {@code tools} allows every tool. {@code mayRead}: it may
   * list tools and attach to calls; {@code mayWrite}: it may call tools (a static credential both;
   * an access token by its scopes).
   */
  public record Caller(
      String name, String tenant, Set<String> tools, boolean mayRead, boolean mayWrite) {
    public Caller {
      tools = Set.copyOf(tools);
    }

    /** A static credential's caller: it may read and call. */
    public Caller(String name, String tenant, Set<String> tools) {
      this(name, tenant, tools, true, true);
    }

    public boolean mayCall(String tool) {
      return tools.isEmpty() || tools.contains(tool);
    }
  }

  static final String PREFIX = "gateway.credentials.";
  private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
  private static final Pattern BEARER = Pattern.compile("(?i)Bearer +([\\x21-\\x7e]{1,4096}) *");

  /** A checked {@code Authorization} header: its caller, or why there is none. */
  public record Checked(Caller caller, TokenRefused refused) {}

  private final Map<String, Caller> bySha256;
  private final AccessTokens tokens; // null: static tokens only

  private Credentials(Map<String, Caller> bySha256, AccessTokens tokens) {
    this.bySha256 = Map.copyOf(bySha256);
    this.tokens = tokens;
  }

  public static Credentials of(Map<String, Caller> bySha256Hex) {
    return new Credentials(bySha256Hex, null);
  }

  /**
   * These credentials, and access tokens (JWTs) from an identity provider besides: the caller's
   * tenant from its tenant claim, its name its client's id (else its subject), reading with the
   * read or the write scope, calling with the write scope.
   */
  public Credentials withTokens(AccessTokens accessTokens) {
    return new Credentials(bySha256, accessTokens);
  }

  /** The access tokens these credentials take; null when only static tokens. */
  public AccessTokens tokens() {
    return tokens;
  }

  /**
   * @throws IllegalArgumentException naming the setting when one is missing or malformed
   */
  public static Credentials fromProperties(Properties settings) {
    Set<String> names = new TreeSet<>();
    for (String key : settings.stringPropertyNames()) {
      if (key.startsWith(PREFIX)) {
        String rest = key.substring(PREFIX.length());
        int dot = rest.lastIndexOf('.');
        if (dot <= 0) {
          throw new IllegalArgumentException(
              key + ": use " + PREFIX + "<name>.sha256, .tenant and .tools");
        }
        names.add(rest.substring(0, dot));
      }
    }
    Map<String, Caller> callers = new HashMap<>();
    for (String name : names) {
      String hash = required(settings, name, "sha256").toLowerCase();
      if (!HEX.matcher(hash).matches()) {
        throw new IllegalArgumentException(
            PREFIX + name + ".sha256 must be 64 hex digits (the SHA-256 of the token)");
      }
      String tenant = required(settings, name, "tenant");
      String tools = settings.getProperty(PREFIX + name + ".tools", "").trim();
      Set<String> allowed = new TreeSet<>();
      if (!tools.isEmpty()) {
        Arrays.stream(tools.split(","))
            .map(String::trim)
            .filter(t -> !t.isEmpty())
            .forEach(allowed::add);
      }
      for (String key : settings.stringPropertyNames()) {
        if (key.startsWith(PREFIX + name + ".")
            && !Set.of("sha256", "tenant", "tools")
                .contains(key.substring((PREFIX + name + ".").length()))) {
          throw new IllegalArgumentException(key + ": unknown setting (sha256, tenant, tools)");
        }
      }
      if (callers.put(hash, new Caller(name, tenant, allowed)) != null) {
        throw new IllegalArgumentException(
            PREFIX + name + ".sha256: two credentials have the same token");
      }
    }
    return new Credentials(callers, null);
  }

  private static String required(Properties settings, String name, String field) {
    String value = settings.getProperty(PREFIX + name + "." + field, "").trim();
    if (value.isEmpty()) {
      throw new IllegalArgumentException(PREFIX + name + "." + field + " is required");
    }
    return value;
  }

  public boolean isEmpty() {
    return bySha256.isEmpty() && tokens == null;
  }

  /** The caller an {@code Authorization: Bearer <token>} header names; empty when none. */
  public Optional<Caller> authenticate(String authorization) {
    return Optional.ofNullable(check(authorization).caller());
  }

  /**
   * The caller an {@code Authorization: Bearer <token>} header names: a static token's, else an
   * access token's when these credentials take them; otherwise why not.
   */
  public Checked check(String authorization) {
    Optional<String> token = bearerToken(authorization);
    if (token.isEmpty()) {
      return new Checked(
          null,
          new TokenRefused(
              authorization == null ? TokenRefused.Reason.MISSING : TokenRefused.Reason.MALFORMED,
              authorization == null
                  ? "send Authorization: Bearer <token>"
                  : "the Authorization header is not \"Bearer <token>\""));
    }
    Caller known = bySha256.get(sha256Hex(token.get()));
    if (known != null) {
      return new Checked(known, null);
    }
    if (tokens == null || token.get().chars().filter(c -> c == '.').count() != 2) {
      return new Checked(
          null,
          new TokenRefused(
              TokenRefused.Reason.MALFORMED, "the credential is not known to this gateway"));
    }
    try {
      dev.effectledger.auth.Caller caller = tokens.checkToken(token.get());
      AuthSettings settings = tokens.settings();
      boolean writes = caller.hasScope(settings.writeScope());
      return new Checked(
          new Caller(
              caller.clientId() != null ? caller.clientId() : caller.subject(),
              caller.tenant(),
              Set.of(),
              writes || caller.hasScope(settings.readScope()),
              writes),
          null);
    } catch (TokenRefused refused) {
      return new Checked(null, refused);
    }
  }

  /** The token of an {@code Authorization: Bearer <token>} header; empty for anything else. */
  public static Optional<String> bearerToken(String authorization) {
    if (authorization == null) {
      return Optional.empty();
    }
    var m = BEARER.matcher(authorization);
    return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  public static String sha256Hex(String token) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }
}
