package dev.effectledger.schema;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The fields of a raw (still encoded) query string or {@code application/x-www-form-urlencoded}
 * body: the one parser of every server this project runs (the processor's query API and console on
 * the JDK's server, the gateway's {@code GET /v1/calls/{key}} on Jetty), so a query means the same
 * everywhere. Hand-written: the JDK's {@link URLDecoder} does the decoding, and the JDK has no
 * parser of the pairs; Jetty's would tie the processor to Jetty for ten lines.
 */
public final class QueryString {

  private QueryString() {}

  /**
   * The fields in order, decoded; a name given twice keeps its <em>first</em> value (as a servlet's
   * {@code getParameter}), a name without {@code =} has the empty value, empty pairs are skipped.
   */
  public static Map<String, String> parse(String raw) {
    Map<String, String> out = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String pair : raw.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name =
          URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String value =
          eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      out.putIfAbsent(name, value);
    }
    return out;
  }
}
