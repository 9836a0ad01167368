package dev.effectledger.auth;

import dev.effectledger.policy.Durations;
import java.net.URI;
import java.time.Duration;
import java.util.function.Function;

/**
 * Which tokens a door takes: those an identity provider ({@code issuer}) issued for this service
 * ({@code audience}), signed with a key it publishes ({@code jwksUri}, else found in its RFC 8414
 * or OpenID metadata). The tenant, roles and scopes of a caller come from claims.
 *
 * @param issuer the {@code iss} every token must carry, exactly
 * @param audience an {@code aud} every token must carry (for the MCP gateway, its endpoint's URL)
 * @param jwksUri the provider's keys; null to read {@code jwks_uri} from its metadata
 * @param tenantClaim the claim naming the caller's tenant (a token without it is refused)
 * @param rolesClaim the claim listing the caller's roles (a list, or a space-separated string)
 * @param readScope the scope that allows reading (read tools, queries)
 * @param writeScope the scope that allows writing (write tools, calls through the ledger)
 * @param clockSkew how far the provider's clock and ours may differ, for {@code exp} and {@code
 *     nbf}
 */
public record AuthSettings(
    URI issuer,
    String audience,
    URI jwksUri,
    String tenantClaim,
    String rolesClaim,
    String readScope,
    String writeScope,
    Duration clockSkew) {

  public static final String TENANT_CLAIM = "tenant";
  public static final String ROLES_CLAIM = "roles";
  public static final String READ_SCOPE = "tools:read";
  public static final String WRITE_SCOPE = "tools:write";
  public static final Duration CLOCK_SKEW = Duration.ofSeconds(60);

  public AuthSettings {
    if (issuer == null || issuer.getScheme() == null) {
      throw new IllegalArgumentException("issuer: the identity provider's issuer URL is required");
    }
    if (audience == null || audience.isBlank()) {
      throw new IllegalArgumentException(
          "audience: the audience this service's tokens carry is required (for an MCP server, the"
              + " URL of its endpoint)");
    }
    if (clockSkew.isNegative()) {
      throw new IllegalArgumentException("clock skew must not be negative");
    }
  }

  /** Settings for {@code issuer} and {@code audience}, the rest their defaults. */
  public static AuthSettings of(URI issuer, String audience) {
    return new AuthSettings(
        issuer, audience, null, TENANT_CLAIM, ROLES_CLAIM, READ_SCOPE, WRITE_SCOPE, CLOCK_SKEW);
  }

  /**
   * Reads the settings by name from {@code setting} (null for one not set): {@code issuer}, {@code
   * audience}, {@code jwks-uri}, {@code tenant-claim}, {@code roles-claim}, {@code read-scope},
   * {@code write-scope}, {@code clock-skew}; null when {@code issuer} is not set (tokens off).
   *
   * @param where how the settings are named to an operator, e.g. {@code gateway.auth.}
   * @throws IllegalArgumentException naming the setting that is wrong
   */
  public static AuthSettings read(Function<String, String> setting, String where) {
    String issuer = blankToNull(setting.apply("issuer"));
    if (issuer == null) {
      return null;
    }
    try {
      String jwks = blankToNull(setting.apply("jwks-uri"));
      String skew = blankToNull(setting.apply("clock-skew"));
      return new AuthSettings(
          URI.create(issuer),
          setting.apply("audience"),
          jwks == null ? null : URI.create(jwks),
          or(setting.apply("tenant-claim"), TENANT_CLAIM),
          or(setting.apply("roles-claim"), ROLES_CLAIM),
          or(setting.apply("read-scope"), READ_SCOPE),
          or(setting.apply("write-scope"), WRITE_SCOPE),
          skew == null
              ? CLOCK_SKEW
              : Durations.parse(skew)
                  .orElseThrow(
                      () ->
                          new IllegalArgumentException(
                              "clock-skew: " + skew + " is not a duration (e.g. 60s)")));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + e.getMessage(), e);
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }

  private static String or(String s, String otherwise) {
    String t = blankToNull(s);
    return t == null ? otherwise : t;
  }
}
