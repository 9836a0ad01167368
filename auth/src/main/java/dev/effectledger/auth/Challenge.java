package dev.effectledger.auth;

import java.util.regex.Pattern;

/**
 * The {@code WWW-Authenticate} values a door answers with (RFC 6750 section 3, with RFC 9728's
 * {@code resource_metadata} so that an MCP client finds the authorization server).
 */
public final class Challenge {

  private static final Pattern UNQUOTABLE = Pattern.compile("[^\\x20-\\x7e]|[\"\\\\]");

  private Challenge() {}

  /**
   * 401: no token ({@code refused} null or {@link TokenRefused.Reason#MISSING}: no error code, as
   * RFC 6750 asks), or one refused ({@code invalid_token}, the reason as its description).
   *
   * @param resourceMetadata the URL of the protected-resource metadata; null to leave it out
   * @param scope the scopes a client should ask for (space-separated); null to leave it out
   */
  public static String unauthorized(String resourceMetadata, String scope, TokenRefused refused) {
    StringBuilder value = new StringBuilder("Bearer");
    String sep = " ";
    if (resourceMetadata != null) {
      value.append(sep).append("resource_metadata=\"").append(quoted(resourceMetadata)).append('"');
      sep = ", ";
    }
    if (scope != null) {
      value.append(sep).append("scope=\"").append(quoted(scope)).append('"');
      sep = ", ";
    }
    if (refused != null && refused.reason() != TokenRefused.Reason.MISSING) {
      value
          .append(sep)
          .append("error=\"invalid_token\", error_description=\"")
          .append(quoted(refused.reason() + ": " + refused.getMessage()))
          .append('"');
    }
    return value.toString();
  }

  /** 403: a token without {@code scope}, which this request needs. */
  public static String insufficientScope(String resourceMetadata, String scope, String what) {
    StringBuilder value = new StringBuilder("Bearer error=\"insufficient_scope\"");
    value.append(", scope=\"").append(quoted(scope)).append('"');
    if (resourceMetadata != null) {
      value.append(", resource_metadata=\"").append(quoted(resourceMetadata)).append('"');
    }
    value.append(", error_description=\"").append(quoted(what)).append('"');
    return value.toString();
  }

  private static String quoted(String text) {
    return UNQUOTABLE.matcher(text).replaceAll("'");
  }
}
