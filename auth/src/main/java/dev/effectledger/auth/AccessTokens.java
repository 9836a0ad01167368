package dev.effectledger.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.KeySourceException;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.proc.BadJOSEException;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks bearer tokens against {@link AuthSettings}: a JWT signed by one of the issuer's published
 * keys, with this service among its audiences, its issuer exactly the configured one, within its
 * validity (give or take the clock skew) and naming a tenant. Thread-safe; the issuer's keys are
 * fetched when first needed (the identity provider may start after this service), cached and
 * fetched again when a token names a key not seen yet (key rotation).
 */
public final class AccessTokens {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern BEARER = Pattern.compile("(?i)Bearer +([\\x21-\\x7e]{1,8192}) *");
  private static final Set<JWSAlgorithm> ALGORITHMS =
      Set.of(
          JWSAlgorithm.RS256,
          JWSAlgorithm.RS384,
          JWSAlgorithm.RS512,
          JWSAlgorithm.PS256,
          JWSAlgorithm.PS384,
          JWSAlgorithm.PS512,
          JWSAlgorithm.ES256,
          JWSAlgorithm.ES384,
          JWSAlgorithm.ES512,
          JWSAlgorithm.Ed25519,
          JWSAlgorithm.EdDSA);

  private final AuthSettings settings;
  private final Clock clock;
  private final KeysSupplier keys;
  private volatile DefaultJWTProcessor<SecurityContext> processor; // once the keys are known

  /** Where the issuer's keys come from: its JWKS, found from its metadata when not configured. */
  @FunctionalInterface
  interface KeysSupplier {
    JWKSource<SecurityContext> get() throws IOException;
  }

  AccessTokens(AuthSettings settings, Clock clock, KeysSupplier keys) {
    this.settings = settings;
    this.clock = clock;
    this.keys = keys;
  }

  /** Tokens checked against the issuer's published keys. */
  public static AccessTokens of(AuthSettings settings) {
    return new AccessTokens(
        settings,
        Clock.systemUTC(),
        () -> {
          URI jwks = settings.jwksUri() != null ? settings.jwksUri() : discover(settings.issuer());
          URL url = jwks.toURL();
          return JWKSourceBuilder.create(url).retrying(true).build();
        });
  }

  public AuthSettings settings() {
    return settings;
  }

  /**
   * Checks the token of an {@code Authorization} header's value.
   *
   * @param authorization the header's value; null when the request has none
   */
  public Caller check(String authorization) throws TokenRefused {
    if (authorization == null || authorization.isBlank()) {
      throw new TokenRefused(TokenRefused.Reason.MISSING, "no Authorization: Bearer header");
    }
    Matcher bearer = BEARER.matcher(authorization);
    if (!bearer.matches()) {
      throw new TokenRefused(
          TokenRefused.Reason.MALFORMED, "the Authorization header is not \"Bearer <token>\"");
    }
    return checkToken(bearer.group(1));
  }

  /** Checks a bearer token. */
  public Caller checkToken(String token) throws TokenRefused {
    JWTClaimsSet claims;
    try {
      claims = processor().process(token, null);
    } catch (ParseException e) {
      throw new TokenRefused(TokenRefused.Reason.MALFORMED, "not a signed JWT", e);
    } catch (KeySourceException e) {
      throw new TokenRefused(
          TokenRefused.Reason.KEYS_UNAVAILABLE,
          "the issuer's keys could not be read (" + e.getMessage() + ")",
          e);
    } catch (BadJOSEException | JOSEException e) {
      throw new TokenRefused(
          TokenRefused.Reason.BAD_SIGNATURE,
          "not signed by a key of " + settings.issuer() + " (" + e.getMessage() + ")",
          e);
    }
    return claimsOf(claims);
  }

  private Caller claimsOf(JWTClaimsSet claims) throws TokenRefused {
    String issuer = claims.getIssuer();
    if (!settings.issuer().toString().equals(issuer)) {
      throw new TokenRefused(
          TokenRefused.Reason.WRONG_ISSUER,
          "issued by " + issuer + ", not by " + settings.issuer());
    }
    List<String> audience = claims.getAudience();
    if (audience == null || !audience.contains(settings.audience())) {
      throw new TokenRefused(
          TokenRefused.Reason.WRONG_AUDIENCE,
          "issued for " + audience + ", not for " + settings.audience());
    }
    Instant now = clock.instant();
    Duration skew = settings.clockSkew();
    Date exp = claims.getExpirationTime();
    if (exp == null) {
      throw new TokenRefused(TokenRefused.Reason.MALFORMED, "the token has no exp");
    }
    if (!now.isBefore(exp.toInstant().plus(skew))) {
      throw new TokenRefused(TokenRefused.Reason.EXPIRED, "expired at " + exp.toInstant());
    }
    Date nbf = claims.getNotBeforeTime();
    if (nbf != null && now.isBefore(nbf.toInstant().minus(skew))) {
      throw new TokenRefused(
          TokenRefused.Reason.NOT_YET_VALID, "not valid before " + nbf.toInstant());
    }
    String tenant = text(claims.getClaim(settings.tenantClaim()));
    if (tenant == null || tenant.isBlank()) {
      throw new TokenRefused(
          TokenRefused.Reason.NO_TENANT,
          "the token has no \"" + settings.tenantClaim() + "\" claim naming its tenant");
    }
    String clientId = text(claims.getClaim("client_id"));
    return new Caller(
        claims.getSubject(),
        clientId != null ? clientId : text(claims.getClaim("azp")),
        tenant,
        words(claims.getClaim("scope") != null ? claims.getClaim("scope") : claims.getClaim("scp")),
        words(claims.getClaim(settings.rolesClaim())),
        exp.toInstant());
  }

  private DefaultJWTProcessor<SecurityContext> processor() throws KeySourceException {
    DefaultJWTProcessor<SecurityContext> p = processor;
    if (p != null) {
      return p;
    }
    synchronized (this) {
      if (processor == null) {
        JWKSource<SecurityContext> source;
        try {
          source = keys.get();
        } catch (IOException | RuntimeException e) {
          throw new KeySourceException(
              "finding the keys of " + settings.issuer() + ": " + e.getMessage(), e);
        }
        DefaultJWTProcessor<SecurityContext> built = new DefaultJWTProcessor<>();
        built.setJWSKeySelector(new JWSVerificationKeySelector<>(ALGORITHMS, source));
        // plain JWTs and RFC 9068 access tokens
        built.setJWSTypeVerifier(
            new DefaultJOSEObjectTypeVerifier<>(
                JOSEObjectType.JWT, new JOSEObjectType("at+jwt"), null));
        built.setJWTClaimsSetVerifier((claims, context) -> {}); // claimsOf, with named reasons
        processor = built;
      }
      return processor;
    }
  }

  /**
   * The issuer's {@code jwks_uri}, from its RFC 8414 metadata, else its OpenID Connect discovery
   * document.
   */
  static URI discover(URI issuer) throws IOException {
    String base = issuer.toString().replaceAll("/+$", "");
    String path = issuer.getRawPath() == null ? "" : issuer.getRawPath().replaceAll("/+$", "");
    String origin = base.substring(0, base.length() - path.length());
    List<String> candidates =
        List.of(
            origin + "/.well-known/oauth-authorization-server" + path,
            base + "/.well-known/openid-configuration");
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    IOException last = null;
    for (String candidate : candidates) {
      try {
        HttpResponse<String> response =
            http.send(
                HttpRequest.newBuilder(URI.create(candidate))
                    .timeout(Duration.ofSeconds(10))
                    .GET()
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 200) {
          JsonNode jwks = JSON.readTree(response.body()).get("jwks_uri");
          if (jwks != null && jwks.isTextual()) {
            return URI.create(jwks.asText());
          }
        }
        last =
            new IOException(candidate + " answered " + response.statusCode() + " without jwks_uri");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      } catch (IOException e) {
        last = e;
      }
    }
    throw new IOException(
        "no jwks_uri at "
            + candidates
            + " (set jwks-uri, or check the issuer URL): "
            + (last == null ? "" : last.getMessage()),
        last);
  }

  private static String text(Object claim) {
    return claim instanceof String s ? s : claim == null ? null : claim.toString();
  }

  private static Set<String> words(Object claim) {
    Set<String> out = new LinkedHashSet<>();
    if (claim instanceof String s) {
      out.addAll(Arrays.asList(s.trim().split("\\s+")));
      out.remove("");
    } else if (claim instanceof Collection<?> list) {
      list.forEach(w -> out.add(String.valueOf(w)));
    }
    return out;
  }
}
