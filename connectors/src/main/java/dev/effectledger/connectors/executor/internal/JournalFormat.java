package dev.effectledger.connectors.executor.internal;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The attempt journal's record format below its public keys ({@link AttemptJournal#marker}, {@link
 * AttemptJournal#fenceKey}): a marker's or fence's value ({@code started <offset> <owner>}, {@code
 * answered <offset> effect|none}, {@code fenced <offset> <by>}) written and read back, the life a
 * start marker belongs to, and the producer record of a marker. See {@link AttemptJournal} for what
 * the records mean.
 */
final class JournalFormat {

  static final long UNKNOWN_OFFSET = -1;

  static final String FENCE_SUFFIX = "!fence";
  static final String FENCED = "fenced";

  private JournalFormat() {}

  /**
   * A live marker: the highest offset it covers, and whether that dispatch's outcome is committed;
   * or a fence of a life ({@code fence}), whose offset is the last dispatch offset of that life.
   */
  record Marker(long offset, boolean answered, boolean noEffect, boolean fence) {

    Marker(long offset, boolean answered, boolean noEffect) {
      this(offset, answered, noEffect, false);
    }

    String value(String owner) {
      if (fence) {
        return FENCED + " " + offset + " " + owner;
      }
      return answered
          ? "answered " + offset + (noEffect ? " none" : " effect")
          : "started " + offset + " " + owner;
    }
  }

  /**
   * The fence key of the life a start marker {@code marker} belongs to, or null for a marker that
   * names no life (written for a dispatch of a ledger before lives were named; no fence covers it).
   */
  static String fenceOfMarker(String marker) {
    int hash = marker.lastIndexOf('#');
    int at = marker.indexOf('@', hash + 1);
    if (hash < 0 || at < 0) {
      return null;
    }
    try {
      return AttemptJournal.fenceKey(
          marker.substring(0, hash), Long.parseLong(marker.substring(at + 1)));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * True when {@code marker} is a start marker (any attempt) of the life {@code fenceKey} fences.
   */
  static boolean ofLife(String marker, String effectKey, long incarnation) {
    int hash = marker.lastIndexOf('#');
    if (hash < 0 || !marker.substring(0, hash).equals(effectKey)) {
      return false;
    }
    int at = marker.indexOf('@', hash + 1);
    if (at < 0) {
      return true; // a marker naming no life: it may be this one's, read the safe way
    }
    return marker.substring(at + 1).equals(Long.toString(incarnation));
  }

  static Marker parse(String value) {
    String[] parts = value.split(" ", 3);
    try {
      if (parts.length >= 2 && parts[0].equals("started")) {
        return new Marker(Long.parseLong(parts[1]), false, false);
      }
      if (parts.length >= 2 && parts[0].equals(FENCED)) {
        return new Marker(Long.parseLong(parts[1]), false, false, true);
      }
      if (parts.length == 3 && parts[0].equals("answered")) {
        return new Marker(Long.parseLong(parts[1]), true, parts[2].equals("none"));
      }
    } catch (NumberFormatException e) {
      // unreadable: read as started at an unknown offset, the safe reading
    }
    return new Marker(UNKNOWN_OFFSET, false, false);
  }

  static ProducerRecord<byte[], byte[]> record(
      TopicPartition dispatch, String key, Optional<Marker> marker, String owner) {
    TopicPartition journal = AttemptJournal.journalPartition(dispatch);
    return new ProducerRecord<>(
        journal.topic(),
        journal.partition(),
        key.getBytes(StandardCharsets.UTF_8),
        marker.map(m -> m.value(owner).getBytes(StandardCharsets.UTF_8)).orElse(null));
  }
}
