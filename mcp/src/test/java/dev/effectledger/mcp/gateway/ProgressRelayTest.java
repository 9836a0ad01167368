package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.modelcontextprotocol.spec.McpSchema.ProgressNotification;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProgressRelayTest {

  private final ProgressRelay relay = new ProgressRelay();

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

    relay.close(token);
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
}
