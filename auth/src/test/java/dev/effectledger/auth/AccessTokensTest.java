package dev.effectledger.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jose.jwk.source.ImmutableJWKSet;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.io.IOException;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Date;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class AccessTokensTest {

  private static final URI ISSUER = URI.create("http://127.0.0.1:9000");
  private static final String AUDIENCE = "http://127.0.0.1:8097/mcp";
  private static final Instant NOW = Instant.parse("2026-12-07T10:00:00Z");

  private final RSAKey key = generate("one");
  private final RSAKey stranger = generate("two");
  private final AccessTokens tokens =
      new AccessTokens(
          AuthSettings.of(ISSUER, AUDIENCE),
          Clock.fixed(NOW, ZoneOffset.UTC),
          () -> new ImmutableJWKSet<>(new JWKSet(key.toPublicJWK())));

  @Test
  void takesAValidTokenAndReadsItsCaller() throws Exception {
    Caller caller = tokens.check("Bearer " + sign(key, c -> c));

    assertThat(caller.subject()).isEqualTo("agent-7");
    assertThat(caller.clientId()).isEqualTo("ci-agent");
    assertThat(caller.tenant()).isEqualTo("acme");
    assertThat(caller.scopes()).containsExactlyInAnyOrder("tools:read", "tools:write");
    assertThat(caller.roles()).containsExactly("operator");
    assertThat(caller.expiresAt()).isEqualTo(NOW.plusSeconds(300));
  }

  @Test
  void readsScopesGivenAsAList() throws Exception {
    Caller caller =
        tokens.checkToken(
            sign(key, c -> c.claim("scope", null).claim("scp", List.of("tools:read"))));

    assertThat(caller.scopes()).containsExactly("tools:read");
  }

  @Test
  void refusesEachBadTokenByName() {
    refused(null, TokenRefused.Reason.MISSING);
    refused("Basic dXNlcjpwYXNz", TokenRefused.Reason.MALFORMED);
    refused("Bearer not-a-jwt", TokenRefused.Reason.MALFORMED);
    refused("Bearer " + sign(stranger, c -> c), TokenRefused.Reason.BAD_SIGNATURE);
    refused(
        "Bearer " + sign(key, c -> c.issuer("http://127.0.0.1:9001")),
        TokenRefused.Reason.WRONG_ISSUER);
    refused(
        "Bearer " + sign(key, c -> c.audience(List.of("http://127.0.0.1:8080"))),
        TokenRefused.Reason.WRONG_AUDIENCE);
    refused(
        "Bearer " + sign(key, c -> c.expirationTime(Date.from(NOW.minusSeconds(61)))),
        TokenRefused.Reason.EXPIRED);
    refused(
        "Bearer " + sign(key, c -> c.notBeforeTime(Date.from(NOW.plusSeconds(61)))),
        TokenRefused.Reason.NOT_YET_VALID);
    refused("Bearer " + sign(key, c -> c.claim("tenant", null)), TokenRefused.Reason.NO_TENANT);
  }

  @Test
  void allowsTheConfiguredClockSkewAndNoMore() throws Exception {
    // 59 s past exp is within the default 60 s skew
    assertThat(
            tokens
                .checkToken(sign(key, c -> c.expirationTime(Date.from(NOW.minusSeconds(59)))))
                .tenant())
        .isEqualTo("acme");
    AccessTokens strict =
        new AccessTokens(
            new AuthSettings(
                ISSUER,
                AUDIENCE,
                null,
                "tenant",
                "roles",
                "tools:read",
                "tools:write",
                Duration.ZERO),
            Clock.fixed(NOW, ZoneOffset.UTC),
            () -> new ImmutableJWKSet<>(new JWKSet(key.toPublicJWK())));
    assertThatThrownBy(
            () ->
                strict.checkToken(sign(key, c -> c.expirationTime(Date.from(NOW.minusSeconds(1))))))
        .isInstanceOfSatisfying(
            TokenRefused.class, e -> assertThat(e.reason()).isEqualTo(TokenRefused.Reason.EXPIRED));
  }

  @Test
  void saysTheKeysAreUnavailableWhenTheyCannotBeFound() {
    AccessTokens unreachable =
        new AccessTokens(
            AuthSettings.of(ISSUER, AUDIENCE),
            Clock.fixed(NOW, ZoneOffset.UTC),
            () -> {
              throw new IOException("connection refused");
            });

    assertThatThrownBy(() -> unreachable.checkToken(sign(key, c -> c)))
        .isInstanceOfSatisfying(
            TokenRefused.class,
            e -> {
              assertThat(e.reason()).isEqualTo(TokenRefused.Reason.KEYS_UNAVAILABLE);
              assertThat(e.getMessage()).contains("connection refused");
            });
  }

  @Test
  void challengesNameTheMetadataAndTheReason() {
    String metadata = "http://127.0.0.1:8097/.well-known/oauth-protected-resource/mcp";

    assertThat(Challenge.unauthorized(metadata, "tools:read tools:write", null))
        .isEqualTo(
            "Bearer resource_metadata=\"" + metadata + "\", scope=\"tools:read tools:write\"");
    assertThat(
            Challenge.unauthorized(
                metadata,
                null,
                new TokenRefused(TokenRefused.Reason.EXPIRED, "expired at \"then\"")))
        .isEqualTo(
            "Bearer resource_metadata=\""
                + metadata
                + "\", error=\"invalid_token\", error_description=\"EXPIRED: expired at 'then'\"");
    assertThat(Challenge.insufficientScope(metadata, "tools:write", "create_charge writes"))
        .isEqualTo(
            "Bearer error=\"insufficient_scope\", scope=\"tools:write\", resource_metadata=\""
                + metadata
                + "\", error_description=\"create_charge writes\"");
    assertThat(ResourceMetadata.path("/mcp"))
        .isEqualTo("/.well-known/oauth-protected-resource/mcp");
    assertThat(ResourceMetadata.json(AuthSettings.of(ISSUER, AUDIENCE), "gateway"))
        .contains("\"resource\":\"" + AUDIENCE + "\"")
        .contains("\"authorization_servers\":[\"" + ISSUER + "\"]")
        .contains("\"scopes_supported\":[\"tools:read\",\"tools:write\"]");
  }

  @Test
  void readsItsSettingsByNameAndNamesTheWrongOne() {
    assertThat(AuthSettings.read(name -> null, "gateway.auth.")).isNull();
    AuthSettings read =
        AuthSettings.read(
            name ->
                switch (name) {
                  case "issuer" -> ISSUER.toString();
                  case "audience" -> AUDIENCE;
                  case "tenant-claim" -> "org";
                  case "clock-skew" -> "5s";
                  default -> null;
                },
            "gateway.auth.");
    assertThat(read.tenantClaim()).isEqualTo("org");
    assertThat(read.clockSkew()).isEqualTo(Duration.ofSeconds(5));
    assertThat(read.writeScope()).isEqualTo("tools:write");
    assertThatThrownBy(
            () ->
                AuthSettings.read(
                    name -> name.equals("issuer") ? ISSUER.toString() : null, "gateway.auth."))
        .hasMessageStartingWith("gateway.auth.audience");
  }

  private void refused(String header, TokenRefused.Reason reason) {
    assertThatThrownBy(() -> tokens.check(header))
        .as("%s", reason)
        .isInstanceOfSatisfying(TokenRefused.class, e -> assertThat(e.reason()).isEqualTo(reason));
  }

  private static String sign(RSAKey with, UnaryOperator<JWTClaimsSet.Builder> change) {
    JWTClaimsSet claims =
        change
            .apply(
                new JWTClaimsSet.Builder()
                    .issuer(ISSUER.toString())
                    .subject("agent-7")
                    .audience(List.of(AUDIENCE))
                    .expirationTime(Date.from(NOW.plusSeconds(300)))
                    .notBeforeTime(Date.from(NOW.minusSeconds(5)))
                    .claim("client_id", "ci-agent")
                    .claim("tenant", "acme")
                    .claim("roles", List.of("operator"))
                    .claim("scope", "tools:read tools:write"))
            .build();
    try {
      SignedJWT jwt =
          new SignedJWT(
              new JWSHeader.Builder(JWSAlgorithm.RS256)
                  .keyID(with.getKeyID())
                  .type(JOSEObjectType.JWT)
                  .build(),
              claims);
      jwt.sign(new RSASSASigner(with));
      return jwt.serialize();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static RSAKey generate(String id) {
    try {
      return new RSAKeyGenerator(2048).keyID(id).generate();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
