package dev.effectledger.bench.chaos;

import dev.effectledger.bench.Processes.Node;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The chaos run's lane outage: every executor down at once for a while. */
final class LaneOutage {

  private LaneOutage() {}

  /**
   * Every executor killed with -9 and kept down for the run's outage, while the agents go on
   * sending: their dispatches queue on the lane, their pending timeouts hold the keys, and the
   * reconciler, past its min age, looks them up and finds nothing (issue 52). Then the executors
   * start again and read what queued. Processors that exit meanwhile are restarted as usual.
   */
  static void run(
      ChaosDeployment deployment,
      Duration outage,
      AtomicInteger selfExits,
      long started,
      AgentAnswers answers)
      throws Exception {
    ChaosRun.say(
        "lane outage: every executor killed with -9, down for " + outage.toSeconds() + " s");
    for (Node executor : deployment.executors()) {
      executor.kill();
    }
    long back = System.nanoTime() + outage.toNanos();
    long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < back) {
      Thread.sleep(200); // polling the outage's clock and the processes' exits
      deployment.superviseExits(selfExits);
      if (System.nanoTime() >= nextReport) {
        ChaosRun.say(
            String.format(
                "%d s: lane outage, %d of %d steps answered",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                answers.answered(),
                answers.steps()));
        nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      }
    }
    for (Node executor : deployment.executors()) {
      executor.restart();
    }
    ChaosRun.say("lane outage over: executors started again");
  }
}
