package dev.effectledger.embedded;

import dev.effectledger.embedded.CountingDownstream.Fault;
import java.util.EnumMap;
import java.util.Map;

/**
 * A seeded fault mix of {@link CountingDownstream}: which fault, if any, a key meets on its first
 * request. Keys are chosen by a hash of the key and the seed, so the same keys every run.
 */
record FaultPlan(long seed, Map<Fault, Integer> shares) {

  /** No key meets a planned fault. */
  static final FaultPlan NONE = new FaultPlan(0, Map.of());

  FaultPlan {
    int total = shares.values().stream().mapToInt(Integer::intValue).sum();
    if (total > 100 || shares.values().stream().anyMatch(p -> p < 0)) {
      throw new IllegalArgumentException(
          "fault shares must be 0-100% and add up to at most 100%, were " + shares);
    }
    shares = Map.copyOf(shares);
  }

  /**
   * {@code percent} of keys spread evenly over the faults that matter for exactly-once: 503 before
   * the effect, or the answer held, dropped or a 500 after it.
   */
  static FaultPlan evenly(long seed, int percent) {
    Fault[] faults = {
      Fault.UNAVAILABLE_BEFORE_EFFECT,
      Fault.HANG_AFTER_EFFECT,
      Fault.DROP_AFTER_EFFECT,
      Fault.ERROR_AFTER_EFFECT
    };
    Map<Fault, Integer> mix = new EnumMap<>(Fault.class);
    for (int i = 0; i < faults.length; i++) {
      mix.put(faults[i], percent / faults.length + (i < percent % faults.length ? 1 : 0));
    }
    return new FaultPlan(seed, mix);
  }

  /** The fault {@code key} meets on its first request; null for none. */
  Fault faultOf(String key) {
    if (shares.isEmpty()) {
      return null;
    }
    long h = (key.hashCode() * 0x9E3779B97F4A7C15L) ^ seed;
    h ^= h >>> 29;
    h *= 0xBF58476D1CE4E5B9L;
    h ^= h >>> 32;
    int draw = (int) Math.floorMod(h, 100);
    for (Fault fault : Fault.values()) {
      draw -= shares.getOrDefault(fault, 0);
      if (draw < 0) {
        return fault;
      }
    }
    return null;
  }
}
