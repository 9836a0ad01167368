/**
 * Access tokens checked at every door (the HTTP gateway, the MCP gateway, the processor's API and
 * console): OAuth 2.1 bearer tokens that are JWTs signed by an identity provider, checked against
 * the provider's published keys (JWKS) for signature, issuer, audience, expiry and not-before; the
 * caller's scopes, tenant and roles read from configured claims.
 *
 * <p>Signatures, key sets and their caching and refresh are Nimbus JOSE + JWT's ({@link
 * com.nimbusds.jose.jwk.source.JWKSourceBuilder}, {@link
 * com.nimbusds.jwt.proc.DefaultJWTProcessor}). The claims are checked here, one by one, rather than
 * by Nimbus' {@code DefaultJWTClaimsVerifier}: that one reports a refusal as a message to parse,
 * and every door answers with the reason by name ({@link TokenRefused.Reason}) in its {@code
 * WWW-Authenticate} challenge (RFC 6750) and its logs.
 *
 * <p>{@link ResourceMetadata} writes the RFC 9728 protected-resource metadata the MCP authorization
 * specification asks of an HTTP MCP server, and {@link Challenge} the {@code WWW-Authenticate}
 * values that point at it.
 *
 * <p>{@link BrowserSignIn} signs a person in from a browser (the console): the authorization code
 * grant with PKCE, its messages and the provider's metadata Nimbus' OAuth 2.0 SDK's ({@code
 * oauth2-oidc-sdk}); this package keeps only which sign-ins are under way and the reasons it names.
 */
package dev.effectledger.auth;
