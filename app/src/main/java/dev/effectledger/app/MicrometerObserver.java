package dev.effectledger.app;

import dev.effectledger.schema.AuditType;
import dev.effectledger.topology.LedgerObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The ledger's own metrics: {@code effectledger_decisions_total{tool, decision}} (dispatched,
 * dedup_hit = replayed, in_flight = coalesced, conflict, rejected, expired, held_unknown, ...) and
 * {@code effectledger_outcome_latency_seconds{tool}} from the latest dispatch to the settling
 * outcome, and {@code effectledger_double_effects_total{tool}}: succeeded keys that reported a
 * second effect (evidence of a broken promise; alert on any increase). Only the tools a policy
 * names get a series of their own, the file the processor started with or a version applied since
 * ({@code effectledger tools apply}): a tool name comes from what clients send, so any other (an
 * unknown tool, one admitted by {@code unknownTool}) is counted under {@code tool="other"} and the
 * number of series stays bounded. A tool keeps its series once it had one, even when a later
 * version drops it.
 */
final class MicrometerObserver implements LedgerObserver {

  static final String OTHER = "other";

  private final MeterRegistry registry;
  private final Supplier<Set<String>> named;
  private final Set<String> tools = ConcurrentHashMap.newKeySet();
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();

  /**
   * Series per tool of {@code tools}, the tools the policy file names; every other under "other".
   */
  MicrometerObserver(MeterRegistry registry, Set<String> tools) {
    this(registry, () -> tools);
  }

  /**
   * Series per tool that {@code named} gives when the tool is first seen (the processor's: the
   * tools of the newest policy version any of its tasks applies); every other under "other".
   */
  MicrometerObserver(MeterRegistry registry, Supplier<Set<String>> named) {
    this.registry = registry;
    this.named = named;
  }

  private String tag(String tool) {
    if (tools.contains(tool)) {
      return tool;
    }
    if (named.get().contains(tool)) {
      tools.add(tool);
      return tool;
    }
    return OTHER;
  }

  @Override
  public void decided(String tool, AuditType type) {
    String decision = type.name().toLowerCase(Locale.ROOT);
    String tag = tag(tool);
    counters
        .computeIfAbsent(
            tag + '\n' + decision,
            k ->
                Counter.builder("effectledger.decisions")
                    .description("Ledger decisions by tool and kind")
                    .tag("tool", tag)
                    .tag("decision", decision)
                    .register(registry))
        .increment();
  }

  /** The latest double effects this processor saw, newest last, for the console. */
  static final int DOUBLE_EFFECTS_KEPT = 100;

  /** A double effect seen: which key acted twice, and both effect ids. */
  record DoubleEffect(
      String tool,
      String tenant,
      String key,
      String firstEffectId,
      String secondEffectId,
      long at) {}

  private final java.util.Deque<DoubleEffect> doubleEffects = new java.util.ArrayDeque<>();

  @Override
  public void doubleEffect(
      String tool, String tenant, String key, String firstEffectId, String secondEffectId) {
    doubleEffect(tool);
    synchronized (doubleEffects) {
      doubleEffects.addLast(
          new DoubleEffect(
              tool, tenant, key, firstEffectId, secondEffectId, System.currentTimeMillis()));
      while (doubleEffects.size() > DOUBLE_EFFECTS_KEPT) {
        doubleEffects.removeFirst();
      }
    }
  }

  /** The latest double effects seen since this processor started (kept in memory only). */
  List<DoubleEffect> doubleEffects() {
    synchronized (doubleEffects) {
      return List.copyOf(doubleEffects);
    }
  }

  @Override
  public void doubleEffect(String tool) {
    String tag = tag(tool);
    counters
        .computeIfAbsent(
            tag + "\ndouble",
            k ->
                Counter.builder("effectledger.double.effects")
                    .description(
                        "Succeeded keys that reported a second effect of the same action downstream")
                    .tag("tool", tag)
                    .register(registry))
        .increment();
  }

  @Override
  public void settled(String tool, Duration sinceDispatch) {
    timers
        .computeIfAbsent(
            tag(tool),
            t ->
                Timer.builder("effectledger.outcome.latency")
                    .description("From the latest dispatch to the outcome that settled the key")
                    .tag("tool", t)
                    .publishPercentiles(0.5, 0.99)
                    .register(registry))
        .record(sinceDispatch);
  }
}
