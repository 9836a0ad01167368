package dev.effectledger.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryHorizonTest {

  private static ToolPolicies parse(String yaml) {
    return new ToolPolicyLoader().parse(yaml, "tools.yaml");
  }

  @Test
  void shouldAddTheDispatchesTheExecutorsRetriesAndReconciliation() {
    ToolPolicy redispatching =
        parse(
                """
                tools:
                  put: {class: write-idempotent, connector: http, pendingTimeout: 10m, maxAttempts: 3}
                """)
            .forTool("put")
            .orElseThrow();
    ToolPolicy holding =
        parse(
                """
                tools:
                  pay: {class: irreversible, connector: http, pendingTimeout: 5m, reconcileWithin: 1h}
                """)
            .forTool("pay")
            .orElseThrow();

    RetryHorizon put = RetryHorizon.of(redispatching);
    assertThat(put.dispatches()).isEqualTo(Duration.ofMinutes(30)); // 10m × 3 attempts
    assertThat(put.executorRetries()).isEqualTo(Duration.ofMillis(700)); // 100 + 200 + 400 ms
    assertThat(put.reconciliation()).isZero();
    RetryHorizon pay = RetryHorizon.of(holding);
    assertThat(pay.dispatches()).isEqualTo(Duration.ofMinutes(5)); // held after one dispatch
    assertThat(pay.reconciliation()).isEqualTo(Duration.ofHours(1));
    // without reconcileWithin, a held key may be released at any time in the window
    assertThat(RetryHorizon.of(holding.toBuilder().reconcileWithin(null).build()).reconciliation())
        .isEqualTo(Duration.ofDays(30));
  }

  @Test
  void shouldWarnWithTheNumbersWhenTheHorizonOutlivesTheDownstreamsKeys() {
    ToolPolicies policies =
        parse(
            """
            tools:
              charge:                 # Stripe keeps keys for 24 h
                class: write-idempotent
                connector: http
                pendingTimeout: 10h
                maxAttempts: 3
                downstreamKeyWindow: 24h
              refund:
                class: irreversible
                connector: http
                downstreamKeyWindow: 24h
              ticket:
                class: irreversible
                connector: http
                downstreamKeyWindow: 24h
                reconcileWithin: 2h
              note: {class: write-idempotent, connector: http, pendingTimeout: 10h, maxAttempts: 3}
            """);

    assertThat(policies.warnings())
        .containsExactlyInAnyOrder(
            "tools.charge: the downstream keeps keys for 1d, but the ledger may send a key again up"
                + " to 1d 6h 1s after its first dispatch (pendingTimeout 10h × 3 attempts +"
                + " executor retries 700ms); a send after 1d would be a second effect. Shorten"
                + " pendingTimeout or maxAttempts, reconcile sooner (reconcileWithin), or use a"
                + " downstream that keeps keys longer",
            "tools.refund: the downstream keeps keys for 1d, but the ledger may send a key again up"
                + " to 30d 5m 1s after its first dispatch (pendingTimeout 5m (held after one"
                + " dispatch) + executor retries 700ms + held keys settled at any time in its"
                + " window (30d; declare reconcileWithin)); a send after 1d would be a second"
                + " effect. Shorten pendingTimeout or maxAttempts, reconcile sooner"
                + " (reconcileWithin), or use a downstream that keeps keys longer");
    // ticket: 5m + 700ms + 2h is within 24h; note declares no key window
  }

  @Test
  void shouldRefuseAKeyWindowThatIsNotADuration() {
    assertThatThrownBy(
            () ->
                parse(
                    """
                    tools:
                      pay: {class: irreversible, connector: http, downstreamKeyWindow: a day}
                    """))
        .hasMessageContaining("tools.pay.downstreamKeyWindow: 'a day' is not a positive duration");
  }

  @Test
  void shouldWriteDurationsAsPeopleReadThem() {
    assertThat(RetryHorizon.human(Duration.ZERO)).isEqualTo("0s");
    assertThat(RetryHorizon.human(Duration.ofMillis(700))).isEqualTo("700ms");
    assertThat(RetryHorizon.human(Duration.ofMinutes(15).plusMillis(1))).isEqualTo("15m 1s");
    assertThat(RetryHorizon.human(Duration.ofDays(1).plusHours(2))).isEqualTo("1d 2h");
  }
}
