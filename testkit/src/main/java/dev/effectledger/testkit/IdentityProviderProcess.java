package dev.effectledger.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The tests' identity provider, a real OAuth 2.1 authorization server (module {@code idp}: Spring
 * Authorization Server), started in a JVM of its own on its own classpath and stopped on {@link
 * #close()}. Its clients and users are listed in {@code dev.effectledger.idp.IdentityProvider}. A
 * module whose tests start it depends on {@code effectledger-idp} (test scope, nothing of it on the
 * classpath) so that it is built first.
 */
public final class IdentityProviderProcess implements AutoCloseable {

  private static final Path MODULE = Path.of("..", "idp", "target");
  private static final Pattern READY = Pattern.compile("IDP (http://\\S+)");
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process process;
  private final URI issuer;
  private final List<String> output;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private IdentityProviderProcess(Process process, URI issuer, List<String> output) {
    this.process = process;
    this.issuer = issuer;
    this.output = output;
  }

  /** Starts it and waits (at most 90 s) until it listens. */
  public static IdentityProviderProcess start() throws IOException, InterruptedException {
    Path classpath = MODULE.resolve("classpath.txt");
    if (!Files.isRegularFile(classpath)) {
      throw new IllegalStateException(
          classpath.toAbsolutePath()
              + " is missing: build the idp module first (./mvnw -pl idp package)");
    }
    String cp =
        MODULE.resolve("classes").toAbsolutePath()
            + java.io.File.pathSeparator
            + Files.readString(classpath).trim();
    Process process =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1", // as the tests' JVMs: it lives a minute or two
                "-cp",
                cp,
                "dev.effectledger.idp.IdentityProvider")
            .redirectErrorStream(true)
            .start();
    List<String> output = java.util.Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<URI> ready = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  output.add(line);
                  Matcher m = READY.matcher(line);
                  if (m.find()) {
                    ready.complete(URI.create(m.group(1)));
                  }
                }
              } catch (IOException e) {
                // the process ended
              }
              ready.completeExceptionally(
                  new IllegalStateException("the identity provider ended: " + output));
            },
            "idp-output");
    reader.setDaemon(true);
    reader.start();
    try {
      return new IdentityProviderProcess(process, ready.get(90, TimeUnit.SECONDS), output);
    } catch (Exception e) {
      process.destroyForcibly();
      throw new IllegalStateException("the identity provider did not start: " + output, e);
    }
  }

  /** Its issuer, e.g. {@code http://127.0.0.1:40123}. */
  public URI issuer() {
    return issuer;
  }

  /** What it printed. */
  public List<String> output() {
    return List.copyOf(output);
  }

  /**
   * An access token by the client credentials grant, for {@code resource} (RFC 8707; null to ask
   * for none) and {@code scope} (null: the client's).
   */
  public String clientToken(String client, String secret, String resource, String scope) {
    Map<String, String> form = new LinkedHashMap<>();
    form.put("grant_type", "client_credentials");
    if (resource != null) {
      form.put("resource", resource);
    }
    if (scope != null) {
      form.put("scope", scope);
    }
    HttpRequest request =
        HttpRequest.newBuilder(issuer.resolve("/oauth2/token"))
            .header(
                "Authorization",
                "Basic "
                    + Base64.getEncoder()
                        .encodeToString((client + ":" + secret).getBytes(StandardCharsets.UTF_8)))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .POST(HttpRequest.BodyPublishers.ofString(encode(form)))
            .build();
    return accessToken(send(http, request));
  }

  /**
   * An access token by the authorization code grant with PKCE, as a browser would get it: the user
   * signs in on the provider's login page, and the code sent to {@code redirectUri} is exchanged.
   */
  public String userToken(
      String client,
      String user,
      String password,
      String redirectUri,
      String resource,
      String scope) {
    HttpClient browser = browser();
    String verifier = randomText();
    Map<String, String> authorize = new LinkedHashMap<>();
    authorize.put("response_type", "code");
    authorize.put("client_id", client);
    authorize.put("redirect_uri", redirectUri);
    authorize.put("scope", scope);
    authorize.put("state", randomText());
    authorize.put("code_challenge", challenge(verifier));
    authorize.put("code_challenge_method", "S256");
    if (resource != null) {
      authorize.put("resource", resource);
    }
    URI callback =
        signIn(browser, issuer.resolve("/oauth2/authorize?" + encode(authorize)), user, password);
    Matcher code =
        Pattern.compile("[?&]code=([^&]+)")
            .matcher(callback.getRawQuery() == null ? "" : "?" + callback.getRawQuery());
    if (!callback.toString().startsWith(redirectUri) || !code.find()) {
      throw new IllegalStateException("the sign-in ended at " + callback + ", not with a code");
    }
    Map<String, String> exchange = new LinkedHashMap<>();
    exchange.put("grant_type", "authorization_code");
    exchange.put("code", java.net.URLDecoder.decode(code.group(1), StandardCharsets.UTF_8));
    exchange.put("redirect_uri", redirectUri);
    exchange.put("client_id", client);
    exchange.put("code_verifier", verifier);
    if (resource != null) {
      exchange.put("resource", resource);
    }
    return accessToken(
        send(
            http,
            HttpRequest.newBuilder(issuer.resolve("/oauth2/token"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(encode(exchange)))
                .build()));
  }

  /**
   * An HTTP client that keeps cookies and follows no redirects, as {@link #signIn} needs. It sends
   * cookies as browsers do ({@code Cookie: a=1; b=2}, RFC 6265): the JDK's {@code CookieManager}
   * alone sends a cookie with {@code Max-Age} in RFC 2965's form ({@code $Version="1", a="1";
   * $Path=...}), which no browser sends.
   */
  public static HttpClient browser() {
    return HttpClient.newBuilder()
        .cookieHandler(new BrowserCookies())
        .followRedirects(HttpClient.Redirect.NEVER)
        .connectTimeout(Duration.ofSeconds(5))
        .build();
  }

  /**
   * Signs {@code user} in on the provider's login page for the authorization request {@code
   * authorize} (one a client built, e.g. the console's redirect), as a browser: {@code browser}
   * keeps cookies and follows no redirects; if it is signed in at the provider already, no login
   * page is shown. Returns where the provider sends the browser back to: the client's redirect URI
   * with a code, or with an error.
   */
  public static URI signIn(HttpClient browser, URI authorize, String user, String password) {
    // the authorize request, the login page, the saved request again: each a redirect
    HttpResponse<String> page = send(browser, html(authorize).GET().build());
    URI login = location(authorize, page);
    if (!login.getPath().equals("/login")) {
      return login; // signed in at the provider already: straight back
    }
    page = send(browser, html(login).GET().build());
    Matcher csrf = Pattern.compile("name=\"_csrf\"[^>]*value=\"([^\"]+)\"").matcher(page.body());
    if (!csrf.find()) {
      throw new IllegalStateException("no _csrf on the login page: " + page.body());
    }
    Map<String, String> credentials = new LinkedHashMap<>();
    credentials.put("username", user);
    credentials.put("password", password);
    credentials.put("_csrf", csrf.group(1));
    HttpResponse<String> signedIn =
        send(
            browser,
            html(login)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(encode(credentials)))
                .build());
    URI saved = location(login, signedIn);
    return location(saved, send(browser, html(saved).GET().build()));
  }

  private static HttpRequest.Builder html(URI uri) {
    return HttpRequest.newBuilder(uri)
        .header("Accept", "text/html")
        .timeout(Duration.ofSeconds(20));
  }

  private static URI location(URI from, HttpResponse<String> response) {
    String location = response.headers().firstValue("Location").orElse(null);
    if (response.statusCode() / 100 != 3 || location == null) {
      throw new IllegalStateException(
          from + " answered " + response.statusCode() + ", not a redirect: " + response.body());
    }
    return from.resolve(location);
  }

  private static String accessToken(HttpResponse<String> response) {
    try {
      JsonNode body = JSON.readTree(response.body());
      if (response.statusCode() != 200 || !body.path("access_token").isTextual()) {
        throw new IllegalStateException(
            "the token endpoint answered " + response.statusCode() + ": " + response.body());
      }
      return body.get("access_token").asText();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static HttpResponse<String> send(HttpClient client, HttpRequest request) {
    try {
      return client.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static String encode(Map<String, String> form) {
    return form.entrySet().stream()
        .map(
            e ->
                URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)
                    + "="
                    + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
        .collect(Collectors.joining("&"));
  }

  private static String randomText() {
    byte[] bytes = new byte[32];
    new SecureRandom().nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  private static String challenge(String verifier) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(verifier.getBytes(StandardCharsets.US_ASCII));
      return Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The JDK's cookie store, its cookies sent in RFC 6265's form. */
  private static final class BrowserCookies extends java.net.CookieHandler {
    private final CookieManager store = new CookieManager();

    @Override
    public Map<String, List<String>> get(URI uri, Map<String, List<String>> requestHeaders) {
      String path = uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath();
      List<String> pairs = new ArrayList<>();
      for (java.net.HttpCookie cookie : store.getCookieStore().get(uri)) {
        String cookiePath = cookie.getPath() == null ? "/" : cookie.getPath();
        boolean pathMatches =
            path.equals(cookiePath)
                || (path.startsWith(cookiePath)
                    && (cookiePath.endsWith("/") || path.charAt(cookiePath.length()) == '/'));
        if (pathMatches && !cookie.hasExpired()) {
          pairs.add(cookie.getName() + "=" + cookie.getValue());
        }
      }
      return pairs.isEmpty() ? Map.of() : Map.of("Cookie", List.of(String.join("; ", pairs)));
    }

    @Override
    public void put(URI uri, Map<String, List<String>> responseHeaders) throws IOException {
      store.put(uri, responseHeaders);
    }
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }
}
