package dev.effectledger.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Who may call, and as which tenant: bearer tokens mapped to tenants, stored as the SHA-256 of the
 * token (never the token). The tenant of every intent comes from here, never from a request body.
 *
 * <p>Configured as {@code gateway.credentials.<name>.sha256} (hex SHA-256 of the token, e.g. {@code
 * printf %s "$TOKEN" | sha256sum}), {@code gateway.credentials.<name>.tenant} and, optionally,
 * {@code gateway.credentials.<name>.tools} (comma-separated; a call of another tool is 403).
 */
public final class Credentials {

  /** A caller the gateway knows. An empty {@code tools} allows every tool. */
  public record Caller(String name, String tenant, Set<String> tools) {
    public Caller {
      tools = Set.copyOf(tools);
    }

    public boolean mayCall(String tool) {
      return tools.isEmpty() || tools.contains(tool);
    }
  }

  static final String PREFIX = "gateway.credentials.";
  private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
  private static final Pattern BEARER = Pattern.compile("(?i)Bearer +([\\x21-\\x7e]{1,4096}) *");

  private final Map<String, Caller> bySha256;

  private Credentials(Map<String, Caller> bySha256) {
    this.bySha256 = Map.copyOf(bySha256);
  }

  public static Credentials of(Map<String, Caller> bySha256Hex) {
    return new Credentials(bySha256Hex);
  }

  /**
   * @throws IllegalArgumentException naming the setting when one is missing or malformed
   */
  public static Credentials fromProperties(Properties settings) {
    Set<String> names = new TreeSet<>();
    for (String key : settings.stringPropertyNames()) {
      if (key.startsWith(PREFIX)) {
        String rest = key.substring(PREFIX.length());
        int dot = rest.lastIndexOf('.');
        if (dot <= 0) {
          throw new IllegalArgumentException(
              key + ": use " + PREFIX + "<name>.sha256, .tenant and .tools");
        }
        names.add(rest.substring(0, dot));
      }
    }
    Map<String, Caller> callers = new HashMap<>();
    for (String name : names) {
      String hash = required(settings, name, "sha256").toLowerCase();
      if (!HEX.matcher(hash).matches()) {
        throw new IllegalArgumentException(
            PREFIX + name + ".sha256 must be 64 hex digits (the SHA-256 of the token)");
      }
      String tenant = required(settings, name, "tenant");
      String tools = settings.getProperty(PREFIX + name + ".tools", "").trim();
      Set<String> allowed = new TreeSet<>();
      if (!tools.isEmpty()) {
        Arrays.stream(tools.split(","))
            .map(String::trim)
            .filter(t -> !t.isEmpty())
            .forEach(allowed::add);
      }
      for (String key : settings.stringPropertyNames()) {
        if (key.startsWith(PREFIX + name + ".")
            && !Set.of("sha256", "tenant", "tools")
                .contains(key.substring((PREFIX + name + ".").length()))) {
          throw new IllegalArgumentException(key + ": unknown setting (sha256, tenant, tools)");
        }
      }
      if (callers.put(hash, new Caller(name, tenant, allowed)) != null) {
        throw new IllegalArgumentException(
            PREFIX + name + ".sha256: two credentials have the same token");
      }
    }
    return new Credentials(callers);
  }

  private static String required(Properties settings, String name, String field) {
    String value = settings.getProperty(PREFIX + name + "." + field, "").trim();
    if (value.isEmpty()) {
      throw new IllegalArgumentException(PREFIX + name + "." + field + " is required");
    }
    return value;
  }

  public boolean isEmpty() {
    return bySha256.isEmpty();
  }

  /** The caller an {@code Authorization: Bearer <token>} header names; empty when none. */
  public Optional<Caller> authenticate(String authorization) {
    return bearerToken(authorization).map(t -> bySha256.get(sha256Hex(t)));
  }

  /** The token of an {@code Authorization: Bearer <token>} header; empty for anything else. */
  public static Optional<String> bearerToken(String authorization) {
    if (authorization == null) {
      return Optional.empty();
    }
    var m = BEARER.matcher(authorization);
    return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  public static String sha256Hex(String token) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }
}
