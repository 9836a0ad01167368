package dev.effectledger.connectors.executor.sim;

import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An in-memory downstream that ignores keys: every call acts. A key can be held so that its call
 * waits (before acting) until released, which decides the order in which effects finish. Lookups
 * answer from the effects it took.
 */
public final class GatedConnector implements Connector {

  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();

  public GatedConnector hold(String key) {
    gates.put(key, new CountDownLatch(1));
    return this;
  }

  public void release(String key) {
    CountDownLatch gate = gates.remove(key);
    if (gate != null) {
      gate.countDown();
    }
  }

  public int calls(String key) {
    AtomicInteger n = calls.get(key);
    return n == null ? 0 : n.get();
  }

  public int effects(String key) {
    AtomicInteger n = effects.get(key);
    return n == null ? 0 : n.get();
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(false, false, true);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    calls.computeIfAbsent(request.effectKey(), k -> new AtomicInteger()).incrementAndGet();
    CountDownLatch gate = gates.get(request.effectKey());
    if (gate != null) {
      try {
        if (!gate.await(1, TimeUnit.MINUTES)) {
          return new EffectOutcome.Ambiguous("TIMEOUT", "held for a minute");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return new EffectOutcome.Ambiguous("INTERRUPTED", "interrupted while held");
      }
    }
    effects.computeIfAbsent(request.effectKey(), k -> new AtomicInteger()).incrementAndGet();
    return new EffectOutcome.Succeeded("{}", "fx_" + ids.incrementAndGet());
  }

  @Override
  public Lookup lookup(String effectKey) {
    return effects(effectKey) > 0 ? Lookup.found("fx_found", "{}") : Lookup.notFound();
  }
}
