package dev.effectledger.policy;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the durations operators write in tools.yaml: {@code 500ms}, {@code 30s}, {@code 15m},
 * {@code 24h}, {@code 7d}, or ISO-8601 ({@code PT15M}). Hand-written because it is five lines and
 * Jackson's {@code Duration} support reads only ISO-8601 and numbers, which operators misread.
 */
public final class Durations {

  private static final Pattern SHORT = Pattern.compile("(\\d{1,12})(ms|s|m|h|d)");

  private Durations() {}

  public static Optional<Duration> parse(String text) {
    Matcher m = SHORT.matcher(text.trim());
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return Optional.of(
          switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
          });
    }
    try {
      return Optional.of(Duration.parse(text.trim()));
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }

  /** The shortest of the file's own forms for {@code duration}: 3650d, 24h, 15m, 30s or 500ms. */
  public static String format(Duration duration) {
    long ms = duration.toMillis();
    if (ms % 86_400_000 == 0) {
      return ms / 86_400_000 + "d";
    }
    if (ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0) {
      return ms / 60_000 + "m";
    }
    return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }
}
