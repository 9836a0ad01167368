package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.connectors.executor.internal.KeyOrderedRunner;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class KeyOrderedRunnerTest {

  private final KeyOrderedRunner runner = new KeyOrderedRunner(4, "test-worker", () -> false);

  @AfterEach
  void stop() {
    runner.shutdownNow();
  }

  @Test
  void shouldRunOneKeysTasksInOrderWhileOtherKeysRunBesideThem() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    List<String> done = new CopyOnWriteArrayList<>();

    runner.run(
        "a",
        () -> {
          hold(release);
          done.add("a1");
        });
    runner.run("a", () -> done.add("a2"));
    runner.run("b", () -> done.add("b1"));

    await("b's task runs while a's first is held")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(done).as("tasks done").contains("b1"));
    assertThat(done)
        .as("b ran while a's first task was held; a's second waited for it")
        .containsExactly("b1");
    release.countDown();
    await("all three tasks done once a's first is released")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(done).as("tasks done").hasSize(3));
    assertThat(done).containsExactly("b1", "a1", "a2");
    await("no key left running")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(runner.keysRunning()).as("keys running").isZero());
  }

  @Test
  void shouldRunTheNextTaskOfAKeyWhoseTaskFailed() {
    List<String> done = new CopyOnWriteArrayList<>();

    runner.run(
        "a",
        () -> {
          throw new IllegalStateException("connector bug");
        });
    runner.run("a", () -> done.add("a2"));

    await("a's next task runs after its failed one")
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(done).as("tasks done").contains("a2"));
  }

  private static void hold(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
