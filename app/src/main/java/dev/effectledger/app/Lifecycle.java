package dev.effectledger.app;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Runs a long-lived process until SIGTERM or Ctrl-C: the shutdown hook closes what it was given,
 * says so, and ends the JVM with status 0 (a JVM ended by a signal otherwise reports 143). A
 * process whose work stopped on its own (a fenced executor, Kafka Streams in ERROR) does not stay
 * up doing nothing: {@link #awaitStop(Supplier)} returns 1, and the JVM ends with status 1 so that
 * a supervisor restarts it.
 */
final class Lifecycle {

  private final String name;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile boolean failed;
  private volatile boolean stopping;

  Lifecycle(String name, AutoCloseable... parts) {
    this.name = name;
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stopping = true; // before closing: a part the hook closed is not a failure
                  int status = failed ? 1 : 0;
                  for (AutoCloseable part : parts) {
                    try {
                      part.close();
                    } catch (Exception e) {
                      System.err.println("effectledger " + name + ": error while stopping: " + e);
                      status = 1;
                    }
                  }
                  System.out.println(
                      "effectledger "
                          + name
                          + " stopped"
                          + (status == 0
                              ? " cleanly"
                              : failed ? " after a failure" : " with errors"));
                  System.out.flush();
                  stopped.countDown();
                  Runtime.getRuntime().halt(status);
                },
                name + "-shutdown"));
  }

  /** Blocks until the shutdown hook has run. */
  void awaitStop() throws InterruptedException {
    stopped.await();
  }

  /**
   * Like {@link #awaitStop()}, and also returns 1 when {@code failure} names why the work stopped
   * on its own (checked every second), after saying so on standard error.
   */
  int awaitStop(Supplier<String> failure) throws InterruptedException {
    while (!stopped.await(1, TimeUnit.SECONDS)) {
      String why = failure.get();
      if (why != null && !stopping) {
        failed = true;
        System.err.println(
            "effectledger "
                + name
                + ": "
                + why
                + "; exiting with status 1 (restart it once the cause is fixed)");
        System.err.flush();
        return 1;
      }
    }
    return 0;
  }
}
