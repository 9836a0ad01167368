package dev.effectledger.app.console;

import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The console's logins: a signed-in operator holds a random session id in an {@code HttpOnly},
 * {@code SameSite=Strict} cookie; the session keeps who it is, the token it signed in with (sent on
 * to the other processor instances the console asks, never to the browser) and a CSRF token every
 * form posts back. Sessions live in memory for {@code ttl}, or until the access token they signed
 * in with expires if that is sooner: a restarted processor signs everyone out, and each instance
 * has its own (a load balancer in front of several needs sticky sessions).
 */
final class ConsoleSessions {

  static final String COOKIE = "el_session";

  /** One signed-in operator. */
  record Session(String id, HttpAuth.Identity who, String token, String csrf, Instant expires) {}

  private static final int MAX_SESSIONS = 10_000;

  private final SecureRandom random = new SecureRandom();
  private final Map<String, Session> byId = new ConcurrentHashMap<>();
  private final Duration ttl;
  private final Clock clock;

  ConsoleSessions(Duration ttl, Clock clock) {
    this.ttl = ttl;
    this.clock = clock;
  }

  /** A new session for {@code who}, signed in with {@code token} that does not expire. */
  Session open(HttpAuth.Identity who, String token) {
    return open(who, token, null);
  }

  /**
   * A new session for {@code who}, signed in with {@code token}; it ends when the token expires
   * ({@code tokenExpires}, null for never), or after the sessions' time to live if that is sooner,
   * since the token it sends on to other instances is refused from then on.
   */
  Session open(HttpAuth.Identity who, String token, Instant tokenExpires) {
    Instant now = clock.instant();
    if (byId.size() >= MAX_SESSIONS) {
      byId.values().removeIf(s -> !s.expires().isAfter(now));
    }
    Instant expires = now.plus(ttl);
    if (tokenExpires != null && tokenExpires.isBefore(expires)) {
      expires = tokenExpires;
    }
    Session session = new Session(randomId(), who, token, randomId(), expires);
    byId.put(session.id(), session);
    return session;
  }

  /** The live session a {@code Cookie} header names; empty when none, unknown or expired. */
  Optional<Session> find(String cookieHeader) {
    String id = cookie(cookieHeader, COOKIE);
    if (id == null) {
      return Optional.empty();
    }
    Session session = byId.get(id);
    if (session == null) {
      return Optional.empty();
    }
    if (!session.expires().isAfter(clock.instant())) {
      byId.remove(id);
      return Optional.empty();
    }
    return Optional.of(session);
  }

  void close(Session session) {
    byId.remove(session.id());
  }

  /** Whether {@code given} is the session's CSRF token, compared in constant time. */
  static boolean csrfMatches(Session session, String given) {
    return given != null
        && MessageDigest.isEqual(
            session.csrf().getBytes(java.nio.charset.StandardCharsets.US_ASCII),
            given.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
  }

  String setCookie(Session session) {
    return COOKIE
        + "="
        + session.id()
        + "; Path=/console; HttpOnly; SameSite=Strict; Max-Age="
        + Math.max(
            0, (Duration.between(clock.instant(), session.expires()).toMillis() + 999) / 1000);
  }

  static String clearCookie() {
    return COOKIE + "=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0";
  }

  /** The value of cookie {@code name} in a {@code Cookie} request header, or null. */
  static String cookie(String header, String name) {
    if (header == null) {
      return null;
    }
    for (String part : header.split(";")) {
      String pair = part.trim();
      if (pair.startsWith(name + "=")) {
        return pair.substring(name.length() + 1);
      }
    }
    return null;
  }

  private String randomId() {
    byte[] bytes = new byte[32];
    random.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }
}
