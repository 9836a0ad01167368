package dev.effectledger.idp;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.oauth2.core.AuthorizationGrantType;
import org.springframework.security.oauth2.core.ClientAuthenticationMethod;
import org.springframework.security.oauth2.core.endpoint.OAuth2AuthorizationRequest;
import org.springframework.security.oauth2.server.authorization.OAuth2TokenType;
import org.springframework.security.oauth2.server.authorization.authentication.OAuth2AuthorizationGrantAuthenticationToken;
import org.springframework.security.oauth2.server.authorization.client.InMemoryRegisteredClientRepository;
import org.springframework.security.oauth2.server.authorization.client.RegisteredClient;
import org.springframework.security.oauth2.server.authorization.client.RegisteredClientRepository;
import org.springframework.security.oauth2.server.authorization.settings.ClientSettings;
import org.springframework.security.oauth2.server.authorization.settings.TokenSettings;
import org.springframework.security.oauth2.server.authorization.token.JwtEncodingContext;
import org.springframework.security.oauth2.server.authorization.token.OAuth2TokenCustomizer;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;

/**
 * The tests' identity provider: Spring Authorization Server with Spring Boot's defaults (its
 * endpoints, RFC 8414 and OpenID metadata, a fresh RSA key published at {@code /oauth2/jwks}, form
 * login), on 127.0.0.1 and a free port, which it prints as {@code IDP http://127.0.0.1:<port>} once
 * it listens. Its issuer is that URL.
 *
 * <p>Access tokens are JWTs carrying {@code tenant} (the client's, or the signed-in user's), {@code
 * roles} and {@code client_id}; their {@code aud} is the RFC 8707 {@code resource} the client asked
 * for (Spring Authorization Server does not read it; this provider takes any, as a permissive
 * provider would), else the client's id, as Spring's default.
 *
 * <p>Clients: {@code acme-agent}/{@code acme-secret} (client credentials, read and write, tenant
 * acme), {@code acme-reader}/{@code reader-secret} (read only), {@code globex-agent}/{@code
 * globex-secret} (tenant globex), {@code acme-brief}/{@code brief-secret} (tokens live 2 s), {@code
 * mcp-agent} (public, authorization code with PKCE, any loopback redirect port, no consent page)
 * and {@code console} (public, the same, roles of the user; also to {@code
 * /console/signin/callback}), {@code console-brief} (the same, tokens live 5 s). Users: {@code
 * alice}/{@code alice-password} (tenant acme, role operator), {@code bob}/{@code bob-password}
 * (tenant globex, role viewer).
 */
@SpringBootApplication
public class IdentityProvider {

  static final Map<String, String> USER_TENANTS = Map.of("alice", "acme", "bob", "globex");
  static final Map<String, List<String>> USER_ROLES =
      Map.of("alice", List.of("operator"), "bob", List.of("viewer"));

  public static void main(String[] args) {
    SpringApplication.run(IdentityProvider.class, args);
  }

  @Bean
  ApplicationListener<WebServerInitializedEvent> announce() {
    return event -> {
      System.out.println("IDP http://127.0.0.1:" + event.getWebServer().getPort());
      System.out.flush();
    };
  }

  @Bean
  UserDetailsService users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("alice").password("{noop}alice-password").roles("USER").build(),
        User.withUsername("bob").password("{noop}bob-password").roles("USER").build());
  }

  @Bean
  RegisteredClientRepository clients() {
    return new InMemoryRegisteredClientRepository(
        machine(
            "acme-agent",
            "acme-secret",
            "acme",
            Duration.ofMinutes(5),
            "tools:read",
            "tools:write"),
        machine("acme-reader", "reader-secret", "acme", Duration.ofMinutes(5), "tools:read"),
        machine(
            "globex-agent",
            "globex-secret",
            "globex",
            Duration.ofMinutes(5),
            "tools:read",
            "tools:write"),
        machine(
            "acme-brief",
            "brief-secret",
            "acme",
            Duration.ofSeconds(2),
            "tools:read",
            "tools:write"),
        browser("mcp-agent", Duration.ofMinutes(5)),
        browser("console", Duration.ofMinutes(5)),
        browser("console-brief", Duration.ofSeconds(5)));
  }

  private static RegisteredClient machine(
      String id, String secret, String tenant, Duration lifetime, String... scopes) {
    RegisteredClient.Builder client =
        RegisteredClient.withId(UUID.randomUUID().toString())
            .clientId(id)
            .clientSecret("{noop}" + secret)
            .clientAuthenticationMethod(ClientAuthenticationMethod.CLIENT_SECRET_BASIC)
            .clientAuthenticationMethod(ClientAuthenticationMethod.CLIENT_SECRET_POST)
            .authorizationGrantType(AuthorizationGrantType.CLIENT_CREDENTIALS)
            .clientSettings(ClientSettings.builder().setting("tenant", tenant).build())
            .tokenSettings(TokenSettings.builder().accessTokenTimeToLive(lifetime).build());
    for (String scope : scopes) {
      client.scope(scope);
    }
    return client.build();
  }

  private static RegisteredClient browser(String id, Duration lifetime) {
    return RegisteredClient.withId(UUID.randomUUID().toString())
        .clientId(id)
        .clientAuthenticationMethod(ClientAuthenticationMethod.NONE)
        .authorizationGrantType(AuthorizationGrantType.AUTHORIZATION_CODE)
        .authorizationGrantType(AuthorizationGrantType.REFRESH_TOKEN)
        // any port: Spring takes the requested port for a loopback redirect (RFC 8252 7.3)
        .redirectUri("http://127.0.0.1/callback")
        .redirectUri("http://127.0.0.1/console/signin/callback") // the console's sign-in
        .scope("tools:read")
        .scope("tools:write")
        .clientSettings(
            ClientSettings.builder()
                .requireProofKey(true)
                .requireAuthorizationConsent(false)
                .build())
        .tokenSettings(TokenSettings.builder().accessTokenTimeToLive(lifetime).build())
        .build();
  }

  @Bean
  OAuth2TokenCustomizer<JwtEncodingContext> claims() {
    return context -> {
      if (!OAuth2TokenType.ACCESS_TOKEN.equals(context.getTokenType())) {
        return;
      }
      RegisteredClient client = context.getRegisteredClient();
      String resource = resource(context);
      if (resource != null) {
        context.getClaims().audience(List.of(resource));
      }
      context.getClaims().claim("client_id", client.getClientId());
      if (AuthorizationGrantType.CLIENT_CREDENTIALS.equals(context.getAuthorizationGrantType())) {
        String tenant = client.getClientSettings().getSetting("tenant");
        if (tenant != null) {
          context.getClaims().claim("tenant", tenant);
        }
      } else {
        String user = context.getPrincipal().getName();
        if (USER_TENANTS.containsKey(user)) {
          context.getClaims().claim("tenant", USER_TENANTS.get(user));
          context.getClaims().claim("roles", USER_ROLES.get(user));
        }
      }
    };
  }

  /** The RFC 8707 resource the token request, or the authorization request before it, named. */
  private static String resource(JwtEncodingContext context) {
    if (context.getAuthorizationGrant()
        instanceof OAuth2AuthorizationGrantAuthenticationToken grant) {
      String named = first(grant.getAdditionalParameters().get("resource"));
      if (named != null) {
        return named;
      }
    }
    if (context.getAuthorization() != null) {
      OAuth2AuthorizationRequest request =
          context.getAuthorization().getAttribute(OAuth2AuthorizationRequest.class.getName());
      if (request != null) {
        return first(request.getAdditionalParameters().get("resource"));
      }
    }
    return null;
  }

  private static String first(Object value) {
    if (value instanceof String s) {
      return s;
    }
    if (value instanceof String[] many && many.length > 0) {
      return many[0];
    }
    return null;
  }
}
