package dev.effectledger.connectors.executor.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Start markers for effects whose connector cannot take a repeat (the downstream ignores keys and
 * is not transactional). Before such an effect runs, the executor commits a marker for its
 * dispatch (effect key and attempt) to {@code tool-attempts.<lane>}, in the partition of the
 * dispatch, in a transaction that also commits the consumer offsets with the group's generation
 * (so a fenced executor cannot start anything). The outcome's transaction writes the marker's
 * tombstone. A dispatch redelivered while its marker is live may already have acted: it is not
 * run again but answered AMBIGUOUS, which the ledger holds as UNKNOWN for the reconciler.
 *
 * <p>The topic is compacted; an executor reads the live markers of each dispatch partition it is
 * assigned. Used by the poll thread only.
 */
public final class AttemptJournal implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(AttemptJournal.class);
  private static final String DISPATCH_PREFIX = "tool-dispatch.";
  private static final String PREFIX = "tool-attempts.";

  private final KafkaConsumer<byte[], byte[]> reader;
  private final Map<TopicPartition, Set<String>> live = new HashMap<>();

  private AttemptJournal(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    this.reader = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /** Creates the journal topics of these lanes where missing, shaped like their dispatch topics. */
  public static AttemptJournal open(Properties kafka, Collection<String> lanes) {
    try (Admin admin = Admin.create(kafka)) {
      List<String> dispatchTopics = lanes.stream().map(lane -> DISPATCH_PREFIX + lane).toList();
      Map<String, TopicDescription> described = admin.describeTopics(dispatchTopics).allTopicNames().get(60, TimeUnit.SECONDS);
      Set<String> existing = admin.listTopics().names().get(60, TimeUnit.SECONDS);
      List<NewTopic> missing = new ArrayList<>();
      for (String lane : lanes) {
        if (existing.contains(PREFIX + lane)) {
          continue;
        }
        TopicDescription dispatch = described.get(DISPATCH_PREFIX + lane);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, dispatch.name());
        var minIsr = admin.describeConfigs(List.of(resource)).all().get(60, TimeUnit.SECONDS).get(resource)
            .get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        missing.add(new NewTopic(PREFIX + lane, dispatch.partitions().size(), (short) dispatch.partitions().get(0).replicas().size())
            .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT,
                TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, minIsr == null ? "1" : minIsr.value(),
                TopicConfig.SEGMENT_MS_CONFIG, Long.toString(Duration.ofHours(1).toMillis()),
                TopicConfig.DELETE_RETENTION_MS_CONFIG, Long.toString(Duration.ofHours(1).toMillis()))));
      }
      if (!missing.isEmpty()) {
        try {
          admin.createTopics(missing).all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) {
            throw e;
          }
        }
      }
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Could not create or check the attempt journal topics " + lanes.stream().map(l -> PREFIX + l)
          .toList() + " (" + e.getMessage() + "); the executor needs them, and the dispatch topics, to start.", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating the attempt journal topics", e);
    }
    return new AttemptJournal(kafka);
  }

  public static String marker(String effectKey, int attempt) {
    return effectKey + "#" + attempt;
  }

  /** True when the dispatch's effect was started by this or an earlier owner and has no outcome yet. */
  public boolean isStarted(TopicPartition dispatch, String marker) {
    return live.getOrDefault(dispatch, Set.of()).contains(marker);
  }

  public ProducerRecord<byte[], byte[]> startRecord(TopicPartition dispatch, String marker, String owner) {
    return new ProducerRecord<>(journalTopic(dispatch), dispatch.partition(), utf8(marker), utf8(owner));
  }

  public ProducerRecord<byte[], byte[]> tombstone(TopicPartition dispatch, String marker) {
    return new ProducerRecord<>(journalTopic(dispatch), dispatch.partition(), utf8(marker), null);
  }

  /** A marker's transaction committed. */
  public void started(TopicPartition dispatch, String marker) {
    live.computeIfAbsent(dispatch, tp -> new HashSet<>()).add(marker);
  }

  /** A tombstone's transaction committed. */
  public void cleared(TopicPartition dispatch, String marker) {
    Set<String> markers = live.get(dispatch);
    if (markers != null) {
      markers.remove(marker);
    }
  }

  /** Reads the live markers of newly assigned dispatch partitions of journalled lanes. */
  public void load(Collection<TopicPartition> dispatchPartitions) {
    List<TopicPartition> journal = dispatchPartitions.stream()
        .map(tp -> new TopicPartition(journalTopic(tp), tp.partition())).toList();
    if (journal.isEmpty()) {
      return;
    }
    dispatchPartitions.forEach(tp -> live.put(tp, new HashSet<>()));
    reader.assign(journal);
    reader.seekToBeginning(journal);
    Map<TopicPartition, Long> ends = reader.endOffsets(journal);
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (journal.stream().anyMatch(tp -> reader.position(tp) < ends.get(tp))) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("Could not read the attempt journal " + journal + " within 2 minutes; is the cluster"
            + " healthy? The executor stops rather than run effects it cannot tell apart from started ones.");
      }
      for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(200))) {
        TopicPartition dispatch = new TopicPartition(DISPATCH_PREFIX + record.topic().substring(PREFIX.length()), record.partition());
        String marker = new String(record.key(), StandardCharsets.UTF_8);
        if (record.value() == null) {
          live.get(dispatch).remove(marker);
        } else {
          live.get(dispatch).add(marker);
        }
      }
    }
    reader.unsubscribe();
    int started = dispatchPartitions.stream().mapToInt(tp -> live.get(tp).size()).sum();
    if (started > 0) {
      log.info("{} effect(s) on {} were started by an earlier owner without an outcome; they will be held as ambiguous, not"
          + " run again", started, dispatchPartitions);
    }
  }

  public void forget(Collection<TopicPartition> dispatchPartitions) {
    dispatchPartitions.forEach(live::remove);
  }

  private static String journalTopic(TopicPartition dispatch) {
    return PREFIX + dispatch.topic().substring(DISPATCH_PREFIX.length());
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    reader.close(CloseOptions.timeout(Duration.ZERO));
  }
}
