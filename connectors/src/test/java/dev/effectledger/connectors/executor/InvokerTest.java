package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.executor.internal.Invoker;
import dev.effectledger.connectors.http.HttpConnector;
import dev.effectledger.connectors.http.HttpConnectorSettings;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.policy.RetryPolicy;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class InvokerTest {

  private static final RetryPolicy RETRY =
      new RetryPolicy(4, Duration.ofMillis(100), Duration.ofSeconds(5), 0.0);
  private static final EffectRequest REQUEST =
      new EffectRequest("k1", "k1", "acme", "charge", "{}", 1, null);

  private final List<Duration> sleeps = new ArrayList<>();
  private final Invoker invoker = new Invoker(sleeps::add, () -> 0.0);

  /** Answers a fixed script of outcomes, recording the keys it was called with. */
  private static final class Scripted implements Connector {
    final Deque<Object> script;
    final Capabilities capabilities;
    final List<String> keys = new ArrayList<>();

    Scripted(Capabilities capabilities, Object... answers) {
      this.capabilities = capabilities;
      this.script = new ArrayDeque<>(List.of(answers));
    }

    @Override
    public Capabilities capabilities() {
      return capabilities;
    }

    @Override
    public EffectOutcome execute(EffectRequest request) {
      keys.add(request.effectKey());
      Object next = script.removeFirst();
      if (next instanceof RuntimeException e) {
        throw e;
      }
      return (EffectOutcome) next;
    }
  }

  private static final Capabilities KEYED = new Capabilities(true, false, false);
  private static final Capabilities UNKEYED = new Capabilities(false, false, false);

  @Test
  void shouldRetryRetryableWithSameKeyAndExponentialBackoff() {
    var connector =
        new Scripted(
            UNKEYED,
            new EffectOutcome.Retryable("HTTP_503", "x"),
            new EffectOutcome.Retryable("HTTP_503", "x"),
            new EffectOutcome.Succeeded("{}", "ch_1"));

    assertThat(invoker.invoke(connector, REQUEST, RETRY))
        .isInstanceOf(EffectOutcome.Succeeded.class);
    assertThat(connector.keys).containsExactly("k1", "k1", "k1");
    assertThat(sleeps).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200));
  }

  @Test
  void shouldReturnRetryableWhenAttemptsAreSpent() {
    var connector =
        new Scripted(
            UNKEYED,
            new EffectOutcome.Retryable("A", "x"),
            new EffectOutcome.Retryable("B", "x"),
            new EffectOutcome.Retryable("C", "x"),
            new EffectOutcome.Retryable("D", "x"));

    assertThat(invoker.invoke(connector, REQUEST, RETRY).code()).isEqualTo("D");
    assertThat(connector.keys).hasSize(4);
  }

  @Test
  void shouldNeverRetryFailed() {
    var connector = new Scripted(KEYED, new EffectOutcome.Failed("HTTP_422", "x"));

    assertThat(invoker.invoke(connector, REQUEST, RETRY)).isInstanceOf(EffectOutcome.Failed.class);
    assertThat(connector.keys).hasSize(1);
  }

  @Test
  void shouldRetryAmbiguousOnlyWhereTheKeyIsHonoured() {
    var keyed =
        new Scripted(
            KEYED,
            new EffectOutcome.Ambiguous("TIMEOUT", "x"),
            new EffectOutcome.Succeeded("{}", "ch_1"));
    var unkeyed = new Scripted(UNKEYED, new EffectOutcome.Ambiguous("TIMEOUT", "x"));

    assertThat(invoker.invoke(keyed, REQUEST, RETRY)).isInstanceOf(EffectOutcome.Succeeded.class);
    assertThat(invoker.invoke(unkeyed, REQUEST, RETRY)).isInstanceOf(EffectOutcome.Ambiguous.class);
    assertThat(unkeyed.keys).hasSize(1);
  }

  @Test
  void shouldStayAmbiguousWhenRetriesAfterAnAmbiguousCallRunOut() {
    var connector =
        new Scripted(
            KEYED,
            new EffectOutcome.Ambiguous("TIMEOUT", "x"),
            new EffectOutcome.Retryable("HTTP_409", "x"),
            new EffectOutcome.Retryable("HTTP_409", "x"),
            new EffectOutcome.Retryable("HTTP_409", "x"));

    assertThat(invoker.invoke(connector, REQUEST, RETRY))
        .as("the first call may still act: the key must not be released")
        .isInstanceOfSatisfying(
            EffectOutcome.Ambiguous.class, a -> assertThat(a.code()).isEqualTo("TIMEOUT"));
  }

  @Test
  void shouldWaitAtLeastRetryAfter() {
    var connector =
        new Scripted(
            UNKEYED,
            new EffectOutcome.Retryable("HTTP_429", "x", Optional.of(Duration.ofSeconds(2))),
            new EffectOutcome.Succeeded("{}", null));

    invoker.invoke(connector, REQUEST, RETRY);

    assertThat(sleeps).containsExactly(Duration.ofSeconds(2));
  }

  @Test
  void shouldStopRetryingWhenRetryAfterExceedsTheCap() {
    var connector =
        new Scripted(
            UNKEYED,
            new EffectOutcome.Retryable("HTTP_503", "x", Optional.of(Duration.ofMinutes(5))));

    assertThat(invoker.invoke(connector, REQUEST, RETRY))
        .isInstanceOf(EffectOutcome.Retryable.class);
    assertThat(sleeps).isEmpty();
  }

  @Test
  void shouldTurnConnectorExceptionIntoAmbiguousOutcome() {
    var connector = new Scripted(UNKEYED, new IllegalStateException("boom"));

    assertThat(invoker.invoke(connector, REQUEST, RETRY))
        .isInstanceOfSatisfying(
            EffectOutcome.Ambiguous.class, a -> assertThat(a.code()).isEqualTo("CONNECTOR_ERROR"));
  }

  @Test
  void shouldCollapseTimeoutRetryIntoOneEffectAtKeyHonouringDownstream() throws Exception {
    try (CountingDownstream downstream = CountingDownstream.start(Duration.ofSeconds(1))) {
      var connector =
          new HttpConnector(
              HttpConnectorSettings.from(
                  "charge",
                  new ObjectMapper()
                      .readTree(
                          "{\"url\":\""
                              + downstream.url()
                              + "\",\"timeout\":\"300ms\",\"honoursKeys\":true}")),
              Clock.systemUTC());
      downstream.inject("k1", Fault.HANG_AFTER_EFFECT);

      EffectOutcome outcome = invoker.invoke(connector, REQUEST, RETRY);

      assertThat(outcome).isInstanceOf(EffectOutcome.Succeeded.class);
      assertThat(downstream.requests("k1")).isGreaterThanOrEqualTo(2);
      assertThat(downstream.effects("k1")).isEqualTo(1);
    }
  }

  @Test
  void shouldNotRepeatAmbiguousCallToDownstreamThatIgnoresKeys() throws Exception {
    try (CountingDownstream downstream =
        CountingDownstream.start(Duration.ofSeconds(1)).honoursKeys(false)) {
      var connector =
          new HttpConnector(
              HttpConnectorSettings.from(
                  "charge", new ObjectMapper().readTree("{\"url\":\"" + downstream.url() + "\"}")),
              Clock.systemUTC());
      downstream.inject("k1", Fault.ERROR_AFTER_EFFECT);

      assertThat(invoker.invoke(connector, REQUEST, RETRY))
          .isInstanceOf(EffectOutcome.Ambiguous.class);
      assertThat(downstream.requests("k1")).isEqualTo(1);
      assertThat(downstream.effects("k1")).isEqualTo(1);
    }
  }
}
