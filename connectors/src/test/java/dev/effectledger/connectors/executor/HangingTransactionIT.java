package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.Fixtures;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.policy.AmbiguityPolicy;
import dev.effectledger.policy.InFlightPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.HangingTransactionMaker;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the single-broker chaos runs met after the broker's kill -9, made on purpose with real
 * hanging transactions: an executor's transaction hanging on its attempt journal (with the start
 * markers of effects that ran) and on the outcome topic, its transactional id listed by the
 * coordinator as {@code Empty}; a pending offset commit hanging while its transaction committed
 * elsewhere ({@code CompleteCommit}); a predecessor's committed outcomes hanging. Whatever the
 * executor does, no effect may run twice, and every partition must become readable again.
 */
@Tag("integration")
@Timeout(180)
class HangingTransactionIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka =
      KafkaClusterExtension.withBrokers(1, HangingTransactionMaker.BROKER_CONFIG);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String REGISTRY = "mock://hanging-transaction-it";
  private static final TopicPartition OUTCOMES = new TopicPartition(Topics.OUTCOMES, 0);
  private static int run;

  private String lane;
  private TopicPartition journal;
  private CountingDownstream downstream;
  private TopicCollector<Outcome> outcomes;

  @BeforeEach
  void start() throws Exception {
    lane = "payments" + (++run);
    journal = new TopicPartition(Topics.attempts(lane), 0);
    if (run == 1) {
      kafka.createTopics(Map.of(Topics.OUTCOMES, 1, "tool-dispatch.dlq", 1));
    }
    kafka.createTopics(Map.of(Topics.dispatch(lane), 1));
    kafka
        .cluster()
        .admin()
        .createTopics(
            List.of(
                new NewTopic(journal.topic(), 1, (short) 1)
                    .configs(
                        Map.of(
                            TopicConfig.CLEANUP_POLICY_CONFIG,
                            TopicConfig.CLEANUP_POLICY_COMPACT))))
        .all()
        .get(30, TimeUnit.SECONDS);
    downstream = CountingDownstream.start(Duration.ofSeconds(2)).honoursKeys(false);
    outcomes = Fixtures.outcomes(kafka.bootstrapServers(), REGISTRY);
  }

  @AfterEach
  void stop() {
    outcomes.close();
    downstream.close();
  }

  private ToolPolicies chargeOnAKeyIgnoringApiWithLookup() throws Exception {
    return ToolPolicies.of(
        ToolPolicy.builder("charge", ToolClass.IRREVERSIBLE)
            .window(Duration.ofHours(1))
            .pendingTimeout(Duration.ofMinutes(5))
            .onInFlight(InFlightPolicy.COALESCE)
            .onAmbiguous(AmbiguityPolicy.HOLD)
            .lane(lane)
            .connector("http")
            .maxAttempts(3)
            .bypassAllowed(false)
            .build()
            .withSettings(
                "http",
                JSON.readTree(
                    "{\"url\":\""
                        + downstream.url()
                        + "\",\"timeout\":\"5s\",\"honoursKeys\":false,\"effectIdPointer\":\"/id\","
                        + "\"lookupUrl\":\""
                        + downstream.url()
                        + "?key={key}\"}")));
  }

  /** The producer id and epoch the coordinator gives {@code transactionalId} once initialised. */
  private static TransactionDescription initialised(String transactionalId) throws Exception {
    transactional(transactionalId).close();
    return describe(transactionalId);
  }

  /** The effect the killed executor ran for {@code key}, as its HTTP connector would. */
  private void actOnce(String key) throws Exception {
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(downstream.url()))
                    .header("Idempotency-Key", key)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":100}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isBetween(200, 299);
  }

  /** Whether a read_committed reader can read {@code partition} to its end. */
  private static boolean readable(Admin admin, TopicPartition partition) throws Exception {
    long stable = end(admin, partition, IsolationLevel.READ_COMMITTED);
    long high = end(admin, partition, IsolationLevel.READ_UNCOMMITTED);
    return stable == high;
  }

  private static long end(Admin admin, TopicPartition partition, IsolationLevel isolation)
      throws Exception {
    return admin
        .listOffsets(Map.of(partition, OffsetSpec.latest()), new ListOffsetsOptions(isolation))
        .partitionResult(partition)
        .get(30, TimeUnit.SECONDS)
        .offset();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void shouldRepairAHangingJournalTransactionOfAnotherExecutorWithoutRunningItsEffectsAgain()
      throws Exception {
    // The partition's owner before the crash was executor-0; executor-1 gets it afterwards.
    assertRepairedWithoutASecondEffect("executor-0");
  }

  @Test
  void shouldRepairAHangingJournalTransactionOfItsOwnTransactionalIdWithoutRunningItsEffectsAgain()
      throws Exception {
    // What the chaos run met: the same executor restarted, under the same transactional id.
    assertRepairedWithoutASecondEffect("executor-1");
  }

  @Test
  void shouldCommitAHangingOffsetCommitThatHoldsTheGroupsOffsetsBackWhenItsFateIsUnknown()
      throws Exception {
    ToolPolicies policies = chargeOnAKeyIgnoringApiWithLookup();
    ExecutorConfig config = executorOne(shortTransactions());
    List<String> keys = dispatchThree();
    // A transaction its coordinator lost (the transactional id is Empty at the epoch of its
    // records) left the group's offset of the dispatch partition pending: until it ends, the
    // executor cannot learn where to start (it waits two minutes, then stops). Whether it
    // committed cannot be told; committing the offsets runs nothing again, aborting them could.
    String lostId = config.withInstanceId("executor-0").transactionalId();
    TransactionDescription lost = initialised(lostId);
    HangingTransactionMaker.leaveOffsetsOpen(
        kafka.bootstrapServers(),
        config.groupId(),
        lostId,
        lost.producerId(),
        (short) lost.producerEpoch(),
        Map.of(dispatches(), 3L));

    assertOffsetsCommittedAndNothingBelowReadAgain(config, policies, keys);
  }

  @Test
  void shouldCommitAHangingOffsetCommitWhoseTransactionCommittedAndRunNothingAgain()
      throws Exception {
    // What CI's single-broker chaos run met: an executor's transaction that its coordinator
    // committed (CompleteCommit) while the commit marker never reached the group's offsets. The
    // same transaction removed the journal markers of the dispatches below its offset: aborting the
    // offset commit would have them read again, with no marker, and run a second time.
    ToolPolicies policies = chargeOnAKeyIgnoringApiWithLookup();
    ExecutorConfig config = executorOne(shortTransactions());
    List<String> keys = dispatchThree();
    for (String key : keys) {
      actOnce(key);
    }
    String deadId = config.withInstanceId("executor-0").transactionalId();
    try (KafkaProducer<byte[], byte[]> dead = transactional(deadId)) {
      dead.beginTransaction();
      clearMarkers(dead, keys);
      TransactionDescription ongoing = describe(deadId);
      HangingTransactionMaker.leaveOffsetsOpen(
          kafka.bootstrapServers(),
          config.groupId(),
          deadId,
          ongoing.producerId(),
          (short) ongoing.producerEpoch(),
          Map.of(dispatches(), 3L));
      dead.commitTransaction();
    }
    await("the coordinator showing " + deadId + " CompleteCommit")
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> assertThat(describe(deadId).state()).isEqualTo(TransactionState.COMPLETE_COMMIT));

    assertOffsetsCommittedAndNothingBelowReadAgain(config, policies, keys);
  }

  /**
   * Runs executor-1 until a dispatch sent after {@code keys} is answered: the hanging offset commit
   * (at 3) ended as committed, so the dispatches of {@code keys} below it were not read again.
   */
  private void assertOffsetsCommittedAndNothingBelowReadAgain(
      ExecutorConfig config, ToolPolicies policies, List<String> keys) {
    Map<String, Integer> before =
        keys.stream().collect(Collectors.toMap(k -> k, downstream::requests));
    String after = lane + "-after";
    Fixtures.send(
        kafka.bootstrapServers(),
        REGISTRY,
        List.of(Fixtures.dispatch(after, "charge", lane, "{\"amount\":100}")));

    runUntilAnswered(config, policies, List.of(after));

    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k)).as("not run again").isEqualTo(before.get(k));
              assertThat(outcomes.byKey).as("not read again").doesNotContainKey(k);
            });
    assertThat(downstream.requests(after)).isEqualTo(1);
  }

  @Test
  void shouldCommitTheOutcomesThatThePredecessorsCommittedTransactionLeftOpen() throws Exception {
    // The executor restarted under its transactional id; its predecessor's last transaction
    // committed, but its marker never reached the outcome topic. Once the successor initialises,
    // the coordinator no longer knows how that transaction ended; before, it does.
    ToolPolicies policies = chargeOnAKeyIgnoringApiWithLookup();
    ExecutorConfig config = executorOne(shortTransactions());
    List<String> keys = dispatchThree();
    for (String key : keys) {
      actOnce(key);
    }
    String id = config.transactionalId();
    RegistryAvroSerde<Outcome> serde =
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(REGISTRY), Outcome.class);
    try (KafkaProducer<byte[], byte[]> predecessor = transactional(id)) {
      predecessor.beginTransaction();
      clearMarkers(predecessor, keys);
      predecessor.sendOffsetsToTransaction(
          Map.of(dispatches(), new OffsetAndMetadata(3)),
          new ConsumerGroupMetadata(config.groupId()));
      TransactionDescription ongoing = describe(id);
      HangingTransactionMaker.leaveOpen(
          kafka.bootstrapServers(),
          OUTCOMES,
          id,
          ongoing.producerId(),
          (short) ongoing.producerEpoch(),
          System.currentTimeMillis(),
          keys.stream()
              .map(
                  k ->
                      new byte[][] {
                        utf8(k),
                        serde.serialize(
                            Topics.OUTCOMES,
                            Outcome.newBuilder()
                                .setIdempotencyKey(k)
                                .setEffectKey(k)
                                .setTenant("acme")
                                .setTool("charge")
                                .setAttempt(1)
                                .setStatus(OutcomeStatus.SUCCEEDED)
                                .setEffectId("ch_before_" + k)
                                .setCompletedAt(Instant.now())
                                .build())
                      })
              .toList());
      predecessor.commitTransaction();
    }
    Admin admin = kafka.cluster().admin();
    assertThat(readable(admin, OUTCOMES)).as("the outcomes are held back").isFalse();

    runUntilAnswered(config, policies, keys);

    assertThat(readable(admin, OUTCOMES)).isTrue();
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k)).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .satisfies(o -> assertThat(o.getEffectId()).isEqualTo("ch_before_" + k));
            });
  }

  /**
   * Kafka settings with a 3-second transaction timeout: a transaction is hanging after 16 s of
   * silence, not 30 s.
   */
  private static Properties shortTransactions() {
    Properties kafkaProps = Fixtures.kafka(kafka.bootstrapServers());
    kafkaProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "3000");
    return kafkaProps;
  }

  /** Sends, in {@code producer}'s open transaction, the journal tombstones of {@code keys}. */
  private void clearMarkers(KafkaProducer<byte[], byte[]> producer, List<String> keys)
      throws Exception {
    for (String key : keys) {
      producer.send(new ProducerRecord<>(journal.topic(), 0, utf8(key + "#1"), null)).get();
    }
  }

  /** This test's dispatch partition. */
  private TopicPartition dispatches() {
    return new TopicPartition(Topics.dispatch(lane), 0);
  }

  /** A transactional producer under {@code transactionalId}, initialised. */
  private static KafkaProducer<byte[], byte[]> transactional(String transactionalId) {
    Map<String, Object> props =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ProducerConfig.TRANSACTIONAL_ID_CONFIG,
            transactionalId);
    KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    producer.initTransactions();
    return producer;
  }

  private static TransactionDescription describe(String transactionalId) throws Exception {
    return kafka
        .cluster()
        .admin()
        .describeTransactions(List.of(transactionalId))
        .description(transactionalId)
        .get(30, TimeUnit.SECONDS);
  }

  /**
   * Three dispatches whose starts the executor {@code killedInstance} journalled in a transaction
   * it saw commit, whose effects it ran; the broker then lost the transaction: its records hang on
   * the journal and on the outcome topic. Executor-1 must answer all three from a lookup.
   */
  private void assertRepairedWithoutASecondEffect(String killedInstance) throws Exception {
    ToolPolicies policies = chargeOnAKeyIgnoringApiWithLookup();
    ExecutorConfig config = executorOne(Fixtures.kafka(kafka.bootstrapServers()));
    List<String> keys = dispatchThree();
    String killedId = config.withInstanceId(killedInstance).transactionalId();
    TransactionDescription killed = initialised(killedId);
    for (String key : keys) {
      actOnce(key);
    }
    long longAgo = System.currentTimeMillis() - Duration.ofMinutes(10).toMillis();
    HangingTransactionMaker.leaveOpen(
        kafka.bootstrapServers(),
        journal,
        killedId,
        killed.producerId(),
        (short) killed.producerEpoch(),
        longAgo,
        IntStream.range(0, keys.size())
            .mapToObj(
                i -> new byte[][] {utf8(keys.get(i) + "#1"), utf8("started " + i + " " + killedId)})
            .toList());
    HangingTransactionMaker.leaveOpen(
        kafka.bootstrapServers(),
        OUTCOMES,
        killedId,
        killed.producerId(),
        (short) killed.producerEpoch(),
        longAgo,
        List.<byte[][]>of(new byte[][] {utf8("lost"), utf8("an outcome that never committed")}));
    Admin admin = kafka.cluster().admin();
    assertThat(readable(admin, journal)).as("the journal is held back").isFalse();
    assertThat(readable(admin, OUTCOMES)).as("the outcomes are held back").isFalse();

    runUntilAnswered(config, policies, keys);

    assertThat(readable(admin, journal)).as("the journal's hanging transaction ended").isTrue();
    assertThat(readable(admin, OUTCOMES)).as("the outcomes' hanging transaction ended").isTrue();
    assertEachActedOnceAndSucceeded(keys, "started before the crash: not sent again");
    assertThat(keys)
        .allSatisfy(
            k ->
                assertThat(outcomes.byKey.get(k).get(0).getEffectId())
                    .as("found by lookup")
                    .startsWith("ch_"));
  }

  /** Executor-1 of this test's lane and group. */
  private ExecutorConfig executorOne(Properties kafkaProps) {
    return ExecutorConfig.of(kafkaProps, List.of(lane), REGISTRY)
        .withGroupId("executors-" + lane)
        .withInstanceId("executor-1");
  }

  /** Sends three charge dispatches on this test's lane (offsets 0-2 of its partition 0). */
  private List<String> dispatchThree() {
    List<String> keys = IntStream.range(0, 3).mapToObj(i -> lane + "-k" + i).toList();
    Fixtures.send(
        kafka.bootstrapServers(),
        REGISTRY,
        keys.stream().map(k -> Fixtures.dispatch(k, "charge", lane, "{\"amount\":100}")).toList());
    return keys;
  }

  /** Runs an executor until every one of {@code keys} has an outcome; it must not have failed. */
  private void runUntilAnswered(ExecutorConfig config, ToolPolicies policies, List<String> keys) {
    try (EffectExecutor executor =
        EffectExecutor.start(
            config, Connectors.forLanes(policies, List.of(lane), Clock.systemUTC()), policies)) {
      await("an outcome for each of " + keys)
          .atMost(Duration.ofSeconds(90))
          .untilAsserted(
              () ->
                  assertThat(keys.stream().filter(k -> !outcomes.byKey.containsKey(k)).toList())
                      .as(
                          () ->
                              "keys without an outcome (executor failure: "
                                  + executor.failure()
                                  + ")")
                      .isEmpty());
      assertThat(executor.failure()).isNull();
    }
  }

  /** Each key reached the payment API once and has one SUCCEEDED outcome. */
  private void assertEachActedOnceAndSucceeded(List<String> keys, String why) {
    assertThat(keys)
        .allSatisfy(
            k -> {
              assertThat(downstream.requests(k)).as(why).isEqualTo(1);
              assertThat(outcomes.byKey.get(k))
                  .singleElement()
                  .satisfies(o -> assertThat(o.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED));
            });
  }
}
