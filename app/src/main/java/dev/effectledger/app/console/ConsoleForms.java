package dev.effectledger.app.console;

import com.sun.net.httpserver.HttpExchange;
import dev.effectledger.policy.Durations;
import dev.effectledger.schema.QueryString;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * What the console reads from a request and writes into its links: form posts and query strings
 * ({@code application/x-www-form-urlencoded}, the first value of a name kept), the link to a key's
 * page, and the expiry an approval form gives.
 */
final class ConsoleForms {

  /** Most bytes of a form post read. */
  static final int MAX_FORM = 64 * 1024;

  private ConsoleForms() {}

  /** A form post's fields (application/x-www-form-urlencoded), at most 64 KiB of them. */
  static Map<String, String> form(HttpExchange exchange) throws IOException {
    byte[] body = exchange.getRequestBody().readNBytes(MAX_FORM);
    return QueryString.parse(new String(body, StandardCharsets.UTF_8));
  }

  /** The console's page of {@code tenant}'s {@code key}. */
  static String keyHref(String tenant, String key) {
    return "/console/keys?tenant=" + enc(tenant) + "&key=" + enc(key);
  }

  /**
   * How long an approval stays valid, from the form's {@code expires} text (e.g. {@code 15m}):
   * empty unless it is a duration above zero and at most {@link ConsoleActions#MAX_APPROVAL}.
   */
  static Optional<Duration> approvalValidity(String expires) {
    Optional<Duration> valid = Durations.parse(expires.trim());
    if (valid.isEmpty()
        || valid.get().isNegative()
        || valid.get().isZero()
        || valid.get().compareTo(ConsoleActions.MAX_APPROVAL) > 0) {
      return Optional.empty();
    }
    return valid;
  }

  static String enc(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }
}
