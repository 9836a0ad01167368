package dev.effectledger.auth;

import java.time.Instant;
import java.util.Set;

/**
 * Who a checked token speaks for.
 *
 * @param subject the token's {@code sub}: the user, or the client for a client's own token
 * @param clientId the OAuth client it was issued to ({@code client_id}, else {@code azp}); may be
 *     null
 * @param tenant whose calls these are, from the configured claim
 * @param scopes the granted scopes ({@code scope}, space-separated, or {@code scp})
 * @param roles the roles from the configured claim; empty when it has none
 * @param expiresAt the token's {@code exp}
 */
public record Caller(
    String subject,
    String clientId,
    String tenant,
    Set<String> scopes,
    Set<String> roles,
    Instant expiresAt) {

  public Caller {
    scopes = Set.copyOf(scopes);
    roles = Set.copyOf(roles);
  }

  public boolean hasScope(String scope) {
    return scopes.contains(scope);
  }

  public boolean hasRole(String role) {
    return roles.contains(role);
  }
}
