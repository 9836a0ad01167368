package dev.effectledger.auth;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * RFC 9728 protected-resource metadata: where an MCP client learns which authorization server
 * issues tokens for this resource and which scopes it knows.
 */
public final class ResourceMetadata {

  public static final String WELL_KNOWN = "/.well-known/oauth-protected-resource";
  private static final ObjectMapper JSON = new ObjectMapper();

  private ResourceMetadata() {}

  /**
   * Where the metadata of a resource served at {@code path} is (RFC 9728 section 3.1: the
   * well-known prefix inserted before the path), e.g. {@code
   * /.well-known/oauth-protected-resource/mcp} for {@code /mcp}.
   */
  public static String path(String path) {
    return path == null || path.isEmpty() || path.equals("/") ? WELL_KNOWN : WELL_KNOWN + path;
  }

  /** The metadata document for {@code settings}' audience (the resource) and issuer. */
  public static String json(AuthSettings settings, String name) {
    ObjectNode doc = JSON.createObjectNode();
    doc.put("resource", settings.audience());
    doc.putArray("authorization_servers").add(settings.issuer().toString());
    List.of(settings.readScope(), settings.writeScope())
        .forEach(doc.putArray("scopes_supported")::add);
    doc.putArray("bearer_methods_supported").add("header");
    doc.put("resource_name", name);
    return doc.toString();
  }
}
