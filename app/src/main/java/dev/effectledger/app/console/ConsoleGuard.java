package dev.effectledger.app.console;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
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
 * console), signing in and out, and whether a form post may act (its session's CSRF token, or on an
 * open console the post's own origin; the operator role for actions).
 */
final class ConsoleGuard {

  static final String LOCAL_OPERATOR = "local";
  static final String LOGIN_COOKIE = "el_login";

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
  private final SecureRandom random = new SecureRandom();

  /**
   * For a console behind {@code auth} whose processor listens on {@code host} (an open console acts
   * only where that is a loopback address), signing in to {@code sessions}.
   */
  ConsoleGuard(HttpAuth auth, String host, ConsoleSessions sessions, ConsoleResponses responses) {
    this.auth = auth;
    this.loopback = isLoopback(host);
    this.sessions = sessions;
    this.responses = responses;
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
    responses.html(exchange, error == null ? 200 : 401, "login", page);
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
    Optional<HttpAuth.Identity> who = auth.identify(token);
    if (who.isEmpty()) {
      loginPage(exchange, "That token is not one of this processor's (http.auth.<name>.sha256).");
      return;
    }
    ConsoleSessions.Session session = sessions.open(who.get(), token);
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
