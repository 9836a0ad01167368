package dev.effectledger.topology.internal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Where the ledger sent an intent on tool-intents while looking for its step under the keys a
 * change of key rules gave it (see {@code IntentProcessor#routed}): header {@value #HEADER}, the
 * record keyed by the key whose task is to look. {@code decide}: to the task owning the key under
 * the newest rules; {@code probe:<k2>,<k3>}: to the task owning the record's key, then those
 * listed; {@code probed}: back to the decider, no other task had an entry.
 */
record AliasRoute(Kind kind, List<String> rest) {

  static final String HEADER = "effectledger.alias.route";

  enum Kind {
    DECIDE,
    PROBE,
    PROBED
  }

  static AliasRoute decide() {
    return new AliasRoute(Kind.DECIDE, List.of());
  }

  static AliasRoute probe(List<String> rest) {
    return new AliasRoute(Kind.PROBE, List.copyOf(rest));
  }

  static AliasRoute probed() {
    return new AliasRoute(Kind.PROBED, List.of());
  }

  /** The route a record's headers name, or null for an intent as its client sent it. */
  static AliasRoute of(Headers headers) {
    Header header = headers.lastHeader(HEADER);
    if (header == null) {
      return null;
    }
    String value = new String(header.value(), StandardCharsets.UTF_8);
    if (value.equals("decide")) {
      return decide();
    }
    if (value.equals("probed")) {
      return probed();
    }
    if (value.startsWith("probe:")) {
      String rest = value.substring("probe:".length());
      return probe(rest.isEmpty() ? List.of() : Arrays.asList(rest.split(",")));
    }
    return decide(); // unknown: the decider's task checks the record key
  }

  byte[] header() {
    String value =
        switch (kind) {
          case DECIDE -> "decide";
          case PROBED -> "probed";
          case PROBE -> "probe:" + String.join(",", rest);
        };
    return value.getBytes(StandardCharsets.UTF_8);
  }
}
