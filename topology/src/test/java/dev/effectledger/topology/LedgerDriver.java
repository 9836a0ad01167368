package dev.effectledger.topology;

import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;

/** A {@link TopologyTestDriver} around the ledger topology, with readable inputs and outputs. */
final class LedgerDriver implements AutoCloseable {

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  final String registryUrl = "mock://ledger-test-" + UUID.randomUUID();
  final SchemaRegistry registry = SchemaRegistries.forUrl(registryUrl);
  final TopologyTestDriver driver;
  final TestInputTopic<String, ToolIntent> intents;
  final TestInputTopic<byte[], byte[]> rawIntents;
  final TestInputTopic<String, Outcome> outcomes;
  final TestOutputTopic<String, ToolResult> results;
  final TestOutputTopic<String, AuditEvent> audit;
  final TestOutputTopic<byte[], byte[]> deadLetters;
  final RegistryAvroSerde<ToolIntent> intentSerde =
      new RegistryAvroSerde<>(registry, ToolIntent.class);
  private final RegistryAvroSerde<Dispatch> dispatchSerde =
      new RegistryAvroSerde<>(registry, Dispatch.class);

  /** The ledger tasks' policies and live counts, as the processor's query API reads them. */
  LivePolicies live;

  LedgerDriver(LedgerConfigFactory configFactory, String guarantee, Path stateDir) {
    this(configFactory, guarantee, stateDir, props -> {});
  }

  /** With {@code extra} Streams settings on top of the test's. */
  LedgerDriver(
      LedgerConfigFactory configFactory,
      String guarantee,
      Path stateDir,
      Consumer<Properties> extra) {
    LedgerConfig config = configFactory.create(registryUrl);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "ledger-test");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    props.put(PoisonRecordHandler.REGISTRY_URL_CONFIG, registryUrl);
    extra.accept(props);
    live = new LivePolicies(dev.effectledger.policy.AppliedPolicy.seed(config.policies(), ""));
    driver =
        new TopologyTestDriver(
            LedgerTopology.build(config, registry, live),
            LedgerTopology.streamsProperties(props),
            T0);
    intents =
        driver.createInputTopic(
            Topics.INTENTS, new StringSerializer(), intentSerde, T0, Duration.ZERO);
    rawIntents =
        driver.createInputTopic(
            Topics.INTENTS,
            new ByteArraySerializer(),
            new ByteArraySerializer(),
            T0,
            Duration.ZERO);
    outcomes =
        driver.createInputTopic(
            Topics.OUTCOMES,
            new StringSerializer(),
            new RegistryAvroSerde<>(registry, Outcome.class),
            T0,
            Duration.ZERO);
    results =
        driver.createOutputTopic(
            Topics.RESULTS,
            new StringDeserializer(),
            new RegistryAvroSerde<>(registry, ToolResult.class));
    audit =
        driver.createOutputTopic(
            Topics.AUDIT,
            new StringDeserializer(),
            new RegistryAvroSerde<>(registry, AuditEvent.class));
    deadLetters =
        driver.createOutputTopic(
            Topics.INTENTS_DLQ, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /** Publishes {@code policy} to tool-policy as {@code effectledger tools apply} does. */
  void apply(dev.effectledger.policy.AppliedPolicy policy, Instant at) {
    driver
        .createInputTopic(
            Topics.POLICY, new StringSerializer(), new ByteArraySerializer(), T0, Duration.ZERO)
        .pipeInput("policy", policy.toJson(), at);
  }

  /** Builds the config once the driver knows its registry URL. */
  interface LedgerConfigFactory {
    LedgerConfig create(String registryUrl);
  }

  TestOutputTopic<String, Dispatch> dispatches(String lane) {
    return driver.createOutputTopic(Topics.dispatch(lane), new StringDeserializer(), dispatchSerde);
  }

  TestOutputTopic<String, ToolResult> results(String topic) {
    return driver.createOutputTopic(
        topic, new StringDeserializer(), new RegistryAvroSerde<>(registry, ToolResult.class));
  }

  /** The store keys the held index lists, as the console reads them. */
  List<String> heldKeys() {
    return HeldKeys.list(driver.getKeyValueStore(LedgerStore.DEADLINES), 1000);
  }

  KeyValueStore<String, LedgerEntry> store() {
    return driver.getKeyValueStore(LedgerStore.NAME);
  }

  LedgerEntry entry(String tenant, String key) {
    return store().get(tenant + "/" + key);
  }

  static ToolIntent.Builder intent(String key, String tool, String arguments) {
    return ToolIntent.newBuilder()
        .setIdempotencyKey(key)
        .setTenant("acme")
        .setRunId("run-1")
        .setStepId("step-" + key)
        .setTool(tool)
        .setArguments(arguments)
        .setArgumentsHash(hashOf(arguments))
        .setRequestedAt(T0);
  }

  /**
   * The arguments' hash as a client derives it (no key rules), or a stand-in for arguments that are
   * not JSON.
   */
  static String hashOf(String arguments) {
    try {
      return ArgumentsHash.of(arguments, List.of());
    } catch (IllegalArgumentException e) {
      return "sha256:not-json";
    }
  }

  void send(ToolIntent intent, Instant at) {
    intents.pipeInput(intent.getIdempotencyKey(), intent, at);
  }

  void send(ToolIntent.Builder intent, Instant at) {
    send(intent.build(), at);
  }

  void outcome(Dispatch dispatch, OutcomeStatus status, String result, Instant at) {
    outcome(
        dispatch,
        status,
        result,
        status == OutcomeStatus.SUCCEEDED ? "fx-" + dispatch.getEffectKey() : null,
        at);
  }

  /** An executor's outcome for {@code dispatch} naming the downstream's {@code effectId}. */
  void outcome(
      Dispatch dispatch, OutcomeStatus status, String result, String effectId, Instant at) {
    outcomes.pipeInput(
        dispatch.getIdempotencyKey(), outcomeOf(dispatch, status, result, effectId, at), at);
  }

  /**
   * The outcome of an executor of this release, which answered the dispatch's reply topics in the
   * outcome's transaction: returns the reply it published.
   */
  ToolResult answered(Dispatch dispatch, OutcomeStatus status, String result, Instant at) {
    Outcome outcome = outcomeOf(dispatch, status, result, "fx-" + dispatch.getEffectKey(), at);
    outcome.setRepliedTo(dispatch.getReplyTopics());
    outcomes.pipeInput(dispatch.getIdempotencyKey(), outcome, at);
    return Replies.settled(dispatch, outcome);
  }

  static Outcome outcomeOf(
      Dispatch dispatch, OutcomeStatus status, String result, String effectId, Instant at) {
    return Outcome.newBuilder()
        .setIdempotencyKey(dispatch.getIdempotencyKey())
        .setTenant(dispatch.getTenant())
        .setTool(dispatch.getTool())
        .setAttempt(dispatch.getAttempt())
        .setStatus(status)
        .setResultJson(result)
        .setEffectId(effectId)
        .setEffectKey(dispatch.getEffectKey())
        .setCompletedAt(at)
        .setReplyTopic(dispatch.getReplyTopic())
        .setIncarnation(dispatch.getIncarnation())
        .setArgumentsHash(dispatch.getArgumentsHash())
        .build();
  }

  List<AuditType> auditTypes() {
    return audit.readValuesToList().stream().map(AuditEvent::getType).toList();
  }

  static String header(Headers headers, String name) {
    return headers.lastHeader(name) == null
        ? null
        : new String(headers.lastHeader(name).value(), StandardCharsets.UTF_8);
  }

  List<TestRecord<byte[], byte[]>> deadLetterRecords() {
    return deadLetters.readRecordsToList();
  }

  @Override
  public void close() {
    driver.close();
  }
}
