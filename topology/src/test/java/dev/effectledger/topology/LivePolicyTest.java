package dev.effectledger.topology;

import static dev.effectledger.topology.LedgerDriver.T0;
import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.KeyDerivation;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestOutputTopic;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Policies applied live through tool-policy, under both guarantees: a tool the applied policy adds
 * is admitted, a shortened window purges entries on time, an older or unreadable document changes
 * nothing, and a change of a tool's key rules never turns a retry into a second effect, whichever
 * rules the retrying client derived its key with.
 */
class LivePolicyTest {

  static final String V1 =
      """
      tools:
        charge_card:
          class: irreversible
          window: 30d
          pendingTimeout: 2m
          lane: payments
          connector: http
          key: {ignore: [/note], require: [/amount]}
      """;

  /** charge_card's note now counts (its key rules changed); create_ticket is new. */
  static final String V2 =
      """
      tools:
        charge_card:
          class: irreversible
          window: 30d
          pendingTimeout: 2m
          lane: payments
          connector: http
          key: {require: [/amount]}
        create_ticket:
          class: write-idempotent
          window: 1h
          pendingTimeout: 1m
          lane: tickets
          connector: http
      """;

  /** create_ticket's window shrinks from 1h to 10m. */
  static final String V3 = V2.replace("window: 1h", "window: 10m");

  @TempDir Path stateDir;
  LedgerDriver ledger;

  static ToolPolicies parse(String yaml) {
    return new ToolPolicyLoader().parse(yaml, "test");
  }

  void start(String guarantee) {
    ledger =
        new LedgerDriver(
            url -> LedgerConfig.of(parse(V1), url).withLivePolicy(true), guarantee, stateDir);
  }

  @AfterEach
  void stop() {
    if (ledger != null) {
      ledger.close();
    }
  }

  static AppliedPolicy applied(String... yamls) {
    AppliedPolicy policy = AppliedPolicy.seed(parse(V1), V1);
    Instant at = T0;
    for (String yaml : yamls) {
      policy = policy.next(parse(yaml), yaml, at, "test");
      at = at.plusSeconds(1);
    }
    return policy;
  }

  /**
   * An intent of {@code tool} for one step, its key derived as a client does under {@code ignore}.
   */
  static ToolIntent intent(String tool, String step, String arguments, List<String> ignore) {
    var tree = ArgumentsHash.parse(arguments);
    return ToolIntent.newBuilder()
        .setIdempotencyKey(KeyDerivation.key("acme", "run-1", step, "", tool, tree, ignore))
        .setTenant("acme")
        .setRunId("run-1")
        .setStepId(step)
        .setTool(tool)
        .setArguments(arguments)
        .setArgumentsHash(ArgumentsHash.of(tree, ignore))
        .setRequestedAt(T0)
        .build();
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void aToolTheAppliedPolicyAddsIsAdmittedWithoutARestart(String guarantee) {
    start(guarantee);
    TestOutputTopic<String, Dispatch> tickets = ledger.dispatches("tickets");
    ledger.send(intent("create_ticket", "t-1", "{\"title\":\"a\"}", List.of()), T0);
    assertThat(ledger.results.readValue().getError().getCode())
        .isEqualTo(ErrorCode.UNKNOWN_TOOL.name());

    ledger.apply(applied(V1, V2), T0.plusSeconds(1));
    ledger.send(intent("create_ticket", "t-2", "{\"title\":\"b\"}", List.of()), T0.plusSeconds(2));

    assertThat(tickets.readValuesToList())
        .extracting(Dispatch::getTool)
        .containsExactly("create_ticket");
    assertThat(ledger.results.readValuesToList()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void anOlderOrUnreadableDocumentChangesNothing(String guarantee) {
    start(guarantee);
    TestOutputTopic<String, Dispatch> tickets = ledger.dispatches("tickets");
    ledger.apply(applied(V1, V2), T0);
    ledger.apply(applied(V1), T0.plusSeconds(1)); // version 1 after version 2
    ledger
        .driver
        .createInputTopic(
            dev.effectledger.schema.Topics.POLICY,
            new org.apache.kafka.common.serialization.StringSerializer(),
            new org.apache.kafka.common.serialization.ByteArraySerializer())
        .pipeInput("policy", "not a policy".getBytes(StandardCharsets.UTF_8), T0.plusSeconds(2));

    ledger.send(intent("create_ticket", "t-1", "{\"title\":\"a\"}", List.of()), T0.plusSeconds(3));

    assertThat(tickets.readValuesToList()).hasSize(1);
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void aShorterWindowPurgesSettledEntriesOnTime(String guarantee) {
    start(guarantee);
    ledger.apply(applied(V1, V2), T0);
    TestOutputTopic<String, Dispatch> tickets = ledger.dispatches("tickets");
    ToolIntent ticket = intent("create_ticket", "t-1", "{\"title\":\"a\"}", List.of());
    ledger.send(ticket, T0);
    ledger.outcome(tickets.readValue(), OutcomeStatus.SUCCEEDED, "{}", T0);
    assertThat(ledger.entry("acme", ticket.getIdempotencyKey())).isNotNull();

    ledger.apply(applied(V1, V2, V3), T0.plusSeconds(60));
    // Stream time past the new window (10 min), well before the old one (1 h).
    ledger.send(
        intent("create_ticket", "t-2", "{\"title\":\"b\"}", List.of()),
        T0.plus(Duration.ofMinutes(11)));
    ledger.driver.advanceWallClockTime(Duration.ofSeconds(2));

    assertThat(ledger.entry("acme", ticket.getIdempotencyKey())).isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void aRetryUnderChangedKeyRulesGetsTheFirstResult(String guarantee) {
    start(guarantee);
    TestOutputTopic<String, Dispatch> payments = ledger.dispatches("payments");
    String args = "{\"amount\":100,\"note\":\"refund for order 7\"}";
    ToolIntent first = intent("charge_card", "s-1", args, List.of("/note"));
    ledger.send(first, T0);
    ledger.outcome(payments.readValue(), OutcomeStatus.SUCCEEDED, "{\"id\":\"ch_1\"}", T0);
    ledger.results.readValuesToList();

    ledger.apply(applied(V1, V2), T0.plusSeconds(10));
    ToolIntent retry = intent("charge_card", "s-1", args, List.of());
    assertThat(retry.getIdempotencyKey()).isNotEqualTo(first.getIdempotencyKey());
    ledger.send(retry, T0.plusSeconds(20));

    assertThat(payments.readValuesToList()).isEmpty();
    ToolResult answer = ledger.results.readValue();
    assertThat(answer.getIdempotencyKey()).isEqualTo(retry.getIdempotencyKey());
    assertThat(answer.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(answer.getReplayed()).isTrue();
    assertThat(answer.getResultJson()).isEqualTo("{\"id\":\"ch_1\"}");
    assertThat(ledger.audit.readValuesToList())
        .extracting(AuditEvent::getCode)
        .contains("KEY_RULES_ALIAS");
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void aClientStillOnTheOldRulesFindsTheStepANewClientStarted(String guarantee) {
    start(guarantee);
    ledger.apply(applied(V1, V2), T0);
    TestOutputTopic<String, Dispatch> payments = ledger.dispatches("payments");
    String args = "{\"amount\":100,\"note\":\"a\"}";
    ledger.send(intent("charge_card", "s-1", args, List.of()), T0.plusSeconds(1));
    assertThat(payments.readValuesToList()).hasSize(1);

    ToolIntent old = intent("charge_card", "s-1", args, List.of("/note"));
    ledger.send(old, T0.plusSeconds(2));

    assertThat(payments.readValuesToList()).isEmpty();
    ToolResult answer = ledger.results.readValue();
    assertThat(answer.getIdempotencyKey()).isEqualTo(old.getIdempotencyKey());
    assertThat(answer.getStatus()).isEqualTo(ResultStatus.IN_FLIGHT);
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void oldRulesPastTheirHorizonAreRefusedNotRunAgain(String guarantee) {
    start(guarantee);
    AppliedPolicy v2 = applied(V1, V2);
    ledger.apply(v2, T0);
    Instant until = v2.keys().get("charge_card").get(1).honouredUntil();
    // 30 d window + 3 dispatches × 2 min pending timeout.
    assertThat(until)
        .isEqualTo(T0.plusSeconds(1).plus(Duration.ofDays(30)).plus(Duration.ofMinutes(6)));
    TestOutputTopic<String, Dispatch> payments = ledger.dispatches("payments");

    ledger.send(
        intent("charge_card", "s-9", "{\"amount\":1,\"note\":\"x\"}", List.of("/note")),
        until.plusSeconds(1));

    assertThat(payments.readValuesToList()).isEmpty();
    assertThat(ledger.results.readValue().getError().getCode())
        .isEqualTo(ErrorCode.ARGUMENTS_HASH_MISMATCH.name());
  }

  @ParameterizedTest
  @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
  void aCallersOwnKeyRetriedUnderChangedRulesIsNotAConflict(String guarantee) {
    start(guarantee);
    TestOutputTopic<String, Dispatch> payments = ledger.dispatches("payments");
    String args = "{\"amount\":100,\"note\":\"a\"}";
    ToolIntent first =
        ToolIntent.newBuilder(intent("charge_card", "s-1", args, List.of("/note")))
            .setIdempotencyKey("callers-own-key")
            .build();
    ledger.send(first, T0);
    ledger.outcome(payments.readValue(), OutcomeStatus.SUCCEEDED, "{\"id\":\"ch_1\"}", T0);
    ledger.results.readValuesToList();

    ledger.apply(applied(V1, V2), T0.plusSeconds(10));
    ToolIntent retry =
        ToolIntent.newBuilder(intent("charge_card", "s-1", args, List.of()))
            .setIdempotencyKey("callers-own-key")
            .build();
    ledger.send(retry, T0.plusSeconds(20));

    assertThat(payments.readValuesToList()).isEmpty();
    ToolResult answer = ledger.results.readValue();
    assertThat(answer.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(answer.getReplayed()).isTrue();
  }
}
