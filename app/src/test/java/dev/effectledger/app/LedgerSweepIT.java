package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.testkit.HangingTransactionMaker;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What stalled the single-broker chaos run, made on purpose: a transaction of the ledger's producer
 * hanging on a changelog partition (records open that no coordinator will end, the coordinator's
 * state for the transactional id older than the records: its fate cannot be told). Behind it a
 * restoring task waits forever. The processor's sweep commits it, so that the entries are kept
 * (forgetting them would let a retry run again); the executors' sweep, which aborts what it cannot
 * tell, would have dropped them.
 */
@Tag("integration")
@Timeout(120)
class LedgerSweepIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka =
      KafkaClusterExtension.withBrokers(1, HangingTransactionMaker.BROKER_CONFIG);

  private static final String APP = "ledger-sweep-it";

  @Test
  void shouldCommitAHangingLedgerTransactionWhoseFateIsUnknownOnItsChangelog() throws Exception {
    TopicPartition changelog = new TopicPartition(APP + "-ledger-store-changelog", 0);
    TopicPartition intents = new TopicPartition("tool-intents", 0);
    kafka.createTopics(Map.of(changelog.topic(), 1, intents.topic(), 1));
    String transactionalId = APP + "-0b7f-1";
    TransactionDescription lost = initialised(transactionalId);
    HangingTransactionMaker.leaveOpen(
        kafka.bootstrapServers(),
        changelog,
        transactionalId,
        lost.producerId(),
        (short) lost.producerEpoch(),
        System.currentTimeMillis() - Duration.ofMinutes(10).toMillis(),
        List.of(
            new byte[][] {utf8("key-1"), utf8("entry-1")},
            new byte[][] {utf8("key-2"), utf8("entry-2")}));
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      assertThat(end(admin, changelog, IsolationLevel.READ_COMMITTED)).isZero();

      int ended;
      try (LedgerSweep sweep = new LedgerSweep(streamsSettings(), APP, Duration.ofSeconds(1))) {
        ended = sweep.sweepOnce();
      }

      assertThat(ended).isEqualTo(1);
      // Committed, not aborted: a read_committed reader (a restoring task) reads both entries.
      assertThat(end(admin, changelog, IsolationLevel.READ_COMMITTED))
          .isEqualTo(end(admin, changelog, IsolationLevel.READ_UNCOMMITTED))
          .isGreaterThanOrEqualTo(2);
      assertThat(committedRecords(changelog))
          .as("committed records read from %s (reading stops at 2, or after 20 s)", changelog)
          .isEqualTo(2);
    }
  }

  @Test
  void shouldSweepTheLedgersChangelogsRepliesAndAuditOnly() {
    assertThat(
            LedgerSweep.ledgerTopics(
                List.of(
                    "app-ledger-store-changelog",
                    "app-deadlines-changelog",
                    "app-repartition",
                    "other-ledger-store-changelog",
                    "tool-results",
                    "tool-results.gw-1",
                    "tool-audit",
                    "tool-dispatch.payments",
                    "tool-outcomes"),
                "app"))
        .containsExactly(
            "app-deadlines-changelog",
            "app-ledger-store-changelog",
            "tool-audit",
            "tool-results",
            "tool-results.gw-1");
  }

  @Test
  void shouldWaitTwiceTheTransactionTimeoutAndTheAbortIntervalBeforeCallingATransactionHanging() {
    assertThat(LedgerSweep.silentFor(new Properties())).isEqualTo(Duration.ofSeconds(30));
    Properties longer = new Properties();
    longer.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), "60000");
    assertThat(LedgerSweep.silentFor(longer)).isEqualTo(Duration.ofSeconds(130));
  }

  private static Properties streamsSettings() {
    Properties p = new Properties();
    p.put("bootstrap.servers", kafka.bootstrapServers());
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
    return p;
  }

  private static TransactionDescription initialised(String transactionalId) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", kafka.bootstrapServers());
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
    }
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      return admin
          .describeTransactions(List.of(transactionalId))
          .description(transactionalId)
          .get(30, TimeUnit.SECONDS);
    }
  }

  private static long committedRecords(TopicPartition partition) {
    Properties p = new Properties();
    p.put("bootstrap.servers", kafka.bootstrapServers());
    p.put("isolation.level", "read_committed");
    try (var consumer =
        new org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]>(
            p,
            new org.apache.kafka.common.serialization.ByteArrayDeserializer(),
            new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      long count = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (count < 2 && System.nanoTime() < deadline) {
        count += consumer.poll(Duration.ofMillis(200)).count();
      }
      return count;
    }
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
}
