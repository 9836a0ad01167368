package dev.effectledger.app;

import java.util.concurrent.CountDownLatch;

/**
 * Runs a long-lived process until SIGTERM or Ctrl-C: the shutdown hook closes what it was given,
 * says so, and ends the JVM with status 0 (a JVM ended by a signal otherwise reports 143).
 */
final class Lifecycle {

  private final CountDownLatch stopped = new CountDownLatch(1);

  Lifecycle(String name, AutoCloseable... parts) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      int status = 0;
      for (AutoCloseable part : parts) {
        try {
          part.close();
        } catch (Exception e) {
          System.err.println("effectledger " + name + ": error while stopping: " + e);
          status = 1;
        }
      }
      System.out.println("effectledger " + name + " stopped" + (status == 0 ? " cleanly" : " with errors"));
      System.out.flush();
      stopped.countDown();
      Runtime.getRuntime().halt(status);
    }, name + "-shutdown"));
  }

  /** Blocks until the shutdown hook has run. */
  void awaitStop() throws InterruptedException {
    stopped.await();
  }
}
