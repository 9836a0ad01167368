package dev.effectledger.embedded;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The counters of {@link CountingDownstream}: requests and effects per key, and effects by a field
 * of the request's body when {@link #countBy} is set.
 */
final class EffectCounts {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> effectsByField = new ConcurrentHashMap<>();
  private volatile JsonPointer countBy;

  /** Also counts effects by the text at {@code pointer} (RFC 6901) of each body. */
  void countBy(String pointer) {
    this.countBy = JsonPointer.compile(pointer);
  }

  /** Counts a request for {@code key}; returns how many it has had, this one included. */
  int request(String key) {
    return requests.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
  }

  /** Counts an effect for {@code key}, and by field of {@code body} when counting by one. */
  void effect(String key, String body) {
    effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    JsonPointer by = countBy;
    if (by != null) {
      effectsByField.computeIfAbsent(fieldOf(body, by), k -> new AtomicInteger()).incrementAndGet();
    }
  }

  int effects(String key) {
    AtomicInteger n = effects.get(key);
    return n == null ? 0 : n.get();
  }

  int requests(String key) {
    AtomicInteger n = requests.get(key);
    return n == null ? 0 : n.get();
  }

  int effectsBy(String value) {
    AtomicInteger n = effectsByField.get(value);
    return n == null ? 0 : n.get();
  }

  Map<String, Integer> effectsByKey() {
    return copy(effects);
  }

  Map<String, Integer> effectsByField() {
    return copy(effectsByField);
  }

  int total() {
    return effects.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  private static Map<String, Integer> copy(Map<String, AtomicInteger> counts) {
    Map<String, Integer> copy = new ConcurrentHashMap<>();
    counts.forEach((k, v) -> copy.put(k, v.get()));
    return copy;
  }

  /** The text at {@code pointer} of {@code body}; "" when missing, null or not JSON. */
  static String fieldOf(String body, JsonPointer pointer) {
    try {
      JsonNode value = JSON.readTree(body).at(pointer);
      return value.isMissingNode() || value.isNull() ? "" : value.asText();
    } catch (IOException e) {
      return "";
    }
  }
}
