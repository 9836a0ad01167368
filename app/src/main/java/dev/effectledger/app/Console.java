package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.mustachejava.DefaultMustacheFactory;
import com.github.mustachejava.Mustache;
import com.github.mustachejava.MustacheFactory;
import com.sun.net.httpserver.HttpExchange;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.KeyDerivation;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
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
 * <p>Doors: with {@code http.auth.*} configured, every console page needs a sign-in with one of
 * those tokens (session cookie {@code HttpOnly; SameSite=Strict}); a {@code viewer} reads, an
 * {@code operator} also acts; every form posts a per-session CSRF token. Without tokens the console
 * is open only where the processor listens on a loopback address, as the local operator ({@code
 * local}); elsewhere it refuses to act. Each action is written to Kafka (an {@code Outcome} on
 * {@code tool-outcomes} naming the operator, who the ledger audits; an approval the ledger
 * verifies): the console changes nothing by itself.
 */
final class Console {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String LOCAL_OPERATOR = "local";
  private static final String LOGIN_COOKIE = "el_login";

  private final LedgerHttpServer server;
  private final HttpAuth auth;
  private final boolean loopback;
  private final ConsoleSessions sessions;
  private final ConsoleActions actions;
  private final List<String> executors;
  private final Supplier<ToolPolicies> policies;
  private final Clock clock;
  private final MustacheFactory templates = new DefaultMustacheFactory("console");
  private final ExecutorProbe executorProbe = new ExecutorProbe();
  private final java.security.SecureRandom random = new java.security.SecureRandom();

  Console(
      LedgerHttpServer server,
      HttpAuth auth,
      String host,
      ConsoleActions actions,
      List<String> executors,
      Supplier<ToolPolicies> policies,
      Duration sessionTtl,
      Clock clock) {
    this.server = server;
    this.auth = auth;
    this.loopback = isLoopback(host);
    this.sessions = new ConsoleSessions(sessionTtl, clock);
    this.actions = actions;
    this.executors = List.copyOf(executors);
    this.policies = policies;
    this.clock = clock;
  }

  private static boolean isLoopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (IOException e) {
      return false;
    }
  }

  /** Who is asking: a signed-in session, the local operator of an open console, or nobody. */
  private record Caller(HttpAuth.Identity who, ConsoleSessions.Session session) {
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

  private Optional<Caller> caller(HttpExchange exchange) {
    if (auth.open()) {
      return Optional.of(
          new Caller(
              new HttpAuth.Identity(
                  LOCAL_OPERATOR, loopback ? HttpAuth.Role.OPERATOR : HttpAuth.Role.VIEWER),
              null));
    }
    return sessions
        .find(exchange.getRequestHeaders().getFirst("Cookie"))
        .map(s -> new Caller(s.who(), s));
  }

  void handle(HttpExchange exchange) throws IOException {
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
        staticFile(exchange, path.substring("/console/static/".length()));
        return;
      }
      if (path.equals("/console/login")) {
        if (method.equals("POST")) {
          login(exchange);
        } else {
          loginPage(exchange, null);
        }
        return;
      }
      Optional<Caller> found = caller(exchange);
      if (found.isEmpty()) {
        if (path.startsWith("/console/api/") || method.equals("POST")) {
          text(exchange, 401, "sign in at /console/login\n");
        } else {
          redirect(exchange, "/console/login");
        }
        return;
      }
      Caller caller = found.get();
      if (method.equals("POST")) {
        post(exchange, caller, path);
        return;
      }
      if (!method.equals("GET")) {
        text(exchange, 405, "GET or POST\n");
        return;
      }
      switch (path) {
        case "/console", "/console/" -> overviewPage(exchange, caller);
        case "/console/api/overview" -> json(exchange, overviewData(caller));
        case "/console/held" -> heldPage(exchange, caller);
        case "/console/keys" -> keyPage(exchange, caller);
        default -> text(exchange, 404, "no such console page\n");
      }
    } catch (RuntimeException e) {
      text(exchange, 500, "the console failed: " + e.getMessage() + "\n");
    }
  }

  private void post(HttpExchange exchange, Caller caller, String path) throws IOException {
    Map<String, String> form = form(exchange);
    if (caller.session() == null && !auth.open()) {
      text(exchange, 401, "sign in at /console/login\n");
      return;
    }
    if (caller.session() != null
        && !ConsoleSessions.csrfMatches(caller.session(), form.get("csrf"))) {
      text(
          exchange,
          403,
          "the form's CSRF token is missing or wrong: reload the page and try again\n");
      return;
    }
    if (caller.session() == null && !sameOrigin(exchange)) {
      // An open console has no session to hold a CSRF token; a post from another origin is refused.
      text(exchange, 403, "cross-origin form post refused\n");
      return;
    }
    if (path.equals("/console/logout")) {
      if (caller.session() != null) {
        sessions.close(caller.session());
      }
      exchange.getResponseHeaders().add("Set-Cookie", ConsoleSessions.clearCookie());
      redirect(exchange, "/console/login");
      return;
    }
    if (!caller.operator()) {
      text(
          exchange,
          403,
          caller.who().name()
              + " is a viewer: settling keys and approving bypasses needs the operator role"
              + (auth.open() ? " (an open console acts only on a loopback address)" : "")
              + "\n");
      return;
    }
    String tenant = form.getOrDefault("tenant", "");
    String key = form.getOrDefault("key", "");
    if (tenant.isEmpty() || key.isEmpty()) {
      text(exchange, 400, "the form needs tenant and key\n");
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
        approve(exchange, caller, tenant, key, form);
        return;
      }
      default -> {
        text(exchange, 404, "no such action\n");
        return;
      }
    }
    redirect(
        exchange,
        "/console/keys?tenant="
            + enc(tenant)
            + "&key="
            + enc(key)
            + "&notice="
            + enc(done.message())
            + (done.ok() ? "" : "&failed=1"));
  }

  /** The entry of a held key, for an action on it; null when the key is not held (any more). */
  private ObjectNode held(String tenant, String key, Caller caller) {
    ObjectNode entry = server.entry(tenant, key, caller.authorization());
    return entry != null && "UNKNOWN".equals(entry.path("state").asText()) ? entry : null;
  }

  private void approve(
      HttpExchange exchange, Caller caller, String tenant, String key, Map<String, String> form)
      throws IOException {
    String reason = form.getOrDefault("reason", "").trim();
    Optional<Duration> valid = Durations.parse(form.getOrDefault("expires", "1h").trim());
    Map<String, Object> page = page(caller, "Bypass approval");
    page.put("tenant", tenant);
    page.put("key", key);
    page.put("back", "/console/keys?tenant=" + enc(tenant) + "&key=" + enc(key));
    if (reason.isEmpty()) {
      page.put("error", "A reason is required: it is audited with the bypass.");
    } else if (valid.isEmpty()
        || valid.get().isNegative()
        || valid.get().isZero()
        || valid.get().compareTo(ConsoleActions.MAX_APPROVAL) > 0) {
      page.put("error", "Expiry must be a duration from 1s to 24h, e.g. 15m or 1h.");
    } else {
      ConsoleActions.Approval approval =
          actions.approve(tenant, key, caller.who().name(), reason, valid.get());
      if (approval.token() == null) {
        page.put("error", approval.problem());
      } else {
        page.put("approval", approval.token());
        page.put("expiresAt", approval.expiresAt().toString());
        page.put("reason", reason);
      }
    }
    html(exchange, 200, "approval", page);
  }

  private void loginPage(HttpExchange exchange, String error) throws IOException {
    if (auth.open()) {
      redirect(exchange, "/console");
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
    html(exchange, error == null ? 200 : 401, "login", page);
  }

  private void login(HttpExchange exchange) throws IOException {
    Map<String, String> form = form(exchange);
    String nonce =
        ConsoleSessions.cookie(exchange.getRequestHeaders().getFirst("Cookie"), LOGIN_COOKIE);
    if (nonce == null
        || !java.security.MessageDigest.isEqual(
            nonce.getBytes(StandardCharsets.US_ASCII),
            form.getOrDefault("csrf", "").getBytes(StandardCharsets.US_ASCII))) {
      text(exchange, 403, "the sign-in form's CSRF token is missing or wrong: reload the page\n");
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
    redirect(exchange, "/console");
  }

  private void overviewPage(HttpExchange exchange, Caller caller) throws IOException {
    Map<String, Object> page = page(caller, "Overview");
    JsonNode data = overviewData(caller);
    List<Map<String, Object>> tools = new ArrayList<>();
    data.path("tools")
        .fields()
        .forEachRemaining(
            e -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("tool", e.getKey());
              JsonNode d = e.getValue().path("decisions");
              row.put("firstSights", d.path("dispatched").asLong());
              row.put(
                  "duplicates",
                  d.path("dedup_hit").asLong()
                      + d.path("in_flight").asLong()
                      + d.path("refused_in_flight").asLong());
              row.put("conflicts", d.path("conflict").asLong());
              row.put("failed", d.path("failed").asLong());
              row.put("inFlight", e.getValue().path("inFlight").asLong());
              row.put("held", e.getValue().path("held").asLong());
              row.put("p50", millis(e.getValue().path("p50Ms")));
              row.put("p99", millis(e.getValue().path("p99Ms")));
              tools.add(row);
            });
    page.put("tools", tools);
    page.put("instances", data.path("instances").asInt());
    page.put("counting", data.path("counting").asBoolean());
    page.put("unreachable", texts(data.path("unreachable")));
    List<Map<String, Object>> executorRows = new ArrayList<>();
    data.path("executors")
        .forEach(
            x -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("url", x.path("url").asText());
              row.put("status", x.path("status").asText());
              row.put("ready", x.path("ready").asBoolean());
              row.put("effects", x.path("effects").asLong());
              row.put("inFlight", x.path("inFlight").asLong());
              row.put("retries", x.path("retries").asLong());
              executorRows.add(row);
            });
    page.put("executorRows", executorRows);
    List<Map<String, Object>> doubles = new ArrayList<>();
    data.path("doubleEffects")
        .forEach(
            d -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("tool", d.path("tool").asText());
              row.put("tenant", d.path("tenant").asText());
              row.put("key", d.path("key").asText());
              row.put("first", d.path("firstEffectId").asText());
              row.put("second", d.path("secondEffectId").asText());
              row.put(
                  "href",
                  "/console/keys?tenant="
                      + enc(d.path("tenant").asText())
                      + "&key="
                      + enc(d.path("key").asText()));
              doubles.add(row);
            });
    page.put("doubleEffects", doubles);
    page.put("hasDoubleEffects", !doubles.isEmpty());
    html(exchange, 200, "overview", page);
  }

  private static String millis(JsonNode value) {
    return value.isMissingNode() ? "-" : String.format(Locale.ROOT, "%.0f ms", value.asDouble());
  }

  /** What the overview shows: the ledger's figures on every instance, and each executor's. */
  private ObjectNode overviewData(Caller caller) {
    ObjectNode data = server.overview(caller.authorization(), false);
    data.put("at", clock.millis());
    ArrayNode rows = data.putArray("executors");
    for (String url : executors) {
      rows.add(executorProbe.probe(url));
    }
    return data;
  }

  private void heldPage(HttpExchange exchange, Caller caller) throws IOException {
    Map<String, Object> page = page(caller, "Held keys");
    JsonNode data = server.held(caller.authorization(), false);
    List<Map<String, Object>> rows = new ArrayList<>();
    Instant now = clock.instant();
    data.path("held")
        .forEach(
            entry -> {
              Map<String, Object> row = new LinkedHashMap<>();
              String tenant = entry.path("tenant").asText();
              String key = entry.path("key").asText();
              row.put("tenant", tenant);
              row.put("key", key);
              row.put("href", "/console/keys?tenant=" + enc(tenant) + "&key=" + enc(key));
              row.put("tool", entry.path("tool").asText());
              row.put("attempts", entry.path("attempts").asInt());
              row.put(
                  "age",
                  Durations.format(
                      Duration.ofSeconds(
                          Duration.between(
                                  Instant.parse(entry.path("lastDispatchedAt").asText()), now)
                              .toSeconds())));
              row.put("error", entry.path("error").asText(""));
              row.put("errorMessage", entry.path("errorMessage").asText(""));
              row.put("finding", actions.finding(tenant, key));
              rows.add(row);
            });
    page.put("held", rows);
    page.put("count", rows.size());
    page.put("instances", data.path("instances").asInt());
    page.put("counting", data.path("counting").asBoolean());
    page.put("unreachable", texts(data.path("unreachable")));
    html(exchange, 200, "held", page);
  }

  private void keyPage(HttpExchange exchange, Caller caller) throws IOException {
    Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
    Map<String, Object> page = page(caller, "Keys");
    page.putAll(query);
    page.put("failed", query.containsKey("failed"));
    String tenant = query.getOrDefault("tenant", "").trim();
    String key = query.getOrDefault("key", "").trim();
    if (!tenant.isEmpty() && key.isEmpty() && query.containsKey("tool")) {
      try {
        key = derive(tenant, query);
        page.put("derived", key);
      } catch (IllegalArgumentException e) {
        page.put("error", e.getMessage());
      }
    }
    if (!tenant.isEmpty() && !key.isEmpty()) {
      page.put("key", key);
      try {
        ObjectNode entry = server.entry(tenant, key, caller.authorization());
        if (entry == null) {
          page.put("missing", true);
        } else {
          List<Map<String, String>> fields = new ArrayList<>();
          entry
              .fields()
              .forEachRemaining(
                  f -> fields.add(Map.of("name", f.getKey(), "value", f.getValue().asText())));
          page.put("fields", fields);
          page.put("hasEntry", true);
          page.put("state", entry.path("state").asText());
          boolean heldNow = "UNKNOWN".equals(entry.path("state").asText());
          page.put("held", heldNow);
          ToolPolicy policy = policies.get().tools().get(entry.path("tool").asText());
          boolean settled =
              "SUCCEEDED".equals(entry.path("state").asText())
                  || "FAILED".equals(entry.path("state").asText());
          page.put("bypassable", settled && policy != null && policy.bypassAllowed());
          page.put("finding", actions.finding(tenant, key));
        }
        List<Map<String, String>> audit = actions.auditTrail(tenant, key);
        page.put("audit", audit);
        page.put("hasAudit", !audit.isEmpty());
      } catch (IllegalStateException e) {
        page.put("error", e.getMessage());
      }
    }
    html(exchange, 200, "key", page);
  }

  /** The key a step's call derives under the tool's current key rules. */
  private String derive(String tenant, Map<String, String> query) {
    String tool = query.getOrDefault("tool", "").trim();
    ToolPolicy policy = policies.get().tools().get(tool);
    if (policy == null) {
      throw new IllegalArgumentException("tool '" + tool + "' is not in the policy");
    }
    JsonNode arguments;
    try {
      arguments = JSON.readTree(query.getOrDefault("arguments", "{}"));
    } catch (IOException e) {
      throw new IllegalArgumentException("arguments are not JSON: " + e.getMessage());
    }
    if (arguments == null || !arguments.isObject()) {
      throw new IllegalArgumentException("arguments must be a JSON object");
    }
    return KeyDerivation.key(
        tenant,
        query.getOrDefault("run", ""),
        query.getOrDefault("step", ""),
        query.getOrDefault("scope", ""),
        tool,
        arguments,
        policy.key().ignore());
  }

  private Map<String, Object> page(Caller caller, String title) {
    Map<String, Object> page = new HashMap<>();
    page.put("title", title);
    page.put("user", caller.who().name());
    page.put("role", caller.who().role().name().toLowerCase(Locale.ROOT));
    page.put("operator", caller.operator());
    page.put("csrf", caller.csrf());
    page.put("signedIn", caller.session() != null);
    return page;
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  private void html(HttpExchange exchange, int status, String template, Map<String, Object> page)
      throws IOException {
    Mustache mustache = templates.compile(template + ".mustache");
    StringWriter out = new StringWriter();
    mustache.execute(out, page);
    answer(exchange, status, "text/html; charset=utf-8", out.toString());
  }

  private static void json(HttpExchange exchange, JsonNode body) throws IOException {
    answer(exchange, 200, "application/json", body.toString());
  }

  private static void text(HttpExchange exchange, int status, String body) throws IOException {
    answer(exchange, status, "text/plain; charset=utf-8", body);
  }

  private static void redirect(HttpExchange exchange, String location) throws IOException {
    exchange.getResponseHeaders().set("Location", location);
    exchange.sendResponseHeaders(303, -1);
  }

  private static void answer(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  /** The console's own script and style, and uPlot's from its WebJar. */
  private static final Map<String, String> STATIC =
      Map.of(
          "console.js", "console/console.js",
          "console.css", "console/console.css",
          "uPlot.iife.min.js", "META-INF/resources/webjars/uplot/1.6.30/dist/uPlot.iife.min.js",
          "uPlot.min.css", "META-INF/resources/webjars/uplot/1.6.30/dist/uPlot.min.css");

  private static void staticFile(HttpExchange exchange, String name) throws IOException {
    String resource = STATIC.get(name);
    if (resource == null) {
      text(exchange, 404, "no such file\n");
      return;
    }
    try (InputStream in = Console.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        text(exchange, 404, "missing from the jar: " + resource + "\n");
        return;
      }
      byte[] bytes = in.readAllBytes();
      exchange
          .getResponseHeaders()
          .set(
              "Content-Type",
              name.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8");
      exchange.getResponseHeaders().set("Cache-Control", "max-age=3600");
      exchange.sendResponseHeaders(200, bytes.length);
      exchange.getResponseBody().write(bytes);
    }
  }

  /** A form post's fields (application/x-www-form-urlencoded), at most 64 KiB of them. */
  private static Map<String, String> form(HttpExchange exchange) throws IOException {
    byte[] body = exchange.getRequestBody().readNBytes(64 * 1024);
    return query(new String(body, StandardCharsets.UTF_8));
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> out = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      String name =
          URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String value =
          eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      out.putIfAbsent(name, value);
    }
    return out;
  }

  /** Whether a post without a session comes from this console's own pages (Origin or Referer). */
  private static boolean sameOrigin(HttpExchange exchange) {
    String host = exchange.getRequestHeaders().getFirst("Host");
    String origin = exchange.getRequestHeaders().getFirst("Origin");
    if (origin == null) {
      String referer = exchange.getRequestHeaders().getFirst("Referer");
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
    return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  private static String enc(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }
}
