package dev.effectledger.schema.serde;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Chooses a {@link SchemaRegistry} implementation from a URL. */
public final class SchemaRegistries {

  private static final String MOCK_SCHEME = "mock://";
  private static final Map<String, InMemorySchemaRegistry> MOCK_SCOPES = new ConcurrentHashMap<>();

  private SchemaRegistries() {}

  /**
   * Returns the registry for {@code url}: {@code mock://<scope>} gives the in-memory registry of
   * that scope (one per scope per JVM, shared by every serde that names it); {@code http://} and
   * {@code https://} give a REST client.
   *
   * @throws IllegalArgumentException for any other URL, naming what is accepted
   */
  public static SchemaRegistry forUrl(String url) {
    return forUrl(url, Map.of());
  }

  /**
   * {@link #forUrl(String)}, with the REST client authenticating as {@code settings} say ({@link
   * RegistryAuth}: {@code basic.auth.user.info}, {@code bearer.auth.token}, ...; any other entries
   * are ignored, so a component's whole Kafka configuration can be passed).
   *
   * @throws IllegalArgumentException for a URL or credentials settings that are wrong
   */
  public static SchemaRegistry forUrl(String url, Map<?, ?> settings) {
    if (url == null || url.isBlank()) {
      throw new IllegalArgumentException(
          "schema.registry.url is not set: give http(s)://host:port or mock://<scope>");
    }
    if (url.startsWith(MOCK_SCHEME)) {
      String scope = url.substring(MOCK_SCHEME.length());
      return MOCK_SCOPES.computeIfAbsent(scope, s -> new InMemorySchemaRegistry());
    }
    if (url.startsWith("http://") || url.startsWith("https://")) {
      URI uri = URI.create(url);
      return new HttpSchemaRegistry(uri, Duration.ofSeconds(10), RegistryAuth.of(uri, settings));
    }
    throw new IllegalArgumentException(
        "schema.registry.url '"
            + url
            + "' is not supported: give http(s)://host:port or mock://<scope>");
  }
}
