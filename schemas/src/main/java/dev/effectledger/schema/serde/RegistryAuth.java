package dev.effectledger.schema.serde;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;

/**
 * How the REST client authenticates to a Schema Registry, from the settings managed registries
 * document (the names Confluent's serializers use, so an existing configuration carries over):
 *
 * <ul>
 *   <li>{@code basic.auth.credentials.source=USER_INFO} with {@code
 *       basic.auth.user.info=<key>:<secret>}: HTTP Basic;
 *   <li>{@code basic.auth.credentials.source=URL}: HTTP Basic from the user info of {@code
 *       schema.registry.url} ({@code https://<key>:<secret>@host}, percent-encoded);
 *   <li>{@code bearer.auth.credentials.source=STATIC_TOKEN} with {@code bearer.auth.token}: a
 *       bearer token.
 * </ul>
 *
 * Without a source, {@code basic.auth.user.info}, a token, or user info in the URL each select
 * their kind. Two kinds at once, or a source this client does not know, is a configuration error
 * named at startup. Credentials never appear in messages.
 */
public final class RegistryAuth {

  public static final String BASIC_SOURCE = "basic.auth.credentials.source";
  public static final String BASIC_USER_INFO = "basic.auth.user.info";
  public static final String BEARER_SOURCE = "bearer.auth.credentials.source";
  public static final String BEARER_TOKEN = "bearer.auth.token";

  static final RegistryAuth NONE = new RegistryAuth(null, "none");

  private final String header;
  private final String kind;

  private RegistryAuth(String header, String kind) {
    this.header = header;
    this.kind = kind;
  }

  /** The value of the {@code Authorization} header, if any. */
  public Optional<String> header() {
    return Optional.ofNullable(header);
  }

  /** "none", "basic" or "bearer", for messages. */
  public String kind() {
    return kind;
  }

  /**
   * @throws IllegalArgumentException naming the setting that is wrong
   */
  public static RegistryAuth of(URI url, Map<?, ?> settings) {
    String basicSource = text(settings, BASIC_SOURCE);
    String userInfo = text(settings, BASIC_USER_INFO);
    String bearerSource = text(settings, BEARER_SOURCE);
    String token = text(settings, BEARER_TOKEN);
    String inUrl = url.getRawUserInfo();

    String basic = null;
    if (basicSource == null) {
      basic = userInfo != null ? userInfo : inUrl == null ? null : decode(inUrl);
    } else if (basicSource.equals("USER_INFO")) {
      if (userInfo == null) {
        throw new IllegalArgumentException(
            BASIC_SOURCE + "=USER_INFO needs " + BASIC_USER_INFO + "=<key>:<secret>");
      }
      basic = userInfo;
    } else if (basicSource.equals("URL")) {
      if (inUrl == null) {
        throw new IllegalArgumentException(
            BASIC_SOURCE
                + "=URL needs the credentials in schema.registry.url (https://key:secret@host)");
      }
      basic = decode(inUrl);
    } else {
      throw new IllegalArgumentException(
          BASIC_SOURCE + "=" + basicSource + " is not supported: give USER_INFO or URL");
    }
    String bearer = null;
    if (bearerSource != null && !bearerSource.equals("STATIC_TOKEN")) {
      throw new IllegalArgumentException(
          BEARER_SOURCE + "=" + bearerSource + " is not supported: give STATIC_TOKEN");
    }
    if (bearerSource != null || token != null) {
      if (token == null) {
        throw new IllegalArgumentException(BEARER_SOURCE + "=STATIC_TOKEN needs " + BEARER_TOKEN);
      }
      bearer = token;
    }
    if (basic != null && bearer != null) {
      throw new IllegalArgumentException(
          "the Schema Registry credentials are both basic ("
              + BASIC_USER_INFO
              + " or the URL) and a bearer token ("
              + BEARER_TOKEN
              + "): give one");
    }
    if (basic != null) {
      if (!basic.contains(":")) {
        throw new IllegalArgumentException(
            "the Schema Registry's basic credentials must be <key>:<secret>");
      }
      return new RegistryAuth(
          "Basic " + Base64.getEncoder().encodeToString(basic.getBytes(StandardCharsets.UTF_8)),
          "basic");
    }
    return bearer == null ? NONE : new RegistryAuth("Bearer " + bearer, "bearer");
  }

  /** {@code url} without its user info, for requests and messages. */
  public static URI withoutCredentials(URI url) {
    if (url.getRawUserInfo() == null) {
      return url;
    }
    String s = url.toString();
    int at = s.indexOf('@', s.indexOf("://") + 3);
    return URI.create(s.substring(0, s.indexOf("://") + 3) + s.substring(at + 1));
  }

  private static String decode(String userInfo) {
    return URLDecoder.decode(userInfo.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static String text(Map<?, ?> settings, String name) {
    Object value = settings.get(name);
    if (value == null) {
      return null;
    }
    String s = value.toString().trim();
    return s.isEmpty() ? null : s;
  }
}
