package dev.effectledger.connectors.executor.internal;

import dev.effectledger.connectors.transactions.HangingTransactions;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.TopicVisibility;
import dev.effectledger.schema.Topics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The attempt journal's topics on a real cluster: creating them, reading them, and the {@link
 * JournalReader.Repairs repairs} of a hanging transaction on them.
 */
public final class JournalTopics {

  /** How long one admin request (offsets, topic descriptions, creation) may take. */
  static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);

  private JournalTopics() {}

  /** Repairs on a real cluster. */
  record KafkaRepairs(
      HangingTransactions hanging,
      Consumer<byte[], byte[]> uncommitted,
      Producer<byte[], byte[]> producer)
      implements JournalReader.Repairs {

    @Override
    public List<String> describeOpen(Collection<TopicPartition> partitions) {
      return hanging.describeOpen(partitions);
    }

    @Override
    public List<HangingTransactions.Hanging> hanging(Collection<TopicPartition> partitions) {
      return hanging.find(partitions);
    }

    @Override
    public List<ConsumerRecord<byte[], byte[]>> readUncommitted(
        TopicPartition partition, long from, long to) {
      List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
      uncommitted.assign(List.of(partition));
      uncommitted.seek(partition, from);
      boolean read =
          TopicReads.toOffsets(
              uncommitted,
              Map.of(partition, to),
              ADMIN_TIMEOUT,
              r -> {
                if (r.offset() < to) {
                  records.add(r);
                }
              });
      uncommitted.assign(List.of());
      if (!read) {
        throw new IllegalStateException(
            "Could not read "
                + partition
                + " from "
                + from
                + " to "
                + to
                + " within "
                + ADMIN_TIMEOUT);
      }
      return records;
    }

    @Override
    public void recommit(List<ProducerRecord<byte[], byte[]>> records) {
      try {
        producer.beginTransaction();
        records.forEach(producer::send);
        producer.commitTransaction();
      } catch (KafkaException e) {
        try {
          producer.abortTransaction();
        } catch (KafkaException ignored) {
          // the executor's next transaction fails the same way and stops it
        }
        throw new IllegalStateException(
            "Could not commit again the start markers of a hanging transaction ("
                + e
                + "); it is left as it is",
            e);
      }
    }

    @Override
    public boolean end(HangingTransactions.Hanging h) {
      return hanging.end(h);
    }
  }

  /** A consumer of the journal without a group, reading with {@code isolation}. */
  static KafkaConsumer<byte[], byte[]> reader(Properties kafka, String isolation) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /** The end offsets of journal partitions, counting records of open transactions. */
  static Map<TopicPartition, Long> highWatermarks(
      Admin admin, Collection<TopicPartition> partitions) {
    try {
      return admin
          .listOffsets(
              partitions.stream().collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest())),
              new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED))
          .all()
          .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS)
          .entrySet()
          .stream()
          .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Could not read the end offsets of the attempt journal "
              + partitions
              + ": "
              + e.getMessage(),
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "Interrupted while reading the end offsets of the attempt journal", e);
    }
  }

  /** Creates the journal topics of these lanes where missing, shaped like their dispatch topics. */
  public static void create(Properties kafka, Collection<String> lanes) {
    try (Admin admin = Admin.create(kafka)) {
      List<String> dispatchTopics = lanes.stream().map(Topics::dispatch).toList();
      Map<String, TopicDescription> described =
          admin
              .describeTopics(dispatchTopics)
              .allTopicNames()
              .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      Set<String> existing =
          admin.listTopics().names().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      List<NewTopic> missing = new ArrayList<>();
      for (String lane : lanes) {
        if (existing.contains(AttemptJournal.journalTopic(lane))) {
          continue;
        }
        TopicDescription dispatch = described.get(Topics.dispatch(lane));
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, dispatch.name());
        var minIsr =
            admin
                .describeConfigs(List.of(resource))
                .all()
                .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS)
                .get(resource)
                .get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        missing.add(
            new NewTopic(
                    AttemptJournal.journalTopic(lane),
                    dispatch.partitions().size(),
                    (short) dispatch.partitions().get(0).replicas().size())
                .configs(
                    Map.of(
                        TopicConfig.CLEANUP_POLICY_CONFIG,
                        TopicConfig.CLEANUP_POLICY_COMPACT,
                        TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
                        minIsr == null ? "1" : minIsr.value(),
                        TopicConfig.SEGMENT_MS_CONFIG,
                        Long.toString(Duration.ofHours(1).toMillis()),
                        TopicConfig.DELETE_RETENTION_MS_CONFIG,
                        Long.toString(Duration.ofHours(1).toMillis()))));
      }
      if (!missing.isEmpty()) {
        try {
          admin.createTopics(missing).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) {
            throw e;
          }
        }
        TopicVisibility.await(admin, missing.stream().map(NewTopic::name).toList(), ADMIN_TIMEOUT);
      }
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Could not create or check the attempt journal topics "
              + lanes.stream().map(AttemptJournal::journalTopic).toList()
              + " ("
              + e.getMessage()
              + "); the executor needs them, and the dispatch"
              + " topics, to start.",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating the attempt journal topics", e);
    }
  }
}
