package dev.effectledger.app;

import dev.effectledger.connectors.executor.ExecutorObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An executor's metrics: {@code effectledger_executor_effects_total{tool, outcome}} (succeeded,
 * failed, retryable, ambiguous), {@code effectledger_executor_retries_total{tool}}, {@code
 * effectledger_executor_in_flight{tool}} (effects running now) and {@code
 * effectledger_executor_effect_seconds{tool}} (from an effect's first connector call to its
 * outcome, retries included). Tools are those of the executor's lanes: the dispatches it takes name
 * only them, so the series stay bounded.
 */
final class MicrometerExecutorObserver implements ExecutorObserver {

  private final MeterRegistry registry;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();

  MicrometerExecutorObserver(MeterRegistry registry) {
    this.registry = registry;
  }

  private AtomicInteger running(String tool) {
    return inFlight.computeIfAbsent(
        tool,
        t -> {
          AtomicInteger n = new AtomicInteger();
          Gauge.builder("effectledger.executor.in.flight", n, AtomicInteger::get)
              .description("Effects running now, by tool")
              .tag("tool", t)
              .register(registry);
          return n;
        });
  }

  @Override
  public void started(String tool) {
    running(tool).incrementAndGet();
  }

  @Override
  public void retried(String tool) {
    counters
        .computeIfAbsent(
            tool + "\nretry",
            k ->
                Counter.builder("effectledger.executor.retries")
                    .description("Connector calls repeated after a backoff, by tool")
                    .tag("tool", tool)
                    .register(registry))
        .increment();
  }

  @Override
  public void finished(String tool, String outcome, Duration took) {
    running(tool).decrementAndGet();
    counters
        .computeIfAbsent(
            tool + '\n' + outcome,
            k ->
                Counter.builder("effectledger.executor.effects")
                    .description("Effects by tool and outcome")
                    .tag("tool", tool)
                    .tag("outcome", outcome)
                    .register(registry))
        .increment();
    timers
        .computeIfAbsent(
            tool,
            t ->
                Timer.builder("effectledger.executor.effect")
                    .description("Time from an effect's first connector call to its outcome")
                    .tag("tool", t)
                    .publishPercentiles(0.5, 0.99)
                    .register(registry))
        .record(took);
  }
}
