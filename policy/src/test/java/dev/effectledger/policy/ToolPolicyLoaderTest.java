package dev.effectledger.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ToolPolicyLoaderTest {

  private final ToolPolicyLoader loader = new ToolPolicyLoader();

  private ToolPolicies parse(String yaml) {
    return loader.parse(yaml, "tools.yaml");
  }

  private PolicyException problemsOf(String yaml) {
    try {
      parse(yaml);
    } catch (PolicyException e) {
      return e;
    }
    throw new AssertionError("expected the file to be refused");
  }

  @Test
  void shouldLoadTheExampleConfig() {
    ToolPolicies policies = loader.load(Path.of("../config/tools.yaml"));

    ToolPolicy charge = policies.forTool("charge_card").orElseThrow();
    assertThat(charge.toolClass()).isEqualTo(ToolClass.IRREVERSIBLE);
    assertThat(charge.window()).isEqualTo(Duration.ofDays(30));
    assertThat(charge.pendingTimeout()).isEqualTo(Duration.ofMinutes(2));
    assertThat(charge.onAmbiguous()).isEqualTo(AmbiguityPolicy.HOLD);
    assertThat(charge.lane()).isEqualTo("payments");
    assertThat(charge.bypassAllowed()).isTrue();
    assertThat(policies.forTool("no_such_tool")).isEmpty();
  }

  @Test
  void shouldApplyDefaultsByClass() {
    ToolPolicies policies =
        parse(
            """
        tools:
          a: {class: write-idempotent, connector: http}
          b: {class: write-non-idempotent, connector: http}
          c: {class: irreversible, connector: http}
        """);

    ToolPolicy a = policies.forTool("a").orElseThrow();
    assertThat(a.window()).isEqualTo(Duration.ofHours(24));
    assertThat(a.onAmbiguous()).isEqualTo(AmbiguityPolicy.REDISPATCH);
    assertThat(a.onInFlight()).isEqualTo(InFlightPolicy.COALESCE);
    assertThat(a.pendingTimeout()).isEqualTo(Duration.ofMinutes(5));
    assertThat(a.lane()).isEqualTo("default");
    assertThat(a.maxAttempts()).isEqualTo(3);
    assertThat(a.bypassAllowed()).isFalse();
    assertThat(policies.forTool("b").orElseThrow().window()).isEqualTo(Duration.ofDays(7));
    assertThat(policies.forTool("b").orElseThrow().onAmbiguous()).isEqualTo(AmbiguityPolicy.HOLD);
    assertThat(policies.forTool("c").orElseThrow().window()).isEqualTo(Duration.ofDays(30));
  }

  @Test
  void shouldApplyUnknownToolDefaultUnderTheToolsOwnName() {
    ToolPolicies policies =
        parse(
            """
        tools: {}
        unknownTool: {class: read, connector: http, lane: reads}
        """);

    ToolPolicy policy = policies.forTool("anything").orElseThrow();
    assertThat(policy.name()).isEqualTo("anything");
    assertThat(policy.isLedgered()).isFalse();
  }

  @Test
  void shouldNameToolFieldValueAndAllowedForBadClass() {
    assertThat(problemsOf("tools:\n  pay: {class: writey, connector: http}\n").problems())
        .containsExactly(
            "tools.pay.class: 'writey' is not a tool class; allowed: read, write-idempotent, write-non-idempotent, irreversible");
  }

  @Test
  void shouldReportMissingClassAndConnector() {
    assertThat(problemsOf("tools:\n  pay: {window: 1h}\n").problems())
        .anySatisfy(p -> assertThat(p).startsWith("tools.pay.class: missing"))
        .anySatisfy(p -> assertThat(p).startsWith("tools.pay.connector: missing"));
  }

  @Test
  void shouldReportBadDurations() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: irreversible, connector: http, window: 3 fortnights, pendingTimeout: 0s}\n")
                .problems())
        .containsExactly(
            "tools.pay.window: '3 fortnights' is not a positive duration; use e.g. 30s, 15m, 24h, 7d or PT15M",
            "tools.pay.pendingTimeout: '0s' is not a positive duration; use e.g. 30s, 15m, 24h, 7d or PT15M");
  }

  @Test
  void shouldReportBadChoices() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: write-idempotent, connector: http, onInFlight: wait, onAmbiguous: guess}\n")
                .problems())
        .containsExactly(
            "tools.pay.onInFlight: 'wait' is not allowed; allowed: coalesce, refuse",
            "tools.pay.onAmbiguous: 'guess' is not allowed; allowed: redispatch, hold");
  }

  @Test
  void shouldReportBadLaneMaxAttemptsAndBypass() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: write-idempotent, connector: http, lane: 'a b', maxAttempts: 0, bypass: maybe}\n")
                .problems())
        .containsExactly(
            "tools.pay.lane: 'a b' is not a legal lane; allowed: 1-200 of A-Z a-z 0-9 . _ -",
            "tools.pay.maxAttempts: '0' is not allowed; use a whole number of at least 1",
            "tools.pay.bypass: 'maybe' is not allowed; use true or false");
  }

  @Test
  void shouldRefuseIrreversibleToolThatRedispatchesAmbiguity() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: irreversible, connector: http, onAmbiguous: redispatch}\n")
                .problems())
        .containsExactly(
            "tools.pay.onAmbiguous: 'redispatch' conflicts with class 'irreversible'; an irreversible effect that may have happened is held (use hold)");
  }

  @Test
  void shouldReportUnknownFieldsAndKeys() {
    assertThat(
            problemsOf("tool:\n  x: 1\ntools:\n  pay: {class: read, connector: http, windw: 1h}\n")
                .problems())
        .containsExactly(
            "unknown top-level key 'tool'; allowed: tools, unknownTool",
            "tools.pay.windw: unknown field; allowed: class, window, pendingTimeout, onInFlight, onAmbiguous, lane, connector, maxAttempts, bypass, retry, settings, key, downstreamKeyWindow, reconcileWithin");
  }

  @Test
  void shouldCollectProblemsOfEveryToolInOnePass() {
    PolicyException e =
        problemsOf("tools:\n  a: {class: nope, connector: http}\n  b: {class: read}\n");

    assertThat(e.problems()).hasSize(2);
    assertThat(e.getMessage()).startsWith("tools.yaml has 2 problem(s):");
  }

  @Test
  void shouldReportInvalidYamlWithLine() {
    assertThat(problemsOf("tools:\n  a: {class: [\n").problems().get(0))
        .startsWith("is not valid YAML")
        .contains("line");
  }

  @Test
  void shouldReportUnreadableFile() {
    assertThatThrownBy(() -> loader.load(Path.of("does-not-exist.yaml")))
        .isInstanceOf(PolicyException.class)
        .hasMessageContaining("cannot be read");
  }

  @Test
  void shouldParseShortAndIsoDurations() {
    assertThat(Durations.parse("500ms")).contains(Duration.ofMillis(500));
    assertThat(Durations.parse("15m")).contains(Duration.ofMinutes(15));
    assertThat(Durations.parse("7d")).contains(Duration.ofDays(7));
    assertThat(Durations.parse("PT2H")).contains(Duration.ofHours(2));
    assertThat(Durations.parse("2 hours")).isEmpty();
  }

  @Test
  void shouldReadRetryPolicyAndConnectorSettings() {
    ToolPolicy policy =
        parse(
                """
        tools:
          pay:
            class: write-idempotent
            connector: http
            retry: {maxAttempts: 6, base: 50ms, cap: 2s, jitter: 0.5}
            settings: {url: "http://127.0.0.1:1/charge", method: POST}
        """)
            .forTool("pay")
            .orElseThrow();

    assertThat(policy.retry())
        .isEqualTo(new RetryPolicy(6, Duration.ofMillis(50), Duration.ofSeconds(2), 0.5));
    assertThat(policy.settings().path("url").asText()).isEqualTo("http://127.0.0.1:1/charge");
  }

  @Test
  void shouldReportBadRetryFields() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: read, connector: http, retry: {maxAttempts: 0, base: 1s, cap: 10ms, jitter: 2, tries: 3}}\n")
                .problems())
        .containsExactly(
            "tools.pay.retry.tries: unknown field; allowed: maxAttempts, base, cap, jitter",
            "tools.pay.retry.maxAttempts: '0' is not allowed; use a whole number of at least 1",
            "tools.pay.retry.jitter: '2' is not allowed; use a number from 0 to 1");
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: read, connector: http, retry: {base: 1s, cap: 10ms}}\n")
                .problems())
        .containsExactly(
            "tools.pay.retry.cap: '10ms' is below base '1s'; the cap must be at least the base");
  }

  @Test
  void shouldGrowRetryDelayExponentiallyUpToCapWithJitterBelow() {
    RetryPolicy retry = new RetryPolicy(10, Duration.ofMillis(100), Duration.ofSeconds(1), 0.2);

    assertThat(retry.delayBefore(1, 0)).isEqualTo(Duration.ofMillis(100));
    assertThat(retry.delayBefore(2, 0)).isEqualTo(Duration.ofMillis(200));
    assertThat(retry.delayBefore(3, 0)).isEqualTo(Duration.ofMillis(400));
    assertThat(retry.delayBefore(5, 0)).isEqualTo(Duration.ofSeconds(1));
    assertThat(retry.delayBefore(40, 0)).isEqualTo(Duration.ofSeconds(1));
    assertThat(retry.delayBefore(2, 1)).isEqualTo(Duration.ofMillis(160));
  }

  @Test
  void shouldRefuseDurationsOutOfRangeAtLoadNamingTheRange() {
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: irreversible, connector: http, window: 999999999999d, pendingTimeout: 400d,"
                        + " retry: {cap: 2h}}\n")
                .problems())
        .containsExactlyInAnyOrder(
            "tools.pay.window: '999999999999d' is out of range; allowed: up to 3650d",
            "tools.pay.pendingTimeout: '400d' is out of range; allowed: up to 365d",
            "tools.pay.retry.cap: '2h' is out of range; allowed: up to 1h");
  }

  @Test
  void shouldRefuseTheLaneWhoseDispatchTopicIsTheDeadLetterTopic() {
    assertThat(
            problemsOf("tools:\n  pay: {class: irreversible, connector: http, lane: dlq}\n")
                .problems())
        .containsExactly(
            "tools.pay.lane: 'dlq' is reserved: tool-dispatch.dlq is the executors' dead-letter topic;"
                + " choose another lane name");
  }

  @Test
  void shouldAcceptTheLongestWindow() {
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse("tools:\n  pay: {class: irreversible, connector: http, window: 3650d}\n", "t");

    assertThat(policies.forTool("pay").orElseThrow().window().toMillis())
        .isEqualTo(3650L * 86_400_000);
  }

  @Test
  void shouldReadKeyRulesAndReportBadPointers() {
    ToolPolicies policies =
        new ToolPolicyLoader()
            .parse(
                "tools:\n  pay: {class: irreversible, connector: http, key: {ignore: [/reason], require: [/amount, /to]}}\n",
                "t");

    assertThat(policies.forTool("pay").orElseThrow().key())
        .isEqualTo(new ArgumentRules(List.of("/reason"), List.of("/amount", "/to")));
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: irreversible, connector: http, key: {ignore: [reason], also: 1}}\n")
                .problems())
        .containsExactlyInAnyOrder(
            "tools.pay.key.also: unknown field; allowed: ignore, require",
            "tools.pay.key.ignore: 'reason' is not a JSON pointer; write it like /reason or /customer/id");
    assertThat(
            problemsOf(
                    "tools:\n  pay: {class: irreversible, connector: http, key: {ignore: [/a], require: [/a]}}\n")
                .problems())
        .containsExactly("tools.pay.key: argument /a is both ignored (volatile) and required");
  }
}
