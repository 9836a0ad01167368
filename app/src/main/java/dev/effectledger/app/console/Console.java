package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.effectledger.auth.BrowserSignIn;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.QueryString;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The operator's console at {@code /console}, served by a processor instance: per tool live figures
 * with charts, key lookup with the key's audit trail, the queue of keys held as UNKNOWN across
 * every instance with the actions that settle them, and signed bypass approvals. Server-rendered
 * HTML from mustache.java templates (logic-less and HTML-escaping by default, so nothing a key or
 * an error message holds reaches the page as markup); the charts are uPlot's, served from its
 * WebJar. The page's script only polls {@code /console/api/overview} and draws.
 *
 * <p>Doors: with {@code http.auth.*} or {@code http.tokens.*} configured, every console page needs
 * a sign-in with one of those tokens, or through the identity provider ({@code console.sign-in.*}:
 * the authorization code grant with PKCE); the session cookie is {@code HttpOnly; SameSite=Strict}.
 * A {@code viewer} reads, an {@code operator} also acts; every form posts a per-session CSRF token.
 * Without tokens the console is open only where the processor listens on a loopback address, as the
 * local operator ({@code local}); elsewhere it refuses to act. Each action is written to Kafka (an
 * {@code Outcome} on {@code tool-outcomes} naming the operator, who the ledger audits; an approval
 * the ledger verifies): the console changes nothing by itself.
 *
 * <p>This class routes; {@link ConsoleGuard} keeps the doors, {@link ConsolePages} builds the
 * pages' models, {@link ConsoleForms} reads forms and queries and {@link ConsoleResponses} answers.
 */
public final class Console {

  private final LedgerReads server;
  private final ConsoleActions actions;
  private final ConsoleGuard guard;
  private final ConsolePages pages;
  private final ConsoleResponses responses = new ConsoleResponses();

  /**
   * A console whose sign-in page also signs people in through the identity provider with {@code
   * signIn} (null: tokens only), the provider sending them back to {@code redirectUri} (null: to
   * {@code http://<the request's Host>/console/signin/callback}).
   */
  public Console(
      LedgerReads server,
      HttpAuth auth,
      String host,
      ConsoleActions actions,
      List<String> executors,
      Supplier<ToolPolicies> policies,
      Duration sessionTtl,
      Clock clock,
      BrowserSignIn signIn,
      java.net.URI redirectUri) {
    this.server = server;
    this.actions = actions;
    this.guard =
        new ConsoleGuard(
            auth,
            host,
            new ConsoleSessions(sessionTtl, clock),
            responses,
            signIn == null ? null : new ConsoleGuard.SignIn(signIn, redirectUri));
    this.pages = new ConsolePages(server, actions, executors, policies, clock);
  }

  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      String method = exchange.getRequestMethod();
      exchange.getResponseHeaders().set("X-Frame-Options", "DENY");
      exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
      exchange
          .getResponseHeaders()
          .set(
              "Content-Security-Policy",
              "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
      exchange.getResponseHeaders().set("Cache-Control", "no-store");
      if (path.startsWith("/console/static/")) {
        ConsoleResponses.staticFile(exchange, path.substring("/console/static/".length()));
        return;
      }
      if (path.equals("/console/login")) {
        if (method.equals("POST")) {
          guard.login(exchange);
        } else {
          guard.loginPage(exchange, null);
        }
        return;
      }
      if (path.equals("/console/signin") && method.equals("GET")) {
        guard.beginSignIn(exchange);
        return;
      }
      if (path.equals(ConsoleGuard.CALLBACK) && method.equals("GET")) {
        guard.finishSignIn(exchange);
        return;
      }
      Optional<ConsoleGuard.Caller> found =
          guard.caller(exchange.getRequestHeaders().getFirst("Cookie"));
      if (found.isEmpty()) {
        if (path.startsWith("/console/api/") || method.equals("POST")) {
          ConsoleResponses.text(exchange, 401, "sign in at /console/login\n");
        } else {
          ConsoleResponses.redirect(exchange, "/console/login");
        }
        return;
      }
      ConsoleGuard.Caller caller = found.get();
      if (method.equals("POST")) {
        post(exchange, caller, path);
        return;
      }
      if (!method.equals("GET")) {
        ConsoleResponses.text(exchange, 405, "GET or POST\n");
        return;
      }
      switch (path) {
        case "/console", "/console/" ->
            responses.html(exchange, 200, "overview", pages.overview(caller));
        case "/console/api/overview" -> ConsoleResponses.json(exchange, pages.overviewData(caller));
        case "/console/held" -> responses.html(exchange, 200, "held", pages.held(caller));
        case "/console/keys" ->
            responses.html(
                exchange,
                200,
                "key",
                pages.key(caller, QueryString.parse(exchange.getRequestURI().getRawQuery())));
        default -> ConsoleResponses.text(exchange, 404, "no such console page\n");
      }
    } catch (RuntimeException e) {
      ConsoleResponses.text(exchange, 500, "the console failed: " + e.getMessage() + "\n");
    }
  }

  private void post(HttpExchange exchange, ConsoleGuard.Caller caller, String path)
      throws IOException {
    Map<String, String> form = ConsoleForms.form(exchange);
    Optional<ConsoleGuard.Refusal> refused =
        guard.refusePost(caller, form, exchange.getRequestHeaders());
    if (refused.isEmpty() && path.equals("/console/logout")) {
      guard.logout(exchange, caller);
      return;
    }
    if (refused.isEmpty()) {
      refused = guard.refuseAction(caller);
    }
    if (refused.isPresent()) {
      ConsoleResponses.text(exchange, refused.get().status(), refused.get().message());
      return;
    }
    String tenant = form.getOrDefault("tenant", "");
    String key = form.getOrDefault("key", "");
    if (tenant.isEmpty() || key.isEmpty()) {
      ConsoleResponses.text(exchange, 400, "the form needs tenant and key\n");
      return;
    }
    String operator = caller.who().name();
    ConsoleActions.Done done;
    switch (path) {
      case "/console/actions/lookup" ->
          done = actions.lookUpAgain(held(tenant, key, caller), operator);
      case "/console/actions/applied" ->
          done =
              actions.markApplied(
                  held(tenant, key, caller),
                  form.getOrDefault("effectId", "").trim(),
                  form.getOrDefault("result", "").trim(),
                  operator);
      case "/console/actions/released" ->
          done = actions.markReleased(held(tenant, key, caller), operator);
      case "/console/actions/approve" -> {
        responses.html(exchange, 200, "approval", pages.approval(caller, tenant, key, form));
        return;
      }
      default -> {
        ConsoleResponses.text(exchange, 404, "no such action\n");
        return;
      }
    }
    ConsoleResponses.redirect(
        exchange,
        ConsoleForms.keyHref(tenant, key)
            + "&notice="
            + ConsoleForms.enc(done.message())
            + (done.ok() ? "" : "&failed=1"));
  }

  /** The entry of a held key, for an action on it; null when the key is not held (any more). */
  private ObjectNode held(String tenant, String key, ConsoleGuard.Caller caller) {
    ObjectNode entry = server.entry(tenant, key, caller.authorization());
    return entry != null && "UNKNOWN".equals(entry.path("state").asText()) ? entry : null;
  }
}
