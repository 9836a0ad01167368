package dev.effectledger.auth;

import com.nimbusds.oauth2.sdk.AuthorizationCode;
import com.nimbusds.oauth2.sdk.AuthorizationCodeGrant;
import com.nimbusds.oauth2.sdk.AuthorizationErrorResponse;
import com.nimbusds.oauth2.sdk.AuthorizationRequest;
import com.nimbusds.oauth2.sdk.AuthorizationResponse;
import com.nimbusds.oauth2.sdk.ErrorObject;
import com.nimbusds.oauth2.sdk.GeneralException;
import com.nimbusds.oauth2.sdk.ParseException;
import com.nimbusds.oauth2.sdk.ResponseType;
import com.nimbusds.oauth2.sdk.Scope;
import com.nimbusds.oauth2.sdk.TokenRequest;
import com.nimbusds.oauth2.sdk.TokenResponse;
import com.nimbusds.oauth2.sdk.as.AuthorizationServerMetadata;
import com.nimbusds.oauth2.sdk.http.HTTPRequest;
import com.nimbusds.oauth2.sdk.id.ClientID;
import com.nimbusds.oauth2.sdk.id.Issuer;
import com.nimbusds.oauth2.sdk.id.State;
import com.nimbusds.oauth2.sdk.pkce.CodeChallengeMethod;
import com.nimbusds.oauth2.sdk.pkce.CodeVerifier;
import com.nimbusds.openid.connect.sdk.op.OIDCProviderMetadata;
import java.io.IOException;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Signs a person in through the identity provider from a browser: the authorization code grant with
 * PKCE (S256) of OAuth 2.1, as a public client. {@link #begin} gives the provider's authorization
 * URL to send the browser to, with a fresh {@code state} the caller also keeps in the browser (a
 * cookie) so that a code cannot be slipped into someone else's browser; {@link #finish} takes the
 * URL the provider sent the browser back to, checks its {@code state} against both, and exchanges
 * the code (with its verifier) for an access token. The token names the service in its audience
 * through RFC 8707's {@code resource}.
 *
 * <p>The provider's endpoints come from its RFC 8414 metadata, else its OpenID Connect discovery
 * document, read when first needed and kept (a failure to read them is answered for {@link
 * #RETRY_METADATA_AFTER} before the provider is asked again). Sign-ins begun and not finished are
 * kept {@link #PENDING_FOR} and at most {@link #MAX_PENDING} at once (the oldest dropped), in this
 * process's memory: a sign-in must end at the instance that began it.
 *
 * <p>The protocol messages are Nimbus' OAuth 2.0 SDK's ({@code oauth2-oidc-sdk}), not written here.
 */
public final class BrowserSignIn {

  /** How long a begun sign-in waits for the browser to come back. */
  public static final Duration PENDING_FOR = Duration.ofMinutes(10);

  static final int MAX_PENDING = 10_000;
  private static final int TIMEOUT_MS = 10_000;

  /** Why a sign-in did not end with a token; each is named to the person signing in. */
  public enum Failure {
    /** The callback's {@code state} is not one this process began, or it waited too long. */
    UNKNOWN_STATE,
    /** The callback's {@code state} is not the one this browser began with. */
    OTHER_BROWSER,
    /** The provider sent an error back (e.g. {@code access_denied}). */
    PROVIDER_REFUSED,
    /** The provider's token endpoint refused the code. */
    EXCHANGE_REFUSED,
    /** The provider could not be reached, or answered what is not OAuth. */
    PROVIDER_UNREACHABLE
  }

  /** A sign-in that did not end with a token, and why. */
  public static final class Failed extends Exception {
    private final Failure failure;

    Failed(Failure failure, String message) {
      super(message);
      this.failure = failure;
    }

    Failed(Failure failure, String message, Throwable cause) {
      super(message, cause);
      this.failure = failure;
    }

    public Failure failure() {
      return failure;
    }
  }

  /** A begun sign-in: where to send the browser, and the state to keep in it. */
  public record Begun(URI location, String state) {}

  private record Pending(CodeVerifier verifier, URI redirectUri, Instant started) {}

  private final URI issuer;
  private final ClientID client;
  private final URI resource; // null: the token's audience is the provider's choice
  private final Scope scope; // null: none asked for
  private final Clock clock;
  // the sign-ins under way, oldest first: past MAX_PENDING the oldest is dropped, so that a flood
  // of begun sign-ins costs memory it gives back, never anyone's sign-in for good
  private final Map<String, Pending> pending =
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Pending> eldest) {
          return size() > MAX_PENDING;
        }
      };
  private volatile AuthorizationServerMetadata metadata;
  private volatile Failed lastFailure; // the provider's metadata could not be read, and when
  private volatile Instant failedAt;

  /** How long a failure to read the provider's metadata is answered without asking again. */
  static final Duration RETRY_METADATA_AFTER = Duration.ofSeconds(30);

  /**
   * @param issuer the identity provider
   * @param clientId this service's client there: public, allowed the authorization code grant and
   *     the redirect URI given to {@link #begin}
   * @param resource the RFC 8707 resource the token is for (its audience), or null
   * @param scope space-separated scopes to ask for, or null for none
   */
  public BrowserSignIn(URI issuer, String clientId, URI resource, String scope, Clock clock) {
    if (clientId == null || clientId.isBlank()) {
      throw new IllegalArgumentException("a client id at the identity provider is required");
    }
    this.issuer = issuer;
    this.client = new ClientID(clientId.trim());
    this.resource = resource;
    this.scope = scope == null || scope.isBlank() ? null : Scope.parse(scope.trim());
    this.clock = clock;
  }

  public URI issuer() {
    return issuer;
  }

  /**
   * Begins a sign-in that the provider ends at {@code redirectUri}.
   *
   * @throws Failed when the provider's metadata cannot be read
   */
  public Begun begin(URI redirectUri) throws Failed {
    AuthorizationServerMetadata endpoints = metadata();
    Instant now = clock.instant();
    State state = new State();
    CodeVerifier verifier = new CodeVerifier();
    AuthorizationRequest.Builder request =
        new AuthorizationRequest.Builder(new ResponseType(ResponseType.Value.CODE), client)
            .endpointURI(endpoints.getAuthorizationEndpointURI())
            .redirectionURI(redirectUri)
            .state(state)
            .codeChallenge(verifier, CodeChallengeMethod.S256);
    if (scope != null) {
      request.scope(scope);
    }
    if (resource != null) {
      request.resource(resource);
    }
    synchronized (pending) {
      pending.values().removeIf(p -> expired(p, now));
      pending.put(state.getValue(), new Pending(verifier, redirectUri, now));
    }
    return new Begun(request.build().toURI(), state.getValue());
  }

  /**
   * Ends a sign-in at the URL the provider sent the browser back to.
   *
   * @param callback the whole URL of the callback request, with its query
   * @param browserState the state this browser kept from {@link #begin} (its cookie), or null
   * @return the access token
   * @throws Failed naming why there is no token
   */
  public String finish(URI callback, String browserState) throws Failed {
    AuthorizationResponse response;
    try {
      response = AuthorizationResponse.parse(callback);
    } catch (ParseException e) {
      throw new Failed(
          Failure.UNKNOWN_STATE,
          "the identity provider sent the browser back without a code or an error ("
              + e.getMessage()
              + ")",
          e);
    }
    String state = response.getState() == null ? null : response.getState().getValue();
    Pending begun;
    synchronized (pending) {
      begun = state == null ? null : pending.get(state);
      if (begun != null && state.equals(browserState)) {
        pending.remove(state); // spent: only by the browser that began it
      }
    }
    if (begun == null || expired(begun, clock.instant())) {
      throw new Failed(
          Failure.UNKNOWN_STATE,
          "this sign-in was not begun here or took longer than "
              + PENDING_FOR.toMinutes()
              + " minutes; sign in again");
    }
    if (!state.equals(browserState)) {
      // not spent: the browser that began it can still finish
      throw new Failed(
          Failure.OTHER_BROWSER,
          "this sign-in was begun in another browser (or its cookie was lost); sign in again");
    }
    if (!response.indicatesSuccess()) {
      ErrorObject error = ((AuthorizationErrorResponse) response).getErrorObject();
      throw new Failed(
          Failure.PROVIDER_REFUSED, "the identity provider refused: " + describe(error));
    }
    AuthorizationCode code = response.toSuccessResponse().getAuthorizationCode();
    TokenRequest exchange =
        new TokenRequest(
            metadata().getTokenEndpointURI(),
            client,
            new AuthorizationCodeGrant(code, begun.redirectUri(), begun.verifier()),
            null,
            resource == null ? null : List.of(resource),
            null,
            Map.of());
    try {
      HTTPRequest http = exchange.toHTTPRequest();
      http.setConnectTimeout(TIMEOUT_MS);
      http.setReadTimeout(TIMEOUT_MS);
      TokenResponse answer = TokenResponse.parse(http.send());
      if (!answer.indicatesSuccess()) {
        throw new Failed(
            Failure.EXCHANGE_REFUSED,
            "the identity provider's token endpoint refused the code: "
                + describe(answer.toErrorResponse().getErrorObject()));
      }
      return answer.toSuccessResponse().getTokens().getAccessToken().getValue();
    } catch (IOException | ParseException e) {
      throw new Failed(
          Failure.PROVIDER_UNREACHABLE,
          "the identity provider's token endpoint "
              + metadata().getTokenEndpointURI()
              + " could not be asked: "
              + e.getMessage(),
          e);
    }
  }

  private static boolean expired(Pending p, Instant now) {
    return !p.started().plus(PENDING_FOR).isAfter(now);
  }

  private static String describe(ErrorObject error) {
    return error.getCode()
        + (error.getDescription() == null ? "" : " (" + error.getDescription() + ")");
  }

  private AuthorizationServerMetadata metadata() throws Failed {
    AuthorizationServerMetadata known = metadata;
    if (known != null) {
      return known;
    }
    Failed failed = lastFailure;
    Instant at = failedAt;
    if (failed != null && at != null && clock.instant().isBefore(at.plus(RETRY_METADATA_AFTER))) {
      throw failed; // asked again only after a while: a down provider holds no thread for long
    }
    Issuer id = new Issuer(issuer);
    Exception first;
    try {
      known = AuthorizationServerMetadata.resolve(id, TIMEOUT_MS, TIMEOUT_MS);
    } catch (GeneralException | IOException e) {
      first = e;
      try {
        known = OIDCProviderMetadata.resolve(id, TIMEOUT_MS, TIMEOUT_MS);
      } catch (GeneralException | IOException again) {
        Failed unreachable =
            new Failed(
                Failure.PROVIDER_UNREACHABLE,
                "the identity provider "
                    + issuer
                    + " published no readable metadata (RFC 8414: "
                    + first.getMessage()
                    + "; OpenID: "
                    + again.getMessage()
                    + "); check the issuer URL",
                again);
        lastFailure = unreachable;
        failedAt = clock.instant();
        throw unreachable;
      }
    }
    if (known.getAuthorizationEndpointURI() == null || known.getTokenEndpointURI() == null) {
      throw new Failed(
          Failure.PROVIDER_UNREACHABLE,
          "the identity provider " + issuer + " names no authorization or token endpoint");
    }
    metadata = known;
    return known;
  }
}
