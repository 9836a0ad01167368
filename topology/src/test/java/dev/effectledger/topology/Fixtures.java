package dev.effectledger.topology;

import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.TopicCollector;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

/** Shared set-up of the real-broker tests: topics, policy, Streams settings, readers, producers. */
final class Fixtures {

  static final String TOOL = "charge_card";
  static final String LANE = "payments";

  /** A tool on a lane no executor of the tests serves: its dispatches stay PENDING. */
  static final String STALLED_TOOL = "open_ticket";

  static final String STALLED_LANE = "stalled";

  private Fixtures() {}

  /** A policy whose pending timeout never fires during a test, so every dispatch is a first one. */
  static ToolPolicies policies() {
    return ToolPolicies.of(
        irreversible(TOOL, LANE, Duration.ofDays(30), Duration.ofMinutes(30), 3));
  }

  /**
   * Deadlines a test can wait out: {@link #TOOL} with a 20-second window, and {@link #STALLED_TOOL}
   * (nobody answers it) held after a 15-second pending timeout.
   */
  static ToolPolicies shortDeadlinePolicies() {
    return ToolPolicies.of(
        irreversible(TOOL, LANE, Duration.ofSeconds(20), Duration.ofMinutes(30), 3),
        irreversible(STALLED_TOOL, STALLED_LANE, Duration.ofDays(1), Duration.ofSeconds(15), 1));
  }

  private static ToolPolicy irreversible(
      String tool, String lane, Duration window, Duration pendingTimeout, int maxAttempts) {
    return ToolPolicy.builder(tool, ToolClass.IRREVERSIBLE)
        .window(window)
        .pendingTimeout(pendingTimeout)
        .onInFlight(InFlightPolicy.COALESCE)
        .onAmbiguous(AmbiguityPolicy.HOLD)
        .lane(lane)
        .connector("http")
        .maxAttempts(maxAttempts)
        .bypassAllowed(false)
        .build();
  }

  static Map<String, Integer> topics(int partitions) {
    Map<String, Integer> topics = new HashMap<>();
    for (String topic : Topics.fixed()) {
      topics.put(topic, partitions);
    }
    topics.put(Topics.dispatch(LANE), partitions);
    topics.put(Topics.dispatch(STALLED_LANE), partitions);
    return topics;
  }

  static Properties streamsProperties(String bootstrap, String appId, Path stateDir) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    return props; // LedgerTopology.streams adds the ledger's own settings
  }

  static ToolIntent intent(String key, int amount) {
    String args = "{\"amount\":" + amount + ",\"to\":\"cus_" + key + "\"}";
    return ToolIntent.newBuilder()
        .setIdempotencyKey(key)
        .setTenant("acme")
        .setRunId("run-" + key)
        .setStepId("step-1")
        .setTool(TOOL)
        .setArguments(args)
        .setArgumentsHash(ArgumentsHash.of(args, List.of()))
        .setRequestedAt(Instant.now())
        .build();
  }

  static KafkaProducer<String, ToolIntent> intentProducer(String bootstrap, String registryUrl) {
    return intentProducer(bootstrap, registryUrl, Map.of());
  }

  static KafkaProducer<String, ToolIntent> intentProducer(
      String bootstrap, String registryUrl, Map<String, Object> overrides) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    props.putAll(overrides);
    return new KafkaProducer<>(
        props,
        new StringSerializer(),
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), ToolIntent.class));
  }

  /** A producer of outcomes, as an executor publishes them (outside a transaction here). */
  static KafkaProducer<String, Outcome> outcomeProducer(String bootstrap, String registryUrl) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    return new KafkaProducer<>(
        props,
        new StringSerializer(),
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Outcome.class));
  }

  static <V> KafkaConsumer<String, V> committedReader(
      String bootstrap, String group, Deserializer<V> values) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    return new KafkaConsumer<>(props, new StringDeserializer(), values);
  }

  static TopicCollector<ToolResult> results(String bootstrap, String registryUrl) {
    return new TopicCollector<>(
        bootstrap,
        Topics.RESULTS,
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), ToolResult.class));
  }

  static TopicCollector<Dispatch> dispatches(String bootstrap, String registryUrl) {
    return new TopicCollector<>(
        bootstrap,
        Topics.dispatch(LANE),
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Dispatch.class));
  }

  /**
   * What a test can assert about "the ledger kept running": a stream thread that died, or the
   * client reaching ERROR. Its current state alone is not it: a rebalance (a session that timed out
   * on a busy machine, for one) passes through REBALANCING and is not a failure.
   */
  static final class Health {
    final List<Throwable> threadFailures = Collections.synchronizedList(new ArrayList<>());
    final List<KafkaStreams.State> states = Collections.synchronizedList(new ArrayList<>());

    /** Watches {@code streams}; call before {@code start()}. */
    static Health watch(KafkaStreams streams) {
      Health health = new Health();
      streams.setStateListener((now, before) -> health.states.add(now));
      streams.setUncaughtExceptionHandler(
          failure -> {
            health.threadFailures.add(failure);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
          });
      return health;
    }
  }
}
