package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class TimersTest {

  @Test
  void shouldDropACancelledWaitBoundFromTheQueueAtOnce() {
    ScheduledThreadPoolExecutor timers = Timers.create();
    try {
      ScheduledFuture<?> bound = timers.schedule(() -> {}, 30, TimeUnit.SECONDS);

      bound.cancel(false);

      assertThat(timers.getQueue()).isEmpty();
    } finally {
      timers.shutdownNow();
    }
  }

  @Test
  void shouldRunOnDaemonThreadsSoThatTheyNeverKeepTheProcessAlive() throws Exception {
    ScheduledThreadPoolExecutor timers = Timers.create();
    try {
      boolean daemon =
          timers.schedule(() -> Thread.currentThread().isDaemon(), 0, TimeUnit.MILLISECONDS).get();

      assertThat(daemon).isTrue();
    } finally {
      timers.shutdownNow();
    }
  }
}
