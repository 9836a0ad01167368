package dev.effectledger.gateway;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The two request headers with a syntax of their own: {@code Idempotency-Key} (the IETF httpapi
 * draft: a Structured Field string, {@code "..."}; a bare token, as Stripe's clients send it, is
 * accepted too) and {@code Prefer} (RFC 7240; only {@code wait} is read).
 */
final class HeaderSyntax {

  /** The longest key accepted; the ledger stores it with every entry. */
  static final int MAX_KEY_LENGTH = 255;

  private static final Pattern TOKEN =
      Pattern.compile("[A-Za-z0-9._:~+/=-]{1," + MAX_KEY_LENGTH + "}");
  private static final Pattern WAIT =
      Pattern.compile("(?i)^\\s*wait\\s*=\\s*\"?([0-9]{1,9})\"?\\s*$");

  private HeaderSyntax() {}

  /** Thrown for a header that does not follow its syntax; the message says what is wrong. */
  static final class Invalid extends RuntimeException {
    Invalid(String message) {
      super(message);
    }
  }

  /**
   * The key in the {@code Idempotency-Key} header values; empty when there is none.
   *
   * @throws Invalid when there is more than one, or it is not a string of 1 to 255 printable ASCII
   *     characters
   */
  static Optional<String> idempotencyKey(List<String> values) {
    if (values.isEmpty()) {
      return Optional.empty();
    }
    if (values.size() > 1) {
      throw new Invalid("send one Idempotency-Key header, not " + values.size());
    }
    String value = values.get(0).strip();
    String key;
    if (value.startsWith("\"")) {
      key = sfString(value);
    } else if (TOKEN.matcher(value).matches()) {
      key = value;
    } else {
      throw new Invalid(
          "Idempotency-Key must be a quoted string (\"...\", RFC 8941) or a token of letters, digits"
              + " and ._:~+/=-");
    }
    if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
      throw new Invalid("Idempotency-Key must be 1 to " + MAX_KEY_LENGTH + " characters");
    }
    return Optional.of(key);
  }

  private static String sfString(String value) {
    StringBuilder out = new StringBuilder();
    int i = 1;
    while (i < value.length()) {
      char c = value.charAt(i);
      if (c == '\\') {
        if (i + 1 >= value.length()
            || (value.charAt(i + 1) != '"' && value.charAt(i + 1) != '\\')) {
          throw new Invalid("Idempotency-Key: only \\\" and \\\\ may be escaped");
        }
        out.append(value.charAt(i + 1));
        i += 2;
      } else if (c == '"') {
        if (i != value.length() - 1) {
          throw new Invalid("Idempotency-Key: text after the closing quote");
        }
        return out.toString();
      } else if (c < 0x20 || c > 0x7e) {
        throw new Invalid("Idempotency-Key: only printable ASCII characters are allowed");
      } else {
        out.append(c);
        i++;
      }
    }
    throw new Invalid("Idempotency-Key: the closing quote is missing");
  }

  /**
   * The {@code wait} preference of the {@code Prefer} header values, in seconds; empty when none is
   * given. A preference that cannot be read is ignored, as RFC 7240 asks.
   */
  static Optional<Duration> preferredWait(List<String> values) {
    for (String header : values) {
      for (String preference : header.split(",")) {
        String head = preference.split(";", 2)[0];
        Matcher m = WAIT.matcher(head);
        if (m.matches()) {
          return Optional.of(Duration.ofSeconds(Long.parseLong(m.group(1))));
        }
      }
    }
    return Optional.empty();
  }

  /**
   * How long a call waits for its answer: the {@code Prefer: wait} of {@code prefer}, else {@code
   * byDefault}, at most {@code max}.
   */
  static Duration wait(List<String> prefer, Duration byDefault, Duration max) {
    Duration asked = preferredWait(prefer).orElse(byDefault);
    return asked.compareTo(max) > 0 ? max : asked;
  }
}
