package dev.effectledger.topology;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.AvroBinarySerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import dev.effectledger.topology.internal.IntentProcessor;
import dev.effectledger.topology.internal.OutcomeProcessor;
import dev.effectledger.topology.internal.PolicyProcessor;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The ledger topology: the one factory that {@code main} and the tests call.
 *
 * <pre>
 * tool-intents (bytes) ──▶ intent-processor ──┬──▶ tool-dispatch.&lt;lane&gt;
 *                               │ ledger      ├──▶ tool-results (or the intent's reply topic)
 * tool-outcomes ───────▶ outcome-processor ───┼──▶ tool-audit
 *                                             └──▶ tool-intents.dlq   (intent-processor only)
 * tool-policy ─────────▶ policy-processor         (with LedgerConfig.livePolicy)
 * </pre>
 *
 * Both processors share the RocksDB stores {@value LedgerStore#NAME} and {@value
 * LedgerStore#DEADLINES}, so they run in one task per partition: tool-intents and tool-outcomes
 * must be co-partitioned ({@link CoPartitioning#verify}).
 */
public final class LedgerTopology {

  private static final String INTENTS_SOURCE = "intents-source";
  private static final String OUTCOMES_SOURCE = "outcomes-source";
  private static final String INTENT_PROCESSOR = "intent-processor";
  private static final String OUTCOME_PROCESSOR = "outcome-processor";
  private static final String POLICY_SOURCE = "policy-source";
  private static final String POLICY_PROCESSOR = "policy-processor";

  private LedgerTopology() {}

  /**
   * The ledger as {@code effectledger processor} runs it, not started: the topology of {@code
   * config} in a {@link KafkaStreams} with {@link #streamsProperties(Properties, LedgerConfig)} of
   * {@code props}. The one way main code, tests and the demo make a ledger, so none of them runs a
   * ledger configured otherwise than users run it.
   */
  public static KafkaStreams streams(LedgerConfig config, Properties props) {
    return new KafkaStreams(build(config), streamsProperties(props, config));
  }

  /**
   * {@link #streams(LedgerConfig, Properties)} with its serdes on {@code registry} and its tasks'
   * policies kept in {@code live} (see {@link #build(LedgerConfig, SchemaRegistry, LivePolicies)}).
   */
  public static KafkaStreams streams(
      LedgerConfig config, SchemaRegistry registry, LivePolicies live, Properties props) {
    return new KafkaStreams(build(config, registry, live), streamsProperties(props, config));
  }

  public static Topology build(LedgerConfig config) {
    return build(config, SchemaRegistries.forUrl(config.schemaRegistryUrl()));
  }

  /**
   * The topology with its serdes on {@code registry} (one that authenticates: {@link
   * SchemaRegistries#forUrl(String, java.util.Map)}).
   */
  public static Topology build(LedgerConfig config, SchemaRegistry registry) {
    return build(config, registry, new LivePolicies(AppliedPolicy.seed(config.policies(), "")));
  }

  /**
   * The topology, its tasks' policies kept in {@code live} (which the query API reads to show what
   * each task applies). With {@link LedgerConfig#livePolicy()} it reads {@value Topics#POLICY} too.
   */
  public static Topology build(LedgerConfig config, SchemaRegistry registry, LivePolicies live) {
    LedgerTopics topics = new LedgerTopics(registry);
    Topology topology = new Topology();
    topology.addSource(
        INTENTS_SOURCE,
        Serdes.ByteArray().deserializer(),
        Serdes.ByteArray().deserializer(),
        Topics.INTENTS);
    topology.addSource(
        OUTCOMES_SOURCE,
        topics.outcomes().keySerde().deserializer(),
        topics.outcomes().valueSerde().deserializer(),
        Topics.OUTCOMES);
    topology.addProcessor(
        INTENT_PROCESSOR,
        () -> new IntentProcessor(config, live, topics.intents().valueSerde().deserializer()),
        INTENTS_SOURCE);
    topology.addProcessor(
        OUTCOME_PROCESSOR, () -> new OutcomeProcessor(config, live), OUTCOMES_SOURCE);
    String[] ledgerProcessors = {INTENT_PROCESSOR, OUTCOME_PROCESSOR};
    if (config.livePolicy()) {
      topology.addSource(
          POLICY_SOURCE,
          Serdes.String().deserializer(),
          Serdes.ByteArray().deserializer(),
          Topics.POLICY);
      topology.addProcessor(POLICY_PROCESSOR, () -> new PolicyProcessor(live), POLICY_SOURCE);
      // Intents the ledger routes to another task while a changed key rule is honoured.
      topology.addSink(
          "intents-sink",
          Topics.INTENTS,
          Serdes.ByteArray().serializer(),
          Serdes.ByteArray().serializer(),
          INTENT_PROCESSOR);
      ledgerProcessors = new String[] {INTENT_PROCESSOR, OUTCOME_PROCESSOR, POLICY_PROCESSOR};
      topology.addStateStore(
          Stores.keyValueStoreBuilder(
                  Stores.persistentKeyValueStore(LedgerStore.POLICY),
                  Serdes.String(),
                  Serdes.ByteArray())
              .withCachingDisabled(),
          ledgerProcessors);
    }
    topology.addStateStore(ledgerStore(config.storeCaching()), ledgerProcessors);
    topology.addStateStore(deadlineStore(config.storeCaching()), ledgerProcessors);

    Topic<String, Dispatch> anyLane = topics.dispatch("any");
    topology.addSink(
        "dispatch-sink",
        (key, value, context) -> Topics.dispatch(value.getLane()),
        anyLane.keySerde().serializer(),
        anyLane.valueSerde().serializer(),
        INTENT_PROCESSOR,
        OUTCOME_PROCESSOR);
    topology.addSink(
        "results-sink",
        (key, value, context) ->
            replyTopic(context.headers().lastHeader(Topics.REPLY_TOPIC_HEADER)),
        topics.results().keySerde().serializer(),
        topics.results().valueSerde().serializer(),
        INTENT_PROCESSOR,
        OUTCOME_PROCESSOR);
    topology.addSink(
        "audit-sink",
        Topics.AUDIT,
        topics.audit().keySerde().serializer(),
        topics.audit().valueSerde().serializer(),
        INTENT_PROCESSOR,
        OUTCOME_PROCESSOR);
    topology.addSink(
        "intents-dlq-sink",
        Topics.INTENTS_DLQ,
        Serdes.ByteArray().serializer(),
        Serdes.ByteArray().serializer(),
        INTENT_PROCESSOR);
    return topology;
  }

  /**
   * The ledger's producer batch size, 128 KiB against Kafka's 16 KiB. Per new key the ledger
   * produces three records of a few hundred bytes (dispatch, audit event, the entry's changelog
   * record), so 16 KiB batches fill after a few dozen records and the producer sends, and the
   * broker handles, a request per full batch; with larger batches a commit's records go in fewer
   * requests. Measured with {@code bench/run throughput} beside the ledger at 16 KiB
   * (docs/performance.md). A batch is sent at {@code linger.ms} or the commit, full or not, so this
   * adds no wait at low load; but the producer takes a whole {@code batch.size} buffer from its
   * {@code buffer.memory} (32 MiB) for each partition with an open batch, so a thread writing to
   * hundreds of partitions at once needs more of it (docs/configuration.md).
   */
  public static final int PRODUCER_BATCH_BYTES = 128 * 1024;

  /**
   * How long the ledger's producer holds records before sending them: Kafka Streams' own default,
   * 100 ms, pinned here so that a change of that default does not change the ledger. Under {@code
   * exactly_once_v2} the ledger's records become readable only when its transaction commits, and
   * the commit flushes the producer, so holding them costs no latency: a commit's records then go
   * in one request per broker at the commit instead of many small ones as they are produced (a JFR
   * profile of the latency benchmark at {@code linger.ms=0} had the broker's request handlers spend
   * half their samples appending produce requests). Measured against 0 in docs/performance.md
   * (2026-11-26): on a busy machine the ledger's flush per commit took a half to two thirds as
   * long, on a quiet one the difference was within the noise. Under {@code at_least_once} records
   * are readable once sent, and this bounds their wait to the commit interval or 100 ms, whichever
   * comes first.
   */
  public static final int PRODUCER_LINGER_MS = 100;

  /**
   * Streams settings for the ledger on top of {@code base}: {@code exactly_once_v2} unless {@code
   * base} sets {@code processing.guarantee} (tests run both), outcomes that cannot be deserialized
   * logged and sent to {@value LedgerTopics#OUTCOMES_DLQ} instead of stopping the task, and a
   * record whose processing keeps failing dead-lettered as poison ({@link PoisonRecordHandler}),
   * transactional state stores unless {@code base} turns them off (below), and the producer's
   * {@code batch.size} at {@value #PRODUCER_BATCH_BYTES} bytes and {@code linger.ms} at {@value
   * #PRODUCER_LINGER_MS} unless {@code base} sets them (prefixed with {@code producer.} or not).
   *
   * <p>Transactional state stores ({@code enable.transactional.statestores}, Kafka 4.4, KIP-892): a
   * task's writes stay in a buffer until its commit, and reach RocksDB with the changelog offset
   * they belong to. Without them Kafka Streams cannot tell after kill -9 whether RocksDB holds
   * uncommitted writes, so under {@code exactly_once_v2} it wipes the stores and restores their
   * whole changelogs. With them a restart on its own state replays only what had not reached
   * RocksDB's files (RocksDB runs without its write-ahead log: what its memtables held), whatever
   * the store's size: after kill -9 at 10 million entries every partition answered again 3.0 s
   * after the kill (median of 3), against 18.2 s without them; their cost was within the noise
   * (1.05 of the ledger's throughput without them), 2026-11-29, docs/performance.md. The buffer is
   * bounded by {@code statestore.uncommitted.max.bytes} (64 MiB a process by default; past it a
   * commit comes early). The deadline index is not logged and is rebuilt from the entries at every
   * task start either way.
   */
  public static Properties streamsProperties(Properties base) {
    Properties props = new Properties();
    producerDefault(base, props, ProducerConfig.BATCH_SIZE_CONFIG, PRODUCER_BATCH_BYTES);
    producerDefault(base, props, ProducerConfig.LINGER_MS_CONFIG, PRODUCER_LINGER_MS);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, true);
    props.put(
        StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
        LogAndContinueExceptionHandler.class);
    props.put(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, Topics.OUTCOMES_DLQ);
    props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, PoisonRecordHandler.class);
    props.putAll(base);
    return props;
  }

  /**
   * Puts the ledger's {@code value} for the producer setting {@code key} into {@code props}, unless
   * {@code base} sets it itself, with the {@code producer.} prefix or without: unprefixed, Kafka
   * Streams hands it to the producer, and a prefixed default would override it.
   */
  private static void producerDefault(Properties base, Properties props, String key, int value) {
    String prefixed = StreamsConfig.producerPrefix(key);
    if (!base.containsKey(key) && !base.containsKey(prefixed)) {
      props.put(prefixed, value);
    }
  }

  /**
   * {@link #streamsProperties(Properties)}, with the registry a poison intent's REJECTED reply is
   * written with.
   */
  public static Properties streamsProperties(Properties base, LedgerConfig config) {
    Properties props = streamsProperties(base);
    props.putIfAbsent(PoisonRecordHandler.REGISTRY_URL_CONFIG, config.schemaRegistryUrl());
    return props;
  }

  private static String replyTopic(Header header) {
    return header == null ? Topics.RESULTS : new String(header.value(), StandardCharsets.UTF_8);
  }

  private static StoreBuilder<KeyValueStore<String, LedgerEntry>> ledgerStore(boolean cached) {
    return cached(
        Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(LedgerStore.NAME),
            Serdes.String(),
            // Values without a header: 21 fields (written until 2026-11), 18 (the first release).
            new AvroBinarySerde<>(LedgerEntry.class, 21, 18)),
        cached);
  }

  private static <S extends StateStore> StoreBuilder<S> cached(StoreBuilder<S> store, boolean on) {
    return on ? store.withCachingEnabled() : store.withCachingDisabled();
  }

  private static StoreBuilder<KeyValueStore<Bytes, byte[]>> deadlineStore(boolean cached) {
    return cached(
            Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(LedgerStore.DEADLINES),
                Serdes.Bytes(),
                Serdes.ByteArray()),
            cached)
        // Derivable from the ledger store, and rebuilt from it when a task starts: no changelog.
        .withLoggingDisabled();
  }
}
