package dev.effectledger.app.console;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import dev.effectledger.auth.BrowserSignIn;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The console's doors: who is asking (a signed-in session, or the local operator of an open
 * console), signing in (with a token, or through the identity provider) and out, and whether a form
 * post may act (its session's CSRF token, or on an open console the post's own origin; the operator
 * role for actions).
 */
final class ConsoleGuard {

  static final String LOCAL_OPERATOR = "local";
  static final String LOGIN_COOKIE = "el_login";
  static final String SIGN_IN_COOKIE = "el_signin";
  static final String CALLBACK = "/console/signin/callback";

  /** Why a request is refused: the HTTP status and the text the caller gets. */
  record Refusal(int status, String message) {}

  /** Who is asking: a signed-in session, the local operator of an open console, or nobody. */
  record Caller(HttpAuth.Identity who, ConsoleSessions.Session session) {
    String authorization() {
      return session == null ? "" : "Bearer " + session.token();
    }

    String csrf() {
      return session == null ? "" : session.csrf();
    }

    boolean operator() {
      return who.may(HttpAuth.Role.OPERATOR);
    }
  }

  private final HttpAuth auth;
  private final boolean loopback;
  private final ConsoleSessions sessions;
  private final ConsoleResponses responses;
  private final SignIn signIn; // null: tokens only
  private final SecureRandom random = new SecureRandom();

  /**
   * Signing in through the identity provider: the client and, unless it is derived from each
   * request's {@code Host} ({@code http://<host>/console/signin/callback}), the redirect URI
   * registered for it there.
   */
  record SignIn(BrowserSignIn provider, URI redirectUri) {}

  /**
   * For a console behind {@code auth} whose processor listens on {@code host} (an open console acts
   * only where that is a loopback address), signing in to {@code sessions} with a token, and
   * through the identity provider when {@code signIn} is not null.
   */
  ConsoleGuard(
      HttpAuth auth,
      String host,
      ConsoleSessions sessions,
      ConsoleResponses responses,
      SignIn signIn) {
    this.auth = auth;
    this.loopback = isLoopback(host);
    this.sessions = sessions;
    this.responses = responses;
    this.signIn = signIn;
  }

  private static boolean isLoopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (IOException e) {
      return false;
    }
  }

  /** Who sends a request with this {@code Cookie} header; empty when nobody signed in. */
  Optional<Caller> caller(String cookieHeader) {
    if (auth.open()) {
      return Optional.of(
          new Caller(
              new HttpAuth.Identity(
                  LOCAL_OPERATOR, loopback ? HttpAuth.Role.OPERATOR : HttpAuth.Role.VIEWER),
              null));
    }
    return sessions.find(cookieHeader).map(s -> new Caller(s.who(), s));
  }

  /**
   * Why {@code caller}'s form post (its fields {@code form}, its request headers {@code request})
   * may not go on, or empty when it may: without a session only on an open console and from the
   * console's own pages; with one only with the session's CSRF token.
   */
  Optional<Refusal> refusePost(Caller caller, Map<String, String> form, Headers request) {
    if (caller.session() == null && !auth.open()) {
      return Optional.of(new Refusal(401, "sign in at /console/login\n"));
    }
    if (caller.session() != null
        && !ConsoleSessions.csrfMatches(caller.session(), form.get("csrf"))) {
      return Optional.of(
          new Refusal(
              403, "the form's CSRF token is missing or wrong: reload the page and try again\n"));
    }
    if (caller.session() == null
        && !sameOrigin(
            request.getFirst("Host"), request.getFirst("Origin"), request.getFirst("Referer"))) {
      // An open console has no session to hold a CSRF token; a post from another origin is refused.
      return Optional.of(new Refusal(403, "cross-origin form post refused\n"));
    }
    return Optional.empty();
  }

  /** Why {@code caller} may not act on keys or approve bypasses, or empty when an operator. */
  Optional<Refusal> refuseAction(Caller caller) {
    if (caller.operator()) {
      return Optional.empty();
    }
    return Optional.of(
        new Refusal(
            403,
            caller.who().name()
                + " is a viewer: settling keys and approving bypasses needs the operator role"
                + (auth.open() ? " (an open console acts only on a loopback address)" : "")
                + "\n"));
  }

  /** Ends {@code caller}'s session, if any, and sends them to the sign-in page. */
  void logout(HttpExchange exchange, Caller caller) throws IOException {
    if (caller.session() != null) {
      sessions.close(caller.session());
    }
    exchange.getResponseHeaders().add("Set-Cookie", ConsoleSessions.clearCookie());
    ConsoleResponses.redirect(exchange, "/console/login");
  }

  /**
   * The sign-in form, with a fresh nonce in a cookie the form posts back (its CSRF token); an open
   * console has none and goes to the overview.
   */
  void loginPage(HttpExchange exchange, String error) throws IOException {
    if (auth.open()) {
      ConsoleResponses.redirect(exchange, "/console");
      return;
    }
    String nonce = randomToken();
    exchange
        .getResponseHeaders()
        .add(
            "Set-Cookie",
            LOGIN_COOKIE + "=" + nonce + "; Path=/console/login; HttpOnly; SameSite=Strict");
    Map<String, Object> page = new HashMap<>();
    page.put("title", "Sign in");
    page.put("csrf", nonce);
    page.put("error", error);
    if (signIn != null) {
      page.put("provider", signIn.provider().issuer().getAuthority());
    }
    responses.html(exchange, error == null ? 200 : 401, "login", page);
  }

  /**
   * Sends the browser to the identity provider to sign in (the authorization code grant with PKCE),
   * keeping the sign-in's state in a cookie the callback must bring back.
   */
  void beginSignIn(HttpExchange exchange) throws IOException {
    if (signIn == null || auth.open()) {
      ConsoleResponses.text(
          exchange,
          404,
          "this console signs in with tokens only: set http.tokens.issuer, http.tokens.audience"
              + " and console.sign-in.client-id to sign in through an identity provider\n");
      return;
    }
    URI redirect = redirectUri(exchange);
    if (redirect == null) {
      ConsoleResponses.text(
          exchange,
          400,
          "console.sign-in.redirect-uri is not set: signing in through the identity provider"
              + " works at a loopback address only (this request came for "
              + exchange.getRequestHeaders().getFirst("Host")
              + "); set it to the URL the provider sends browsers back to\n");
      return;
    }
    BrowserSignIn.Begun begun;
    try {
      begun = signIn.provider().begin(redirect);
    } catch (BrowserSignIn.Failed e) {
      loginPage(exchange, "Signing in through the identity provider failed: " + e.getMessage());
      return;
    }
    exchange
        .getResponseHeaders()
        .add(
            "Set-Cookie",
            // Lax, not Strict: the provider's redirect back is a navigation from another site
            SIGN_IN_COOKIE
                + "="
                + begun.state()
                + "; Path=/console/signin; HttpOnly; SameSite=Lax; Max-Age="
                + BrowserSignIn.PENDING_FOR.toSeconds()
                + (secure() ? "; Secure" : ""));
    ConsoleResponses.redirect(exchange, begun.location().toString());
  }

  /**
   * The identity provider's redirect back: the code exchanged for an access token, the token
   * checked as any other (a role from its claim), and a session. The answer is a page that moves on
   * to the console rather than a redirect, since the session cookie ({@code SameSite=Strict}) is
   * not sent on a redirect chain that began at another site.
   */
  void finishSignIn(HttpExchange exchange) throws IOException {
    if (signIn == null || auth.open()) {
      beginSignIn(exchange);
      return;
    }
    exchange
        .getResponseHeaders()
        .add("Set-Cookie", SIGN_IN_COOKIE + "=; Path=/console/signin; HttpOnly; Max-Age=0");
    String query = exchange.getRequestURI().getRawQuery();
    URI redirect = redirectUri(exchange);
    if (redirect == null) {
      ConsoleResponses.text(exchange, 400, "console.sign-in.redirect-uri is not set\n");
      return;
    }
    URI callback = URI.create(redirect + (query == null ? "" : "?" + query));
    String state =
        ConsoleSessions.cookie(exchange.getRequestHeaders().getFirst("Cookie"), SIGN_IN_COOKIE);
    String token;
    try {
      token = signIn.provider().finish(callback, state);
    } catch (BrowserSignIn.Failed e) {
      loginPage(exchange, "Signing in through the identity provider failed: " + e.getMessage());
      return;
    }
    HttpAuth.Checked checked = auth.check(token);
    if (checked.who() == null) {
      loginPage(exchange, "The identity provider signed you in, but " + checked.refusal());
      return;
    }
    ConsoleSessions.Session session = sessions.open(checked.who(), token, checked.expires());
    exchange.getResponseHeaders().add("Set-Cookie", sessions.setCookie(session));
    Map<String, Object> page = new HashMap<>();
    page.put("title", "Signed in");
    page.put("user", checked.who().name());
    page.put("role", checked.who().role().name().toLowerCase(java.util.Locale.ROOT));
    responses.html(exchange, 200, "signed-in", page);
  }

  /**
   * Where the provider sends the browser back: the configured URI, else, for a console reached at a
   * loopback address only, {@code http://<Host>/console/signin/callback}; null for another Host
   * (any caller chooses it, so it must not choose where a code goes).
   */
  private URI redirectUri(HttpExchange exchange) {
    if (signIn.redirectUri() != null) {
      return signIn.redirectUri();
    }
    String host = exchange.getRequestHeaders().getFirst("Host");
    if (host == null) {
      return null;
    }
    try {
      URI derived = URI.create("http://" + host + CALLBACK);
      String name = derived.getHost();
      return name != null
              && (name.equals("127.0.0.1") || name.equals("localhost") || name.equals("[::1]"))
          ? derived
          : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private boolean secure() {
    return signIn.redirectUri() != null
        && "https".equalsIgnoreCase(signIn.redirectUri().getScheme());
  }

  /** The sign-in form's post: a session for a token this processor knows. */
  void login(HttpExchange exchange) throws IOException {
    Map<String, String> form = ConsoleForms.form(exchange);
    String nonce =
        ConsoleSessions.cookie(exchange.getRequestHeaders().getFirst("Cookie"), LOGIN_COOKIE);
    if (nonce == null
        || !MessageDigest.isEqual(
            nonce.getBytes(StandardCharsets.US_ASCII),
            form.getOrDefault("csrf", "").getBytes(StandardCharsets.US_ASCII))) {
      ConsoleResponses.text(
          exchange, 403, "the sign-in form's CSRF token is missing or wrong: reload the page\n");
      return;
    }
    String token = form.getOrDefault("token", "").trim();
    HttpAuth.Checked checked = auth.check(token);
    if (checked.who() == null) {
      loginPage(exchange, "Not signed in: " + checked.refusal() + ".");
      return;
    }
    ConsoleSessions.Session session = sessions.open(checked.who(), token, checked.expires());
    exchange.getResponseHeaders().add("Set-Cookie", sessions.setCookie(session));
    ConsoleResponses.redirect(exchange, "/console");
  }

  /**
   * Whether a post without a session comes from this console's own pages: its {@code Origin} (or,
   * without one, its {@code Referer}) names the {@code Host} it was sent to.
   */
  static boolean sameOrigin(String host, String origin, String referer) {
    if (origin == null) {
      if (referer == null) {
        return false;
      }
      origin = referer;
    }
    try {
      URI uri = URI.create(origin);
      String authority = uri.getRawAuthority();
      return host != null && host.equalsIgnoreCase(authority);
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private String randomToken() {
    byte[] bytes = new byte[24];
    random.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }
}
