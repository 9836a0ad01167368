package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.modelcontextprotocol.spec.McpSchema.ProgressNotification;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class ProgressRelayTest {

  // senders run at once, on the relaying thread
  private final ProgressRelay relay = new ProgressRelay(Runnable::run, Duration.ofSeconds(5));

  private static ProgressNotification progress(Object token, double progress) {
    return new ProgressNotification(token, progress, 10.0, "step " + progress, Map.of("k", "v"));
  }

  @Test
  void shouldRelayUnderTheAgentsTokenWhatTheUpstreamReportsUnderTheGatewaysOwn() {
    List<ProgressNotification> agent = new ArrayList<>();
    String upstreamToken = relay.open(agent::add, "agent-token-1");

    relay.relay(progress(upstreamToken, 3.0));

    assertThat(upstreamToken).startsWith("effectledger-").isNotEqualTo("agent-token-1");
    assertThat(agent)
        .containsExactly(
            new ProgressNotification("agent-token-1", 3.0, 10.0, "step 3.0", Map.of("k", "v")));
  }

  @Test
  void shouldDropProgressThatDoesNotIncrease() {
    List<Double> agent = new ArrayList<>();
    String token = relay.open(n -> agent.add(n.progress()), 7);

    for (double p : new double[] {1, 3, 2, 3, 4}) {
      relay.relay(progress(token, p));
    }

    assertThat(agent).containsExactly(1.0, 3.0, 4.0);
  }

  @Test
  void shouldKeepEachCallsProgressApart() {
    List<Object> first = new ArrayList<>();
    List<Object> second = new ArrayList<>();
    String one = relay.open(n -> first.add(n.progressToken() + "@" + n.progress()), "a");
    String two = relay.open(n -> second.add(n.progressToken() + "@" + n.progress()), "a");

    relay.relay(progress(one, 5.0));
    relay.relay(progress(two, 1.0)); // its own sequence: not below the other call's 5

    assertThat(one).isNotEqualTo(two);
    assertThat(first).containsExactly("a@5.0");
    assertThat(second).containsExactly("a@1.0");
  }

  @Test
  void shouldRelayNothingOnceTheCallEndedNorForTokensItDidNotGive() {
    List<ProgressNotification> agent = new ArrayList<>();
    String token = relay.open(agent::add, "t");

    relay.finish(token);
    relay.relay(progress(token, 1.0));
    relay.relay(progress("someone-elses", 1.0));

    assertThat(agent).isEmpty();
  }

  @Test
  void shouldNotPassOnTheFailureOfAnAgentThatWentAway() {
    List<Double> later = new ArrayList<>();
    String gone =
        relay.open(
            n -> {
              throw new IllegalStateException("session closed");
            },
            "t");
    String alive = relay.open(n -> later.add(n.progress()), "u");

    relay.relay(progress(gone, 1.0)); // does not throw
    relay.relay(progress(alive, 2.0));

    assertThat(later).containsExactly(2.0);
  }

  @Test
  void shouldSendWhatIsQueuedInOrderBeforeTheCallsResultAndNothingAfter() {
    List<Runnable> notStarted = new ArrayList<>(); // senders that did not run yet
    ProgressRelay held = new ProgressRelay(notStarted::add, Duration.ofSeconds(5));
    List<Double> agent = new ArrayList<>();
    String token = held.open(n -> agent.add(n.progress()), "t");

    for (double p = 1; p <= 5; p++) {
      held.relay(progress(token, p));
    }
    held.finish(token); // the result is back: what came before it goes first
    held.relay(progress(token, 6.0)); // after the result: never sent
    notStarted.forEach(Runnable::run); // a sender late to run finds nothing

    assertThat(notStarted).hasSize(1); // one sender at a time per call
    assertThat(agent).containsExactly(1.0, 2.0, 3.0, 4.0, 5.0);
  }

  @Test
  @Timeout(10)
  void shouldKeepTheUpstreamsOrderWithSendersOnTheirOwnThreads() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      ProgressRelay threaded = new ProgressRelay(pool, Duration.ofSeconds(5));
      List<List<Double>> agents = new ArrayList<>();
      List<String> tokens = new ArrayList<>();
      for (int call = 0; call < 8; call++) {
        List<Double> agent = new CopyOnWriteArrayList<>();
        agents.add(agent);
        tokens.add(threaded.open(n -> agent.add(n.progress()), "t"));
      }
      for (double p = 1; p <= 50; p++) {
        for (String token : tokens) {
          threaded.relay(progress(token, p));
        }
      }
      tokens.forEach(threaded::finish);

      List<Double> all = new ArrayList<>();
      for (double p = 1; p <= 50; p++) {
        all.add(p);
      }
      assertThat(agents).allSatisfy(agent -> assertThat(agent).containsExactlyElementsOf(all));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  @Timeout(10)
  void shouldAnswerTheResultAfterABoundedWaitForAnAgentThatDoesNotTakeItsProgress()
      throws Exception {
    CountDownLatch stuck = new CountDownLatch(1);
    CountDownLatch sending = new CountDownLatch(1);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      ProgressRelay slow = new ProgressRelay(pool, Duration.ofMillis(200));
      List<Double> agent = new CopyOnWriteArrayList<>();
      String token =
          slow.open(
              n -> {
                sending.countDown();
                try {
                  stuck.await(); // an agent that does not take it
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                agent.add(n.progress());
              },
              "t");
      slow.relay(progress(token, 1.0));
      assertThat(sending.await(5, TimeUnit.SECONDS)).isTrue();
      slow.relay(progress(token, 2.0));

      slow.finish(token); // returns after its bounded wait

      stuck.countDown();
      pool.shutdown();
      assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
      assertThat(agent).containsExactly(1.0); // 2.0 was not sent yet: never after the result
    } finally {
      pool.shutdownNow();
    }
  }
}
