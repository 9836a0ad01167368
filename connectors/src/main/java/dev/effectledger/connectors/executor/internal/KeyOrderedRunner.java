package dev.effectledger.connectors.executor.internal;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks on a pool of threads, many at once, but those of one key one after another in the
 * order they were given: effects are slow I/O, so a partition's records run concurrently, and two
 * dispatches of one effect key never overlap. A failed task does not hold up the next of its key.
 */
public final class KeyOrderedRunner {

  private static final Logger log = LoggerFactory.getLogger(KeyOrderedRunner.class);

  private final ExecutorService workers;

  /** Per key, the last task given, until it ends. */
  private final Map<String, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();

  private final BooleanSupplier stopping;

  /**
   * @param threads how many tasks run at once
   * @param stopping true once a task's failure is expected (the runner is being torn down) and not
   *     worth a log line
   */
  public KeyOrderedRunner(int threads, String threadName, BooleanSupplier stopping) {
    this.workers =
        Executors.newFixedThreadPool(
            threads,
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
    this.stopping = stopping;
  }

  /** Runs {@code task} once every task given before for {@code key} has ended. */
  public void run(String key, Runnable task) {
    CompletableFuture<Void> previous =
        tails.getOrDefault(key, CompletableFuture.completedFuture(null));
    CompletableFuture<Void> next =
        previous.handle((ignored, error) -> null).thenRunAsync(task, workers);
    tails.put(key, next);
    next.whenComplete(
        (ignored, error) -> {
          tails.remove(key, next);
          if (error != null && !stopping.getAsBoolean()) {
            log.error("Task for key {} failed: {}", key, error.toString());
          }
        });
  }

  /** Keys with a task given and not yet ended. */
  public int keysRunning() {
    return tails.size();
  }

  /** Interrupts what runs and drops what waits. */
  public void shutdownNow() {
    workers.shutdownNow();
  }
}
