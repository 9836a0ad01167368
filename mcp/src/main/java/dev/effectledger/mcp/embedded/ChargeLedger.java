package dev.effectledger.mcp.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the {@link CountingMcpServer} counts: effects, {@code create_charge} calls and {@code
 * Idempotency-Key} headers per key, the charge made for each key, the faults injected per key, and
 * (over stdio, when asked) one line per effect appended to a file.
 */
final class ChargeLedger {

  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> keyHeaders = new ConcurrentHashMap<>();
  private final Map<String, CountingMcpServer.Fault> faults = new ConcurrentHashMap<>();
  private final Map<String, Map<String, Object>> charges = new ConcurrentHashMap<>();
  private final Map<String, String> traceparents = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  private final Path effectsFile;

  ChargeLedger(Path effectsFile) {
    this.effectsFile = effectsFile;
  }

  void countRequest(String key) {
    requests.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
  }

  void countKeyHeader(String key) {
    keyHeaders.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
  }

  void inject(String key, CountingMcpServer.Fault fault) {
    faults.put(key, fault);
  }

  /** The fault injected for {@code key}, once: the next call takes it. */
  CountingMcpServer.Fault takeFault(String key) {
    return faults.remove(key);
  }

  String nextId() {
    return "ch_" + ids.incrementAndGet();
  }

  /** The charge made for {@code key}, or null. */
  Map<String, Object> charge(String key) {
    return charges.get(key);
  }

  List<String> chargedKeys() {
    return List.copyOf(charges.keySet());
  }

  /** One effect for {@code key}: counted, its first charge kept, and recorded to the file. */
  void effect(String key, Map<String, Object> charge) {
    effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    charges.putIfAbsent(key, charge);
    record(key);
  }

  private void record(String key) {
    if (effectsFile == null) {
      return;
    }
    try {
      Files.writeString(
          effectsFile,
          key + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND,
          StandardOpenOption.SYNC);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  int effects(String key) {
    return count(effects, key);
  }

  int requests(String key) {
    return count(requests, key);
  }

  void traceparent(String key, String traceparent) {
    traceparents.put(key, traceparent);
  }

  String traceparent(String key) {
    return traceparents.get(key);
  }

  int keyHeaders(String key) {
    return count(keyHeaders, key);
  }

  int effectCount() {
    return effects.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  private static int count(Map<String, AtomicInteger> counts, String key) {
    AtomicInteger n = counts.get(key);
    return n == null ? 0 : n.get();
  }
}
