package dev.effectledger.connectors.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The releaser's side of a release fence on a real broker: the fence lands in the journal partition
 * of the key's dispatches, the partition is read back up to it, and the answer follows what the
 * executor's start markers before it say; a lane without a journal yet gets one shaped like its
 * dispatch topic, for the executor that starts later to read.
 */
@Tag("integration")
class ReleaseFencesIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final String LANE = "fenced";

  @BeforeAll
  static void topics() {
    kafka.createTopics(Map.of(Topics.dispatch(LANE), 3));
  }

  private static Properties props() {
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    return props;
  }

  private static int partitionOf(String key) {
    return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % 3;
  }

  /** An executor's journal record, written as its transactions would leave it, committed. */
  private static void journal(String idempotencyKey, String marker, String value) throws Exception {
    Properties props = props();
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer
          .send(
              new ProducerRecord<>(
                  Topics.attempts(LANE),
                  partitionOf(idempotencyKey),
                  marker.getBytes(StandardCharsets.UTF_8),
                  value == null ? null : value.getBytes(StandardCharsets.UTF_8)))
          .get(30, TimeUnit.SECONDS);
    }
  }

  private static List<ConsumerRecord<byte[], byte[]>> journalRecords(int partition) {
    Properties props = props();
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(Topics.attempts(LANE), partition);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = consumer.endOffsets(List.of(tp)).get(tp);
      List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (consumer.position(tp) < end && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
      assertThat(consumer.position(tp))
          .as("%s read to its end (%s) within 30 s; %s records read", tp, end, records.size())
          .isGreaterThanOrEqualTo(end);
      return records;
    }
  }

  @Test
  @Timeout(120)
  void shouldFenceInTheKeysJournalPartitionAndRefuseOnlyWhileAStartBeforeItIsUnanswered()
      throws Exception {
    try (ReleaseFences fences = new ReleaseFences(props(), "reconciler");
        Admin admin = Admin.create(props())) {
      // no executor has run the lane yet: the journal is made, with the dispatch topic's shape
      ReleaseFences.Life quiet = new ReleaseFences.Life(LANE, "quiet", "quiet", 7);
      assertThat(fences.fence(List.of(quiet))).containsEntry(quiet, ReleaseFences.Fence.RELEASABLE);
      assertThat(
              admin
                  .describeTopics(List.of(Topics.attempts(LANE)))
                  .allTopicNames()
                  .get(30, TimeUnit.SECONDS)
                  .get(Topics.attempts(LANE))
                  .partitions())
          .hasSize(3);
      assertThat(journalRecords(partitionOf("quiet")))
          .anySatisfy(
              r -> {
                assertThat(new String(r.key(), StandardCharsets.UTF_8))
                    .isEqualTo(AttemptJournal.fenceKey("quiet", 7));
                assertThat(new String(r.value(), StandardCharsets.UTF_8))
                    .startsWith("fenced ")
                    .endsWith(" reconciler");
              });

      // a start of the life, not answered: its effect may be under way
      journal("busy", AttemptJournal.marker("busy", 1, 11L), "started 4 executor-a");
      ReleaseFences.Life busy = new ReleaseFences.Life(LANE, "busy", "busy", 11);
      ReleaseFences.Life otherLife = new ReleaseFences.Life(LANE, "busy", "busy", 12);
      assertThat(fences.fence(List.of(busy, otherLife)))
          .containsEntry(busy, ReleaseFences.Fence.STARTED)
          .as("a start of another life is not in the way")
          .containsEntry(otherLife, ReleaseFences.Fence.RELEASABLE);

      // once its executor answered it, the release may go ahead
      journal("busy", AttemptJournal.marker("busy", 1, 11L), "answered 4 effect");
      assertThat(fences.fence(List.of(busy))).containsEntry(busy, ReleaseFences.Fence.RELEASABLE);
    }
  }

  /**
   * A dispatch of the life may still sit in an open transaction on its partition (one whose commit
   * a coordinator skipped there): the fence must outlive it, so its offset is the partition's high
   * watermark, not its last stable offset.
   */
  @Test
  @Timeout(120)
  void shouldKeepTheFenceUntilTheOffsetsPassADispatchStillPendingInATransaction() throws Exception {
    String key = "pending";
    int partition = partitionOf(key);
    Properties props = props();
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "a-ledger-transaction");
    try (KafkaProducer<byte[], byte[]> ledger =
            new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        ReleaseFences fences = new ReleaseFences(props(), "reconciler")) {
      ledger.initTransactions();
      for (int i = 0; i < 2; i++) { // dispatches committed before the one left pending
        ledger.beginTransaction();
        ledger.send(
            new ProducerRecord<>(
                Topics.dispatch(LANE), partition, key.getBytes(), "earlier".getBytes()));
        ledger.commitTransaction();
      }
      ledger.beginTransaction();
      long pendingAt =
          ledger
              .send(
                  new ProducerRecord<>(
                      Topics.dispatch(LANE), partition, key.getBytes(), "dispatch".getBytes()))
              .get(30, TimeUnit.SECONDS)
              .offset();
      ReleaseFences.Life life = new ReleaseFences.Life(LANE, key, key, 3);

      assertThat(fences.fence(List.of(life))).containsEntry(life, ReleaseFences.Fence.RELEASABLE);
      String fence =
          journalRecords(partition).stream()
              .filter(
                  r ->
                      new String(r.key(), StandardCharsets.UTF_8)
                          .equals(AttemptJournal.fenceKey(key, 3)))
              .map(r -> new String(r.value(), StandardCharsets.UTF_8))
              .findFirst()
              .orElseThrow();
      assertThat(Long.parseLong(fence.split(" ")[1]))
          .as("the fence covers the pending dispatch at %d", pendingAt)
          .isGreaterThanOrEqualTo(pendingAt);
      ledger.abortTransaction();
    }
  }
}
