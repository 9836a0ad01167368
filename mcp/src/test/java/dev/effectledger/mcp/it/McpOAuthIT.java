package dev.effectledger.mcp.it;

import static dev.effectledger.mcp.it.McpPipeline.key;
import static dev.effectledger.mcp.it.McpPipeline.structured;
import static dev.effectledger.mcp.it.McpPipeline.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.embedded.LoopbackPorts;
import dev.effectledger.mcp.McpHttpClients;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.testkit.ClientSuites;
import dev.effectledger.testkit.IdentityProviderProcess;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.McpHttpClientTransportAuthorizationException;
import io.modelcontextprotocol.client.transport.customizer.McpHttpClientTransportAuthorizationErrorHandler;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The MCP gateway as an OAuth 2.1 resource server, against a real authorization server (Spring
 * Authorization Server, {@link IdentityProviderProcess}): the MCP Java SDK's client finds the
 * authorization server from the gateway's 401 and its RFC 9728 metadata, gets a token for the
 * gateway (RFC 8707 resource) and calls through it; tokens without, expired, for another audience,
 * forged or without the write scope are refused, and nothing reaches the upstream or the ledger.
 */
@Tag("integration")
@Timeout(300)
class McpOAuthIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final Pattern PARAM = Pattern.compile("(\\w+)=\"([^\"]*)\"");

  private static IdentityProviderProcess idp;
  private static McpPipeline pipeline;
  private static McpGateway gateway;
  private static String url;
  private final List<McpSyncClient> clients = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    idp = IdentityProviderProcess.start();
    pipeline = new McpPipeline(kafka.bootstrapServers(), "mcp-oauth-it");
    int port = LoopbackPorts.stable();
    url = "http://127.0.0.1:" + port + "/mcp";
    gateway =
        McpGateway.startHttp(
            pipeline.gatewayConfig(
                """
                auth:
                  issuer: "%s"
                  audience: "%s"
                  # 1s, not the default 60s: the expired-token case would wait a minute otherwise
                  clockSkew: 1s
                # off unless set (no shipped limit): 2 calls a second a run, for the over-limit case
                limits:
                  default: {runIntentsPerSecond: 2}
                """
                    .formatted(idp.issuer(), url),
                Map.of("payments", pipeline.upstream.url()),
                port),
            pipeline.policies);
  }

  @AfterAll
  static void stop() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
    if (pipeline != null) {
      pipeline.close();
    }
    if (idp != null) {
      idp.close();
    }
  }

  @AfterEach
  void closeClients() {
    clients.forEach(McpSyncClient::close);
  }

  @Test
  void shouldSendAnAgentWithoutATokenToItsAuthorizationServer() throws Exception {
    HttpResponse<String> refused = post(null);

    assertThat(refused.statusCode()).isEqualTo(401);
    Map<String, String> challenge = challenge(refused);
    String metadataUrl = challenge.get("resource_metadata");
    assertThat(metadataUrl)
        .isEqualTo(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"));
    assertThat(challenge)
        .containsEntry("scope", "tools:read tools:write")
        .doesNotContainKey("error");
    JsonNode metadata = get(metadataUrl);
    assertThat(metadata.path("resource").asText()).isEqualTo(url);
    assertThat(metadata.path("authorization_servers").get(0).asText())
        .isEqualTo(idp.issuer().toString());
    assertThat(metadata.path("scopes_supported").toString()).contains("tools:write");
    assertThat(get(url.replace("/mcp", "/.well-known/oauth-protected-resource")))
        .as("at the root too")
        .isEqualTo(metadata);
  }

  @Test
  void shouldTakeTheSdkClientThroughTheFlowAndTheCallOnceUnderItsTokensTenant() throws Exception {
    AtomicInteger fetched = new AtomicInteger();
    McpSyncClient agent = oauthAgent("acme-agent", "acme-secret", "run-oauth-1", fetched);
    Map<String, Object> charge = Map.of("amount", 310, "to", "cus_31");

    CallToolResult first = agent.callTool(new CallToolRequest("create_charge", charge));
    CallToolResult again = agent.callTool(new CallToolRequest("create_charge", charge));

    assertThat(fetched).as("one token for the session").hasValue(1);
    assertThat(first.isError()).as(text(first)).isFalse();
    String acmeKey = key("acme", "run-oauth-1", "mcp:create_charge", charge);
    assertThat(first.meta()).containsEntry(McpMeta.IDEMPOTENCY_KEY, acmeKey);
    assertThat(again.meta()).containsEntry(McpMeta.REPLAYED, true);
    assertThat(structured(again).path("id").asText())
        .isEqualTo(structured(first).path("id").asText());
    assertThat(pipeline.upstream.effects(acmeKey)).isEqualTo(1);
    assertThat(pipeline.upstream.authorizations())
        .as("the agent's token stops at the gateway")
        .isEmpty();

    // the same call by a globex agent is globex's: its own key, its own effect
    CallToolResult theirs =
        oauthAgent("globex-agent", "globex-secret", "run-oauth-1", new AtomicInteger())
            .callTool(new CallToolRequest("create_charge", charge));
    String globexKey = key("globex", "run-oauth-1", "mcp:create_charge", charge);
    assertThat(theirs.meta())
        .containsEntry(McpMeta.IDEMPOTENCY_KEY, globexKey)
        .containsEntry(McpMeta.REPLAYED, false);
    assertThat(pipeline.upstream.effects(globexKey)).isEqualTo(1);
  }

  @Test
  void shouldTakeTheTypeScriptSdksClientThroughTheFlowForAMachineAndForASignedInUser()
      throws Exception {
    ClientSuites.Run suite =
        ClientSuites.npm(
            "test:mcp-oauth:dist",
            Map.of(
                "EFFECTLEDGER_MCP_URL",
                url,
                "EFFECTLEDGER_MCP_RUN",
                "run-oauth-ts",
                "EFFECTLEDGER_IDP_ISSUER",
                idp.issuer().toString()));

    // client credentials from the 401; authorization code with PKCE as alice (tenant acme)
    assertThat(suite.exit()).as(suite.output()).isZero();
    assertThat(suite.output())
        .contains("# pass 2")
        .contains("# fail 0")
        .doesNotContain("deprecated");
    String machine =
        key(
            "acme",
            "run-oauth-ts",
            "mcp:create_charge",
            Map.of("amount", 411, "to", "cus_ts_oauth"));
    String user = // its own run: the gateway allows a run 2 calls a second
        key(
            "acme",
            "run-oauth-ts-user",
            "mcp:create_charge",
            Map.of("amount", 412, "to", "cus_ts_user"));
    assertThat(suite.output()).contains("# machine key " + machine).contains("# user key " + user);
    assertThat(pipeline.upstream.effects(machine)).isEqualTo(1);
    assertThat(pipeline.upstream.effects(user)).isEqualTo(1);
  }

  @Test
  void shouldRefuseARunOverItsShareWithTheWaitAndDoNothing() throws Exception {
    McpSyncClient agent =
        agent(
            idp.clientToken("acme-agent", "acme-secret", url, "tools:read tools:write"),
            "run-oauth-loop");
    List<CallToolResult> results = new ArrayList<>();
    for (int amount = 1; amount <= 3; amount++) { // a loop, faster than 2 calls a second
      results.add(
          agent.callTool(
              new CallToolRequest("create_charge", Map.of("amount", amount, "to", "cus_loop"))));
    }

    assertThat(results.get(0).isError()).as(text(results.get(0))).isFalse();
    assertThat(results.get(1).isError()).as(text(results.get(1))).isFalse();
    CallToolResult over = results.get(2);
    assertThat(over.isError()).isTrue();
    assertThat(text(over))
        .contains("OVER_LIMIT")
        .contains("run run-oauth-loop of tenant acme is over its limit of 2 calls a second")
        .contains("Call again in 1 s");
    assertThat(
            pipeline.upstream.effects(
                key(
                    "acme",
                    "run-oauth-loop",
                    "mcp:create_charge",
                    Map.of("amount", 3, "to", "cus_loop"))))
        .isZero();
  }

  @Test
  void shouldKeepASessionToTheCallerThatOpenedIt() throws Exception {
    String acme = idp.clientToken("acme-agent", "acme-secret", url, "tools:read tools:write");
    String globex = idp.clientToken("globex-agent", "globex-secret", url, "tools:read tools:write");
    String session = post("Bearer " + acme).headers().firstValue("Mcp-Session-Id").orElseThrow();
    java.util.function.Function<String, Integer> ping =
        token -> {
          try {
            return HTTP.send(
                    HttpRequest.newBuilder(URI.create(url))
                        .header("Authorization", "Bearer " + token)
                        .header("Mcp-Session-Id", session)
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json, text/event-stream")
                        .POST(
                            HttpRequest.BodyPublishers.ofString(
                                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"))
                        .build(),
                    HttpResponse.BodyHandlers.ofString())
                .statusCode();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        };

    assertThat(ping.apply(globex)).as("another tenant's caller").isEqualTo(404);
    assertThat(ping.apply(acme)).as("its opener").isBetween(200, 299);
  }

  @Test
  void shouldRefuseATokenForAnotherAudience() throws Exception {
    // no resource asked for: Spring's default audience, the client's id
    assertRefused(idp.clientToken("acme-agent", "acme-secret", null, null), "WRONG_AUDIENCE");
    assertRefused(
        idp.clientToken("acme-agent", "acme-secret", "http://127.0.0.1:1/other", null),
        "WRONG_AUDIENCE");
  }

  @Test
  void shouldRefuseAnExpiredToken() throws Exception {
    String brief = idp.clientToken("acme-brief", "brief-secret", url, "tools:read"); // lives 2 s
    HttpResponse<String> whileItLives = post("Bearer " + brief);
    assertThat(whileItLives.statusCode()).as("while it lives").isEqualTo(200);
    // the gateway's MCP session of that request, ended: it is not needed
    whileItLives
        .headers()
        .firstValue("Mcp-Session-Id")
        .ifPresent(
            session -> {
              try {
                HTTP.send(
                    HttpRequest.newBuilder(URI.create(url))
                        .header("Authorization", "Bearer " + brief)
                        .header("Mcp-Session-Id", session)
                        .DELETE()
                        .build(),
                    HttpResponse.BodyHandlers.discarding());
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });

    await("the token expires")
        .atMost(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(500))
        .until(() -> post("Bearer " + brief).statusCode() == 401);
    assertRefused(brief, "EXPIRED");
  }

  @Test
  void shouldRefuseAForgedOrMalformedToken() throws Exception {
    String token = idp.clientToken("acme-agent", "acme-secret", url, null);
    String[] parts = token.split("\\.");
    JsonNode claims = JSON.readTree(Base64.getUrlDecoder().decode(parts[1]));
    ((com.fasterxml.jackson.databind.node.ObjectNode) claims).put("tenant", "globex");
    String forged =
        parts[0]
            + "."
            + Base64.getUrlEncoder().withoutPadding().encodeToString(JSON.writeValueAsBytes(claims))
            + "."
            + parts[2];

    assertRefused(forged, "BAD_SIGNATURE");
    assertRefused("not-a-token", "MALFORMED");
  }

  @Test
  void shouldRefuseAWriteWithoutTheWriteScopeAndLetTheReadsThrough() throws Exception {
    String reader = idp.clientToken("acme-reader", "reader-secret", url, "tools:read");
    McpSyncClient agent = agent(reader, "run-oauth-reader");
    assertThat(agent.listTools().tools()).isNotEmpty();
    CallToolResult read =
        agent.callTool(new CallToolRequest("find_charge", Map.of("key", "nothing-here")));
    assertThat(read.content()).isNotEmpty();
    Map<String, Object> charge = Map.of("amount", 320, "to", "cus_32");

    assertThatThrownBy(() -> agent.callTool(new CallToolRequest("create_charge", charge)))
        .satisfies(
            e -> {
              McpHttpClientTransportAuthorizationException refused = authorizationError(e);
              assertThat(refused.getResponseInfo().statusCode()).isEqualTo(403);
              Map<String, String> challenge =
                  parse(
                      refused
                          .getResponseInfo()
                          .headers()
                          .firstValue("WWW-Authenticate")
                          .orElseThrow());
              assertThat(challenge)
                  .containsEntry("error", "insufficient_scope")
                  .containsEntry("scope", "tools:write");
            });
    assertThat(
            pipeline.upstream.effects(key("acme", "run-oauth-reader", "mcp:create_charge", charge)))
        .isZero();
  }

  @Test
  void shouldRefuseAnSdkClientWithoutAToken() {
    assertThatThrownBy(() -> agent(null, "run-oauth-none"))
        .satisfies(
            e -> assertThat(authorizationError(e).getResponseInfo().statusCode()).isEqualTo(401));
  }

  private void assertRefused(String token, String reason) throws Exception {
    HttpResponse<String> refused = post("Bearer " + token);
    assertThat(refused.statusCode()).as(reason).isEqualTo(401);
    assertThat(challenge(refused))
        .containsEntry("error", "invalid_token")
        .hasEntrySatisfying("error_description", d -> assertThat(d).startsWith(reason + ":"));
  }

  /** An initialize request, as an agent's first. */
  private static HttpResponse<String> post(String authorization) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    """
                    {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":\
                    "2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"""));
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode get(String address) throws Exception {
    HttpResponse<String> response =
        HTTP.send(
            HttpRequest.newBuilder(URI.create(address)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as("GET %s", address).isEqualTo(200);
    return JSON.readTree(response.body());
  }

  private static Map<String, String> challenge(HttpResponse<String> response) {
    return parse(response.headers().firstValue("WWW-Authenticate").orElseThrow());
  }

  private static Map<String, String> parse(String challenge) {
    assertThat(challenge).startsWith("Bearer ");
    Map<String, String> params = new java.util.LinkedHashMap<>();
    Matcher m = PARAM.matcher(challenge);
    while (m.find()) {
      params.put(m.group(1), m.group(2));
    }
    return params;
  }

  private static McpHttpClientTransportAuthorizationException authorizationError(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof McpHttpClientTransportAuthorizationException refused) {
        return refused;
      }
    }
    throw new AssertionError("not refused by the gateway's authorization: " + e, e);
  }

  /** The SDK's client with a fixed token (null: none). */
  private McpSyncClient agent(String token, String run) {
    return open(
        new AtomicReference<>(token), run, McpHttpClientTransportAuthorizationErrorHandler.NOOP);
  }

  /**
   * The SDK's client as an agent platform wires it: no token at first; on a 401 its authorization
   * error handler reads the challenge, finds the authorization server from the gateway's metadata
   * and the server's own (RFC 9728, RFC 8414), gets a token for the gateway by the client
   * credentials grant with the gateway as resource (RFC 8707) and has the SDK send the request
   * again.
   */
  private McpSyncClient oauthAgent(
      String client, String secret, String run, AtomicInteger fetched) {
    AtomicReference<String> token = new AtomicReference<>();
    return open(
        token,
        run,
        McpHttpClientTransportAuthorizationErrorHandler.fromSync(
            (request, response, context) -> {
              if (response.statusCode() != 401) {
                return false;
              }
              Map<String, String> challenge =
                  parse(response.headers().firstValue("WWW-Authenticate").orElseThrow());
              try {
                JsonNode resource = get(challenge.get("resource_metadata"));
                String issuer = resource.path("authorization_servers").get(0).asText();
                JsonNode server = get(issuer + "/.well-known/oauth-authorization-server");
                String form =
                    "grant_type=client_credentials&scope="
                        + URLEncoder.encode(challenge.get("scope"), StandardCharsets.UTF_8)
                        + "&resource="
                        + URLEncoder.encode(
                            resource.path("resource").asText(), StandardCharsets.UTF_8);
                HttpResponse<String> issued =
                    HTTP.send(
                        HttpRequest.newBuilder(URI.create(server.path("token_endpoint").asText()))
                            .header(
                                "Authorization",
                                "Basic "
                                    + Base64.getEncoder()
                                        .encodeToString(
                                            (client + ":" + secret)
                                                .getBytes(StandardCharsets.UTF_8)))
                            .header("Content-Type", "application/x-www-form-urlencoded")
                            .POST(HttpRequest.BodyPublishers.ofString(form))
                            .build(),
                        HttpResponse.BodyHandlers.ofString());
                token.set(JSON.readTree(issued.body()).path("access_token").asText());
                fetched.incrementAndGet();
                return true;
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            }));
  }

  private McpSyncClient open(
      AtomicReference<String> token,
      String run,
      McpHttpClientTransportAuthorizationErrorHandler onRefused) {
    McpSyncClient client =
        McpHttpClients.open(
            url,
            transport ->
                transport
                    .httpRequestCustomizer(
                        (builder, method, endpoint, body, context) -> {
                          builder.setHeader("X-Agent-Run", run);
                          if (token.get() != null) {
                            builder.setHeader("Authorization", "Bearer " + token.get());
                          }
                        })
                    .authorizationErrorHandler(onRefused),
            Duration.ofSeconds(60),
            spec -> {});
    clients.add(client);
    return client;
  }
}
