package dev.effectledger.gateway;

import java.util.concurrent.ScheduledThreadPoolExecutor;

/** The gateway's timers: every waiting call's wait bound, the readiness probe. */
final class Timers {

  private Timers() {}

  /**
   * Two daemon threads; a cancelled timer leaves the queue at once. Every answered call cancels its
   * wait bound, and a cancelled task left queued until its time (the JDK's default) held the call's
   * request and response for the whole wait: 30 s by default, 60,000 calls at 2,000/s.
   */
  static ScheduledThreadPoolExecutor create() {
    ScheduledThreadPoolExecutor timers =
        new ScheduledThreadPoolExecutor(
            2,
            r -> {
              Thread t = new Thread(r, "gateway-timers");
              t.setDaemon(true);
              return t;
            });
    timers.setRemoveOnCancelPolicy(true);
    return timers;
  }
}
