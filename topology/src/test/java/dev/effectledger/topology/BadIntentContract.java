package dev.effectledger.topology;

import static dev.effectledger.topology.LedgerDriver.T0;
import static dev.effectledger.topology.LedgerDriver.header;
import static dev.effectledger.topology.LedgerDriver.intent;
import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.policy.ArgumentRules;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each kind of bad intent goes to tool-intents.dlq untouched, with headers naming the reason and
 * the source offset, gets a REJECTED reply where a key can be read, and the processor keeps going.
 */
abstract class BadIntentContract {

  static final String ARGS = "{\"amount\":1}";

  @TempDir Path stateDir;
  LedgerDriver ledger;

  abstract String processingGuarantee();

  @BeforeEach
  void start() {
    ledger =
        new LedgerDriver(
            url ->
                LedgerConfig.of(LedgerStateMachineContract.POLICIES, url).withMaxArgumentsBytes(64),
            processingGuarantee(),
            stateDir);
  }

  @AfterEach
  void stop() {
    ledger.close();
  }

  private byte[] bytes(ToolIntent intent) {
    return ledger.intentSerde.serialize(Topics.INTENTS, intent);
  }

  private static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  /** Sends one bad record, then a good one, and returns the bad one's dead letter. */
  private TestRecord<byte[], byte[]> deadLetterOf(String key, byte[] value, String expectedCode) {
    ledger.rawIntents.pipeInput(utf8(key), value, T0);
    ledger.send(intent("good-after-bad", LedgerStateMachineContract.CHARGE, ARGS), T0);

    assertThat(ledger.dispatches("payments").readValuesToList())
        .as("the processor keeps running")
        .hasSize(1);
    List<TestRecord<byte[], byte[]>> dead = ledger.deadLetterRecords();
    assertThat(dead).hasSize(1);
    TestRecord<byte[], byte[]> letter = dead.get(0);
    assertThat(letter.value()).as("the raw value, untouched").isEqualTo(value);
    assertThat(header(letter.headers(), "effectledger.error.code")).isEqualTo(expectedCode);
    assertThat(header(letter.headers(), "effectledger.error.message")).isNotBlank();
    assertThat(header(letter.headers(), "effectledger.source.topic")).isEqualTo(Topics.INTENTS);
    assertThat(header(letter.headers(), "effectledger.source.partition")).isEqualTo("0");
    assertThat(header(letter.headers(), "effectledger.source.offset")).isEqualTo("0");
    return letter;
  }

  private ToolResult onlyReply() {
    List<ToolResult> replies = ledger.results.readValuesToList();
    assertThat(replies).hasSize(1);
    assertThat(replies.get(0).getStatus()).isEqualTo(ResultStatus.REJECTED);
    return replies.get(0);
  }

  @Test
  void shouldDeadLetterMalformedBytesAndReplyUnderRecordKey() {
    deadLetterOf("k1", new byte[] {7, 7, 7}, "MALFORMED_RECORD");

    ToolResult reply = onlyReply();
    assertThat(reply.getIdempotencyKey()).isEqualTo("k1");
    assertThat(reply.getError().getCode()).isEqualTo("MALFORMED_RECORD");
    assertThat(reply.getError().getCorrectiveAction()).isNotBlank();
  }

  @Test
  void shouldDeadLetterUnknownSchemaId() {
    deadLetterOf("k1", new byte[] {0, 0, 0, 0x7f, 0x7f, 2, 'x'}, "UNKNOWN_SCHEMA_ID");

    assertThat(onlyReply().getError().getCode()).isEqualTo("UNKNOWN_SCHEMA_ID");
  }

  @Test
  void shouldDeadLetterMissingRecordKeyAndReplyUnderIntentKey() {
    deadLetterOf(
        null, bytes(intent("k1", LedgerStateMachineContract.CHARGE, ARGS).build()), "MISSING_KEY");

    assertThat(onlyReply().getIdempotencyKey())
        .as("the intent's own key can still be answered")
        .isEqualTo("k1");
  }

  @Test
  void shouldDeadLetterEmptyKeyAndEmptyIntentKeyWithoutReply() {
    deadLetterOf(
        "", bytes(intent("", LedgerStateMachineContract.CHARGE, ARGS).build()), "MISSING_KEY");

    assertThat(ledger.results.isEmpty()).as("nothing to reply under").isTrue();
  }

  @Test
  void shouldDeadLetterRecordKeyThatDiffersFromIntentKey() {
    deadLetterOf(
        "someone-else",
        bytes(intent("k1", LedgerStateMachineContract.CHARGE, ARGS).build()),
        "KEY_MISMATCH");

    assertThat(onlyReply().getIdempotencyKey()).isEqualTo("k1");
    assertThat(ledger.entry("acme", "k1")).isNull();
    assertThat(ledger.entry("acme", "someone-else")).isNull();
  }

  @Test
  void shouldDeadLetterArgumentsOverTheSizeLimit() {
    String big = "{\"note\":\"" + "x".repeat(100) + "\"}";
    deadLetterOf(
        "k1",
        bytes(intent("k1", LedgerStateMachineContract.CHARGE, big).build()),
        "ARGUMENTS_TOO_LARGE");

    assertThat(onlyReply().getError().getMessage()).contains("limit is 64");
  }

  @Test
  void shouldDeadLetterArgumentsThatAreNotJson() {
    deadLetterOf(
        "k1",
        bytes(intent("k1", LedgerStateMachineContract.CHARGE, "{\"amount\":").build()),
        "ARGUMENTS_NOT_JSON");

    assertThat(onlyReply().getTool()).isEqualTo(LedgerStateMachineContract.CHARGE);
  }

  @Test
  void shouldDeadLetterAReadToolsArgumentsThatAreNotJson() {
    // A read tool's hash is not checked (nothing is ledgered), so its arguments are only scanned.
    deadLetterOf(
        "k1",
        bytes(intent("k1", LedgerStateMachineContract.LOOKUP, "{\"id\":1} x").build()),
        "ARGUMENTS_NOT_JSON");

    assertThat(onlyReply().getTool()).isEqualTo(LedgerStateMachineContract.LOOKUP);
  }

  @Test
  void shouldDeadLetterTwoJsonValuesAsNotJson() {
    deadLetterOf(
        "k1",
        bytes(intent("k1", LedgerStateMachineContract.CHARGE, "{} {}").build()),
        "ARGUMENTS_NOT_JSON");
  }

  @Test
  void shouldDeadLetterIntentWithMissingRequiredField() {
    deadLetterOf(
        "k1",
        bytes(intent("k1", LedgerStateMachineContract.CHARGE, ARGS).setArgumentsHash("").build()),
        "INVALID_INTENT");

    assertThat(onlyReply().getError().getMessage()).contains("argumentsHash");
  }

  @Test
  void shouldDeadLetterReplyTopicOutsideTheAllowedPattern() {
    deadLetterOf(
        "k1",
        bytes(
            intent("k1", LedgerStateMachineContract.CHARGE, ARGS)
                .setReplyTopic("__consumer_offsets")
                .build()),
        "INVALID_REPLY_TOPIC");

    assertThat(onlyReply().getError().getCode())
        .as("answered on the default topic")
        .isEqualTo("INVALID_REPLY_TOPIC");
  }

  @Test
  void shouldDeadLetterRecordWithoutValue() {
    deadLetterOf("k1", null, "MALFORMED_RECORD");
  }

  /**
   * The first of k0, k1, ... whose partition under Kafka's default partitioner, out of {@code of},
   * is or is not 0.
   */
  private static String keyIn(boolean partitionZero, int of) {
    for (int i = 0; ; i++) {
      String key = "k" + i;
      boolean zero = Utils.toPositive(Utils.murmur2(utf8(key))) % of == 0;
      if (zero == partitionZero) {
        return key;
      }
    }
  }

  @Test
  void shouldDeadLetterAnIntentOutsideItsKeysPartitionNamingThePartitionerToSet() {
    ledger.close();
    ledger =
        new LedgerDriver(
            url ->
                LedgerConfig.of(LedgerStateMachineContract.POLICIES, url).withIntentPartitions(4),
            processingGuarantee(),
            stateDir.resolve("four-partitions"));
    String misplaced = keyIn(false, 4);
    String placed = keyIn(true, 4);

    // The test driver reads every record from partition 0 of tool-intents.
    ledger.send(intent(misplaced, LedgerStateMachineContract.CHARGE, ARGS), T0);
    ledger.send(intent(placed, LedgerStateMachineContract.CHARGE, ARGS), T0);

    assertThat(ledger.dispatches("payments").readValuesToList())
        .extracting(d -> d.getIdempotencyKey())
        .containsExactly(placed);
    List<TestRecord<byte[], byte[]>> dead = ledger.deadLetterRecords();
    assertThat(dead)
        .singleElement()
        .satisfies(
            letter ->
                assertThat(header(letter.headers(), "effectledger.error.code"))
                    .isEqualTo("WRONG_PARTITION"));
    ToolResult reply = onlyReply();
    assertThat(reply.getIdempotencyKey()).isEqualTo(misplaced);
    assertThat(reply.getError().getMessage()).contains("partition 0").contains("of 4");
    assertThat(reply.getError().getCorrectiveAction()).contains("partitioner=murmur2_random");
  }

  @Test
  void shouldDeadLetterAnArgumentsHashThatIsNotTheArgumentsHash() {
    String otherArguments = "{\"amount\":999999}";
    deadLetterOf(
        "k1",
        bytes(
            intent("k1", LedgerStateMachineContract.CHARGE, ARGS)
                .setArgumentsHash(LedgerDriver.hashOf(otherArguments))
                .build()),
        "ARGUMENTS_HASH_MISMATCH");

    ToolResult reply = onlyReply();
    assertThat(reply.getError().getMessage())
        .as("names the hash the arguments have")
        .contains(LedgerDriver.hashOf(ARGS));
    assertThat(reply.getError().getCorrectiveAction()).contains("RFC 8785");
    assertThat(ledger.entry("acme", "k1"))
        .as("no entry for a key whose arguments cannot be trusted")
        .isNull();
  }

  /** The ledger with CHARGE's key rules leaving out /note and requiring /amount. */
  private void restartWithKeyRules() {
    ledger.close();
    Map<String, ToolPolicy> tools = new HashMap<>(LedgerStateMachineContract.POLICIES.tools());
    tools.computeIfPresent(
        LedgerStateMachineContract.CHARGE,
        (name, p) -> p.withKey(new ArgumentRules(List.of("/note"), List.of("/amount"))));
    ToolPolicies policies = new ToolPolicies(tools, Optional.empty());
    ledger =
        new LedgerDriver(
            url -> LedgerConfig.of(policies, url),
            processingGuarantee(),
            stateDir.resolve("key-rules"));
  }

  @Test
  void shouldHashTheArgumentsWithoutTheFieldsTheToolsKeyRulesLeaveOut() {
    restartWithKeyRules();
    String worded = "{\"amount\":1,\"note\":\"refund, as asked\"}";
    String reworded = "{\"amount\":1,\"note\":\"as the customer asked\"}";

    ledger.send(
        intent("k1", LedgerStateMachineContract.CHARGE, worded)
            .setArgumentsHash(LedgerDriver.hashOf(ARGS_WITHOUT_NOTE))
            .build(),
        T0);
    ledger.send(
        intent("k1", LedgerStateMachineContract.CHARGE, reworded)
            .setArgumentsHash(LedgerDriver.hashOf(ARGS_WITHOUT_NOTE))
            .build(),
        T0);
    ledger.send(intent("k2", LedgerStateMachineContract.CHARGE, worded).build(), T0);

    assertThat(ledger.dispatches("payments").readValuesToList())
        .as("the reworded retry is the same action")
        .extracting(d -> d.getIdempotencyKey())
        .containsExactly("k1");
    assertThat(ledger.deadLetterRecords())
        .singleElement()
        .satisfies(
            letter ->
                assertThat(header(letter.headers(), "effectledger.error.code"))
                    .as("hashed with the note that the rules leave out")
                    .isEqualTo("ARGUMENTS_HASH_MISMATCH"));
  }

  static final String ARGS_WITHOUT_NOTE = "{\"amount\":1}";

  @Test
  void shouldDeadLetterAnIntentWithoutAnArgumentTheToolsKeyRulesRequire() {
    restartWithKeyRules();
    String noAmount = "{\"note\":\"x\"}";
    ledger.rawIntents.pipeInput(
        utf8("k1"),
        bytes(
            intent("k1", LedgerStateMachineContract.CHARGE, noAmount)
                .setArgumentsHash(LedgerDriver.hashOf("{}"))
                .build()),
        T0);

    assertThat(ledger.deadLetterRecords())
        .singleElement()
        .satisfies(
            letter ->
                assertThat(header(letter.headers(), "effectledger.error.code"))
                    .isEqualTo("MISSING_REQUIRED_FIELD"));
    assertThat(onlyReply().getError().getMessage()).contains("/amount");
    assertThat(ledger.dispatches("payments").readValuesToList()).isEmpty();
  }

  @Test
  void shouldNotCheckTheArgumentsHashOfReadsWhichTheLedgerDoesNotKeep() {
    ledger.send(
        intent("r1", LedgerStateMachineContract.LOOKUP, ARGS)
            .setArgumentsHash("sha256:whatever")
            .build(),
        T0);

    assertThat(ledger.dispatches("reads").readValuesToList()).hasSize(1);
    assertThat(ledger.deadLetterRecords()).isEmpty();
  }
}
