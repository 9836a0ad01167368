package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.Headers;
import dev.effectledger.gateway.Credentials;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class ConsoleGuardTest {

  private static final Clock CLOCK =
      Clock.fixed(Instant.parse("2026-01-01T00:00:00Z"), ZoneOffset.UTC);

  private final ConsoleSessions sessions = new ConsoleSessions(Duration.ofHours(1), CLOCK);

  private static HttpAuth tokens() {
    Properties settings = new Properties();
    settings.setProperty("http.auth.alice.sha256", Credentials.sha256Hex("alice-token"));
    settings.setProperty("http.auth.alice.role", "operator");
    settings.setProperty("http.auth.bob.sha256", Credentials.sha256Hex("bob-token"));
    settings.setProperty("http.auth.bob.role", "viewer");
    return HttpAuth.fromProperties(settings);
  }

  private ConsoleGuard guard(HttpAuth auth, String host) {
    return new ConsoleGuard(auth, host, sessions, new ConsoleResponses(), null);
  }

  private static Headers headers(String... namesAndValues) {
    Headers headers = new Headers();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      headers.add(namesAndValues[i], namesAndValues[i + 1]);
    }
    return headers;
  }

  @Test
  void shouldTakeAPostFromTheConsolesOwnOriginOnly() {
    assertThat(ConsoleGuard.sameOrigin("127.0.0.1:8080", "http://127.0.0.1:8080", null)).isTrue();
    assertThat(ConsoleGuard.sameOrigin("Console.Local:80", "http://console.local:80", null))
        .as("host names compare without case")
        .isTrue();
    assertThat(
            ConsoleGuard.sameOrigin(
                "127.0.0.1:8080", null, "http://127.0.0.1:8080/console/keys?tenant=a"))
        .as("the Referer when there is no Origin")
        .isTrue();
    assertThat(
            ConsoleGuard.sameOrigin(
                "127.0.0.1:8080", "http://evil.example", "http://127.0.0.1:8080/console"))
        .as("an Origin that names another site wins over a Referer")
        .isFalse();
    assertThat(ConsoleGuard.sameOrigin("127.0.0.1:8080", "http://127.0.0.1:9090", null))
        .as("another port")
        .isFalse();
    assertThat(ConsoleGuard.sameOrigin("127.0.0.1:8080", null, null)).as("neither").isFalse();
    assertThat(ConsoleGuard.sameOrigin(null, "http://127.0.0.1:8080", null))
        .as("no Host")
        .isFalse();
    assertThat(ConsoleGuard.sameOrigin("127.0.0.1:8080", "http://127.0.0.1:8080/ x", null))
        .as("not a URI")
        .isFalse();
  }

  @Test
  void shouldLetTheLocalOperatorActOnAnOpenConsoleOnlyOnALoopbackAddress() {
    ConsoleGuard.Caller local = guard(HttpAuth.OPEN, "127.0.0.1").caller(null).orElseThrow();
    ConsoleGuard.Caller wide = guard(HttpAuth.OPEN, "0.0.0.0").caller(null).orElseThrow();

    assertThat(local.who()).isEqualTo(new HttpAuth.Identity("local", HttpAuth.Role.OPERATOR));
    assertThat(local.authorization()).isEmpty();
    assertThat(wide.who().role()).isEqualTo(HttpAuth.Role.VIEWER);
    assertThat(guard(HttpAuth.OPEN, "0.0.0.0").refuseAction(wide))
        .hasValueSatisfying(
            r -> {
              assertThat(r.status()).isEqualTo(403);
              assertThat(r.message())
                  .isEqualTo(
                      "local is a viewer: settling keys and approving bypasses needs the operator"
                          + " role (an open console acts only on a loopback address)\n");
            });
    assertThat(guard(HttpAuth.OPEN, "127.0.0.1").refuseAction(local)).isEmpty();
  }

  @Test
  void shouldEndASessionWhenTheAccessTokenItSignedInWithExpires() {
    Instant[] now = {Instant.parse("2026-01-01T00:00:00Z")};
    Clock ticking =
        new Clock() {
          @Override
          public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
          }

          @Override
          public Clock withZone(java.time.ZoneId zone) {
            return this;
          }

          @Override
          public Instant instant() {
            return now[0];
          }
        };
    ConsoleSessions hourLong = new ConsoleSessions(Duration.ofHours(1), ticking);
    HttpAuth.Identity alice = new HttpAuth.Identity("alice", HttpAuth.Role.OPERATOR);
    ConsoleSessions.Session withToken =
        hourLong.open(alice, "jwt", now[0].plus(Duration.ofMinutes(5)));
    ConsoleSessions.Session configured = hourLong.open(alice, "static");
    assertThat(hourLong.setCookie(withToken)).endsWith("Max-Age=300");

    now[0] = now[0].plus(Duration.ofMinutes(5));
    assertThat(hourLong.find(ConsoleSessions.COOKIE + "=" + withToken.id()))
        .as("the token it sends on has expired")
        .isEmpty();
    assertThat(hourLong.find(ConsoleSessions.COOKIE + "=" + configured.id()))
        .as("a configured token does not expire: the session lasts its hour")
        .isPresent();
    now[0] = now[0].plus(Duration.ofMinutes(55));
    assertThat(hourLong.find(ConsoleSessions.COOKIE + "=" + configured.id())).isEmpty();
    assertThat(hourLong.open(alice, "long-lived", now[0].plus(Duration.ofDays(1))).expires())
        .as("never past the sessions' time to live")
        .isEqualTo(now[0].plus(Duration.ofHours(1)));
  }

  @Test
  void shouldKnowASignedInCallerByTheSessionCookieOnly() {
    HttpAuth auth = tokens();
    ConsoleGuard guard = guard(auth, "127.0.0.1");
    ConsoleSessions.Session session =
        sessions.open(auth.identify("alice-token").orElseThrow(), "alice-token");

    Optional<ConsoleGuard.Caller> caller =
        guard.caller("theme=dark; " + ConsoleSessions.COOKIE + "=" + session.id());

    assertThat(caller).isPresent();
    assertThat(caller.get().who().name()).isEqualTo("alice");
    assertThat(caller.get().authorization())
        .as("what the other instances are asked with")
        .isEqualTo("Bearer alice-token");
    assertThat(caller.get().csrf()).isEqualTo(session.csrf());
    assertThat(guard.caller(null)).isEmpty();
    assertThat(guard.caller(ConsoleSessions.COOKIE + "=made-up")).isEmpty();
  }

  @Test
  void shouldRefuseASignedInPostWithoutItsSessionsCsrfToken() {
    HttpAuth auth = tokens();
    ConsoleGuard guard = guard(auth, "127.0.0.1");
    ConsoleSessions.Session session =
        sessions.open(auth.identify("alice-token").orElseThrow(), "alice-token");
    ConsoleGuard.Caller alice = new ConsoleGuard.Caller(session.who(), session);
    Headers crossSite = headers("Host", "127.0.0.1:8080", "Origin", "http://evil.example");

    assertThat(guard.refusePost(alice, Map.of("csrf", session.csrf()), crossSite))
        .as("a session's CSRF token is what counts, not the origin")
        .isEmpty();
    assertThat(guard.refusePost(alice, Map.of("csrf", "wrong"), crossSite))
        .contains(
            new ConsoleGuard.Refusal(
                403, "the form's CSRF token is missing or wrong: reload the page and try again\n"));
    assertThat(guard.refusePost(alice, Map.of(), crossSite))
        .map(ConsoleGuard.Refusal::status)
        .contains(403);
  }

  @Test
  void shouldRefuseAnOpenConsolesPostFromAnotherOrigin() {
    ConsoleGuard guard = guard(HttpAuth.OPEN, "127.0.0.1");
    ConsoleGuard.Caller local = guard.caller(null).orElseThrow();

    assertThat(
            guard.refusePost(
                local,
                Map.of(),
                headers("Host", "127.0.0.1:8080", "Origin", "http://127.0.0.1:8080")))
        .isEmpty();
    assertThat(
            guard.refusePost(
                local,
                Map.of(),
                headers("Host", "127.0.0.1:8080", "Origin", "http://evil.example")))
        .contains(new ConsoleGuard.Refusal(403, "cross-origin form post refused\n"));
    assertThat(guard.refusePost(local, Map.of(), headers("Host", "127.0.0.1:8080")))
        .as("neither Origin nor Referer")
        .contains(new ConsoleGuard.Refusal(403, "cross-origin form post refused\n"));
  }

  @Test
  void shouldRefuseAPostWithoutASessionWhenTheConsoleNeedsASignIn() {
    ConsoleGuard guard = guard(tokens(), "127.0.0.1");
    ConsoleGuard.Caller noSession =
        new ConsoleGuard.Caller(new HttpAuth.Identity("alice", HttpAuth.Role.OPERATOR), null);

    assertThat(
            guard.refusePost(
                noSession,
                Map.of(),
                headers("Host", "127.0.0.1:8080", "Origin", "http://127.0.0.1:8080")))
        .contains(new ConsoleGuard.Refusal(401, "sign in at /console/login\n"));
  }

  @Test
  void shouldLetOnlyAnOperatorAct() {
    HttpAuth auth = tokens();
    ConsoleGuard guard = guard(auth, "127.0.0.1");
    ConsoleSessions.Session bob =
        sessions.open(auth.identify("bob-token").orElseThrow(), "bob-token");
    ConsoleSessions.Session alice =
        sessions.open(auth.identify("alice-token").orElseThrow(), "alice-token");

    assertThat(guard.refuseAction(new ConsoleGuard.Caller(bob.who(), bob)))
        .contains(
            new ConsoleGuard.Refusal(
                403,
                "bob is a viewer: settling keys and approving bypasses needs the operator role\n"));
    assertThat(guard.refuseAction(new ConsoleGuard.Caller(alice.who(), alice))).isEmpty();
  }
}
