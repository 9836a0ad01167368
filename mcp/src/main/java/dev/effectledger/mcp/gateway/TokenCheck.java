package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.auth.AccessTokens;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.Caller;
import dev.effectledger.auth.Challenge;
import dev.effectledger.auth.ResourceMetadata;
import dev.effectledger.auth.TokenRefused;
import io.modelcontextprotocol.spec.HttpHeaders;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway as an OAuth 2.1 resource server (MCP authorization, 2025-11-25): every request to the
 * MCP endpoint carries an access token from the configured identity provider, issued for this
 * gateway (its {@code aud} names the gateway's URL) and in date; the caller's tenant is taken from
 * its claim. Without one: 401 with a {@code WWW-Authenticate} challenge naming the gateway's RFC
 * 9728 metadata, which names the authorization server, so that an MCP client can find where to get
 * a token. A token without the read scope is 403 for everything; one without the write scope is 403
 * for a call of a write tool ({@code insufficient_scope}, naming the scope, for a client to ask for
 * more). The agent's token stops here: upstreams are called with the gateway's own credentials
 * (their {@code headers} in mcp.yaml), never with it.
 */
final class TokenCheck implements Filter {

  /** The request attribute holding the checked {@link Caller}. */
  static final String CALLER = "dev.effectledger.caller";

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  static final int SESSIONS = 100_000;

  private final AccessTokens tokens;
  private final SessionOwners sessions = new SessionOwners();
  private final String metadataUrl;
  private final Predicate<String> writes;

  /**
   * @param writes whether a tool of that name writes (needs the write scope)
   */
  TokenCheck(AccessTokens tokens, Predicate<String> writes) {
    this.tokens = tokens;
    this.metadataUrl = metadataUrl(tokens.settings().audience());
    this.writes = writes;
  }

  /** Where the metadata of the resource {@code audience} is: RFC 9728's well-known URL. */
  static String metadataUrl(String audience) {
    URI resource = URI.create(audience);
    String origin = resource.getScheme() + "://" + resource.getRawAuthority();
    return origin + ResourceMetadata.path(resource.getRawPath());
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest http)
        || !(response instanceof HttpServletResponse out)) {
      chain.doFilter(request, response);
      return;
    }
    Caller caller;
    try {
      caller = tokens.check(http.getHeader("Authorization"));
    } catch (TokenRefused refused) {
      if (refused.reason() == TokenRefused.Reason.KEYS_UNAVAILABLE) {
        log.warn("Cannot check agents' tokens: {}", refused.getMessage());
        out.setHeader("Retry-After", "5");
        answer(
            out,
            503,
            "keys_unavailable",
            refused.getMessage() + "; the gateway cannot check tokens until it reads them");
        return;
      }
      log.debug("Refused a request: {} {}", refused.reason(), refused.getMessage());
      AuthSettings settings = tokens.settings();
      out.setHeader(
          "WWW-Authenticate",
          Challenge.unauthorized(
              metadataUrl, settings.readScope() + " " + settings.writeScope(), refused));
      answer(
          out,
          401,
          refused.reason() == TokenRefused.Reason.MISSING ? "unauthorized" : "invalid_token",
          refused.reason() + ": " + refused.getMessage());
      return;
    }
    AuthSettings settings = tokens.settings();
    boolean mayWrite = caller.hasScope(settings.writeScope());
    if (!mayWrite && !caller.hasScope(settings.readScope())) {
      forbidden(
          out,
          settings.readScope(),
          "the token has neither " + settings.readScope() + " nor " + settings.writeScope());
      return;
    }
    request.setAttribute(CALLER, caller);
    String session = http.getHeader(HttpHeaders.MCP_SESSION_ID);
    String owner = caller.tenant() + '\u0000' + caller.subject();
    if (session != null && !sessions.mayUse(session, owner)) {
      // as the SDK answers a session it does not know: another caller's is not this one's
      answer(out, 404, "session_not_found", "no such session for this caller");
      return;
    }
    if (mayWrite || !"POST".equals(http.getMethod())) {
      chain.doFilter(request, response);
      sessions.after(http, out, session, owner);
      return;
    }
    byte[] body = http.getInputStream().readAllBytes();
    String tool = writeCall(body);
    if (tool != null) {
      forbidden(
          out,
          settings.writeScope(),
          tool
              + " is a write tool: calling it needs "
              + settings.writeScope()
              + ". Nothing was done.");
      return;
    }
    chain.doFilter(new CallRefusals.Replayed(http, body), response);
    sessions.after(http, out, session, owner);
  }

  /**
   * Which caller opened each MCP session: a session is its opener's only (MCP security best
   * practices: bind a session to its user), so that a session id learnt by another caller is of no
   * use to it. The ids of the last {@value #SESSIONS} sessions opened are kept; an older one's is
   * forgotten, and then any caller with a token may use it, as without this check.
   */
  static final class SessionOwners {
    private final Map<String, String> owners =
        new LinkedHashMap<>(256, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > SESSIONS;
          }
        };

    synchronized boolean mayUse(String session, String caller) {
      String owner = owners.get(session);
      return owner == null || owner.equals(caller);
    }

    /** After the request: a session the response opened is the caller's; one ended is gone. */
    void after(
        HttpServletRequest request, HttpServletResponse response, String session, String caller) {
      synchronized (this) {
        if (session == null) {
          String opened = response.getHeader(HttpHeaders.MCP_SESSION_ID);
          if (opened != null) {
            owners.put(opened, caller);
          }
        } else if ("DELETE".equals(request.getMethod())) {
          owners.remove(session);
        }
      }
    }
  }

  /** The name of the first write tool {@code body} calls (a request, or a batch), else null. */
  private String writeCall(byte[] body) {
    JsonNode parsed;
    try {
      parsed = JSON.readTree(body);
    } catch (IOException notJson) {
      return null; // the SDK's server answers it
    }
    if (parsed == null) {
      return null;
    }
    for (JsonNode message : parsed.isArray() ? parsed : java.util.List.of(parsed)) {
      if ("tools/call".equals(message.path("method").asText())) {
        String tool = message.path("params").path("name").asText();
        if (writes.test(tool)) {
          return tool;
        }
      }
    }
    return null;
  }

  private void forbidden(HttpServletResponse out, String scope, String why) throws IOException {
    out.setHeader("WWW-Authenticate", Challenge.insufficientScope(metadataUrl, scope, why));
    answer(out, 403, "insufficient_scope", why);
  }

  private static void answer(HttpServletResponse out, int status, String error, String description)
      throws IOException {
    ObjectNode body =
        JSON.createObjectNode().put("error", error).put("error_description", description);
    out.setStatus(status);
    out.setContentType("application/json");
    out.getOutputStream().write(body.toString().getBytes(StandardCharsets.UTF_8));
  }

  /** Serves the RFC 9728 metadata document. */
  static HttpServlet metadata(AuthSettings settings) {
    String document = ResourceMetadata.json(settings, "Effect Ledger MCP gateway");
    return new HttpServlet() {
      @Override
      protected void doGet(
          jakarta.servlet.http.HttpServletRequest request, HttpServletResponse response)
          throws IOException {
        response.setStatus(200);
        response.setContentType("application/json");
        response.setHeader("Cache-Control", "max-age=3600");
        response.getOutputStream().write(document.getBytes(StandardCharsets.UTF_8));
      }
    };
  }
}
