package dev.effectledger.app.console;

import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.Caller;
import dev.effectledger.auth.TokenRefused;
import dev.effectledger.gateway.Credentials;
import java.time.Instant;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Who may use a processor's query API, in which role: bearer tokens stored as their SHA-256 ({@code
 * http.auth.<name>.sha256}, e.g. {@code printf %s "$TOKEN" | sha256sum}) with a role ({@code
 * http.auth.<name>.role}: {@code viewer} reads keys and results, {@code operator} also acts on
 * them). None configured: the API is open, as it was, on the loopback address it binds by default.
 *
 * <p>Not the HTTP gateway's {@code Credentials}, for a reason: both hash and read bearer tokens the
 * same way (with {@code Credentials.bearerToken} and {@code sha256Hex}), but a token here names a
 * role, there a tenant and the tools it may call.
 */
public final class HttpAuth {

  /** What a caller may do; each role may do what the ones before it may. */
  public enum Role {
    VIEWER,
    OPERATOR
  }

  public static final String PREFIX = "http.auth.";
  private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");

  /** Who a credential names: its {@code http.auth.<name>} and role. */
  public record Identity(String name, Role role) {
    public boolean may(Role needed) {
      return role.compareTo(needed) >= 0;
    }
  }

  public static final HttpAuth OPEN = new HttpAuth(Map.of(), null);

  private final Map<String, Identity> bySha256;
  private final AccessTokens tokens; // null: configured tokens only

  private HttpAuth(Map<String, Identity> bySha256, AccessTokens tokens) {
    this.bySha256 = Map.copyOf(bySha256);
    this.tokens = tokens;
  }

  /**
   * These tokens, and access tokens (JWTs) from an identity provider besides: the role the highest
   * of the token's roles claim names ({@code operator}, {@code viewer}), its name the token's
   * subject. A token without either role is refused.
   */
  public HttpAuth withTokens(AccessTokens accessTokens) {
    return new HttpAuth(bySha256, accessTokens);
  }

  /**
   * @throws IllegalArgumentException naming a setting that is missing or malformed
   */
  public static HttpAuth fromProperties(Properties settings) {
    Set<String> names = new TreeSet<>();
    for (String key : settings.stringPropertyNames()) {
      if (key.startsWith(PREFIX)) {
        String rest = key.substring(PREFIX.length());
        int dot = rest.lastIndexOf('.');
        String field = dot <= 0 ? "" : rest.substring(dot + 1);
        if (dot <= 0 || !Set.of("sha256", "role").contains(field)) {
          throw new IllegalArgumentException(key + ": use " + PREFIX + "<name>.sha256 and .role");
        }
        names.add(rest.substring(0, dot));
      }
    }
    Map<String, Identity> roles = new HashMap<>();
    for (String name : names) {
      String hash =
          settings.getProperty(PREFIX + name + ".sha256", "").trim().toLowerCase(Locale.ROOT);
      if (!HEX.matcher(hash).matches()) {
        throw new IllegalArgumentException(
            PREFIX + name + ".sha256 must be 64 hex digits (the SHA-256 of the token)");
      }
      String role = settings.getProperty(PREFIX + name + ".role", "viewer").trim();
      Role parsed;
      try {
        parsed = Role.valueOf(role.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            PREFIX + name + ".role '" + role + "' is not a role; give viewer or operator");
      }
      if (roles.put(hash, new Identity(name, parsed)) != null) {
        throw new IllegalArgumentException(PREFIX + name + ".sha256: two tokens are the same");
      }
    }
    return new HttpAuth(roles, null);
  }

  public boolean open() {
    return bySha256.isEmpty() && tokens == null;
  }

  /** The role an {@code Authorization: Bearer <token>} header carries; empty when none. */
  public Optional<Role> roleOf(String authorization) {
    return Credentials.bearerToken(authorization).flatMap(this::identify).map(Identity::role);
  }

  /** Whom the bearer token {@code token} names; empty when no configured token matches. */
  public Optional<Identity> identify(String token) {
    return Optional.ofNullable(check(token).who());
  }

  /**
   * What a bearer token is worth here: whom it names and until when (null for a configured token,
   * which does not expire), or why it is refused.
   *
   * @param who null when refused
   * @param expires the access token's {@code exp}; null for a configured token or a refusal
   * @param refusal why the token is refused, for the person who gave it; null when {@code who} is
   *     not
   */
  public record Checked(Identity who, Instant expires, String refusal) {}

  /** Checks a bearer token: a configured one, else an access token from the identity provider. */
  public Checked check(String token) {
    if (token == null || token.isEmpty()) {
      return new Checked(null, null, "no token given");
    }
    Identity known = bySha256.get(Credentials.sha256Hex(token));
    if (known != null) {
      return new Checked(known, null, null);
    }
    if (tokens == null) {
      return new Checked(
          null, null, "that token is not one of this processor's (http.auth.<name>.sha256)");
    }
    try {
      Caller caller = tokens.checkToken(token);
      Role role =
          caller.hasRole("operator")
              ? Role.OPERATOR
              : caller.hasRole("viewer") ? Role.VIEWER : null;
      if (role == null) {
        return new Checked(
            null,
            null,
            caller.subject()
                + "'s token names neither operator nor viewer in its "
                + tokens.settings().rolesClaim()
                + " claim: the identity provider must grant one of those roles");
      }
      return new Checked(new Identity(caller.subject(), role), caller.expiresAt(), null);
    } catch (TokenRefused refused) {
      if (refused.reason() == TokenRefused.Reason.MALFORMED) {
        return new Checked(
            null,
            null,
            "that token is neither one of this processor's (http.auth.<name>.sha256) nor a signed"
                + " JWT access token");
      }
      return new Checked(
          null,
          null,
          "the access token is refused ("
              + refused.reason().name().toLowerCase(Locale.ROOT).replace('_', '-')
              + "): "
              + refused.getMessage());
    }
  }

  /** Whether {@code authorization} may do what {@code needed} may (always, when open). */
  public boolean allows(String authorization, Role needed) {
    return open() || roleOf(authorization).map(r -> r.compareTo(needed) >= 0).orElse(false);
  }
}
