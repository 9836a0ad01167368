package dev.effectledger.policy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.policy.PolicyDiff.Change;
import dev.effectledger.policy.PolicyDiff.Risk;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class PolicyDiffTest {

  private static ToolPolicies parse(String yaml) {
    return new ToolPolicyLoader().parse(yaml, "tools.yaml");
  }

  private static final ToolPolicies BEFORE =
      parse(
          """
          tools:
            pay: {class: irreversible, connector: http, window: 30d, lane: payments}
            ticket: {class: write-idempotent, connector: http, window: 24h, onAmbiguous: hold}
            email: {class: write-non-idempotent, connector: log, window: 7d, key: {ignore: [/body]}}
            notes: {class: write-idempotent, connector: log}
          """);

  @Test
  void shouldCallEveryChangeThatCanTurnARetryIntoASecondEffectWeakening() {
    PolicyDiff diff =
        PolicyDiff.of(
            BEFORE,
            parse(
                """
                tools:
                  pay: {class: write-idempotent, connector: http, window: 7d, lane: payments}
                  ticket: {class: write-idempotent, connector: http, window: 24h, onAmbiguous: redispatch}
                  email: {class: write-non-idempotent, connector: log, window: 7d, key: {ignore: [/body, /subject]}}
                  notes: {class: write-idempotent, connector: log, bypass: true}
                """));

    assertThat(diff.weakens()).isTrue();
    assertThat(diff.changesOf("pay"))
        .extracting(Change::risk, Change::what)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(
                Risk.WEAKENS, "class irreversible -> write-idempotent: a weaker class"),
            org.assertj.core.groups.Tuple.tuple(
                Risk.WEAKENS,
                "window 30d -> 7d: completed entries older than 7d expire at once, and a retry of"
                    + " one is a new action"),
            // the new class's default: what it did not say changes too
            org.assertj.core.groups.Tuple.tuple(
                Risk.WEAKENS,
                "onAmbiguous hold -> redispatch: an effect that may have happened is sent again"
                    + " (safe only if the downstream honours the key)"));
    assertThat(diff.changesOf("pay").get(1).shrunkTo()).isEqualTo(Duration.ofDays(7));
    assertThat(diff.changesOf("ticket"))
        .singleElement()
        .extracting(Change::risk)
        .isEqualTo(Risk.WEAKENS);
    assertThat(diff.changesOf("email").get(0).what())
        .startsWith("key rules {ignore: [/body], require: []} -> {ignore: [/body, /subject]");
    assertThat(diff.changesOf("notes").get(0).what()).startsWith("bypass false -> true");
  }

  @Test
  void shouldLetSaferChangesThroughNamingWhatToDoDuringTheRollOut() {
    PolicyDiff diff =
        PolicyDiff.of(
            BEFORE,
            parse(
                """
                tools:
                  pay: {class: irreversible, connector: http, window: 90d, lane: cards, pendingTimeout: 2m}
                  ticket: {class: irreversible, connector: http, window: 24h, onAmbiguous: hold}
                  email: {class: write-non-idempotent, connector: log, window: 7d, key: {ignore: [/body]}}
                  refund: {class: irreversible, connector: http}
                """));

    assertThat(diff.weakens()).isFalse();
    assertThat(diff.changesOf("pay"))
        .extracting(Change::what)
        .containsExactly(
            "window 30d -> 90d: entries are kept longer (the store grows by the rate times the"
                + " difference)",
            "lane payments -> cards: dispatches already in tool-dispatch.payments are performed by"
                + " that lane's executors; keep them until it drains",
            "pendingTimeout 5m -> 2m");
    assertThat(diff.changesOf("ticket"))
        .extracting(Change::what)
        .containsExactly("class write-idempotent -> irreversible");
    assertThat(diff.changesOf("email")).isEmpty();
    assertThat(diff.changesOf("notes"))
        .singleElement()
        .extracting(Change::risk)
        .isEqualTo(Risk.CAUTION);
    assertThat(diff.changesOf("refund").get(0).what())
        .startsWith("added: irreversible, window 30d");
  }
}
