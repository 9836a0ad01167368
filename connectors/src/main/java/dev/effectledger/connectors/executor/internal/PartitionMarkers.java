package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.executor.internal.JournalFormat.Marker;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The committed markers and fences of one dispatch partition, by key and by offset (for
 * tombstones), and the start markers a fence of their life preceded in the partition.
 */
final class PartitionMarkers {
  final Map<String, Marker> byKey = new HashMap<>();
  final TreeMap<Long, Set<String>> byOffset = new TreeMap<>();
  final Set<String> beaten = new HashSet<>();

  void put(String key, Marker marker) {
    remove(key);
    byKey.put(key, marker);
    if (marker.offset() >= 0) {
      byOffset.computeIfAbsent(marker.offset(), o -> new HashSet<>()).add(key);
    }
  }

  void remove(String key) {
    Marker old = byKey.remove(key);
    beaten.remove(key);
    if (old != null) {
      Set<String> keys = byOffset.get(old.offset());
      if (keys != null && keys.remove(key) && keys.isEmpty()) {
        byOffset.remove(old.offset());
      }
    }
  }
}
