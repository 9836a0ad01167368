package dev.effectledger.connectors.executor.internal;

import dev.effectledger.schema.TopicReads;
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
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the committed markers of newly assigned dispatch partitions into an {@link AttemptJournal}.
 *
 * <p>When to read, and how far, is what makes the journal trustworthy after a crash. The executor
 * reads a partition's markers only once the group's committed offset of that partition is stable (a
 * read_committed consumer's offset fetch waits for any transaction that holds a pending offset
 * commit for the partition, and every transaction that writes a start marker commits the
 * partition's offsets). It then reads the journal partition up to its high watermark, not its last
 * stable offset: a read_committed reader passes an open transaction only once it commits or aborts,
 * so a transaction of a killed executor is waited for (until its successor's {@code
 * initTransactions} or the transaction timeout aborts it) instead of being read past, which would
 * miss the markers committed after it.
 */
public final class JournalReader implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(JournalReader.class);

  /** How long one admin request (offsets, topic descriptions, creation) may take. */
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);

  /** How long reading a journal to its end may take before the executor gives up and stops. */
  private static final Duration LOAD_LIMIT = Duration.ofMinutes(2);

  private final Consumer<byte[], byte[]> reader;
  private final Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks;
  private final Function<Collection<TopicPartition>, List<String>> openTransactions;
  private final Duration limit;
  private final AutoCloseable resources;

  /**
   * @param reader a read_committed consumer without a group, used by the poll thread only
   * @param highWatermarks the end offsets of journal partitions, counting records of open
   *     transactions
   * @param limit how long one load may wait for open transactions to end before it gives up
   */
  public JournalReader(
      Consumer<byte[], byte[]> reader,
      Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks,
      Duration limit,
      AutoCloseable resources) {
    this(reader, highWatermarks, partitions -> List.of(), limit, resources);
  }

  /**
   * @param openTransactions describes the transactions open on journal partitions, for the error
   *     when a load gives up
   */
  public JournalReader(
      Consumer<byte[], byte[]> reader,
      Function<Collection<TopicPartition>, Map<TopicPartition, Long>> highWatermarks,
      Function<Collection<TopicPartition>, List<String>> openTransactions,
      Duration limit,
      AutoCloseable resources) {
    this.reader = reader;
    this.highWatermarks = highWatermarks;
    this.openTransactions = openTransactions;
    this.limit = limit;
    this.resources = resources;
  }

  /**
   * Creates the journal topics of these lanes where missing, shaped like their dispatch topics, and
   * a reader of them.
   */
  public static JournalReader open(Properties kafka, Collection<String> lanes) {
    createTopics(kafka, lanes);
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    KafkaConsumer<byte[], byte[]> reader =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    Admin admin = Admin.create(kafka);
    return new JournalReader(
        reader,
        partitions -> highWatermarks(admin, partitions),
        partitions -> openTransactions(admin, partitions),
        LOAD_LIMIT,
        () -> {
          reader.close(CloseOptions.timeout(Duration.ZERO));
          admin.close(Duration.ZERO);
        });
  }

  /** Reads the committed markers of these dispatch partitions into {@code journal}. */
  public void load(AttemptJournal journal, Collection<TopicPartition> dispatchPartitions) {
    if (dispatchPartitions.isEmpty()) {
      return;
    }
    dispatchPartitions.forEach(journal::assigned);
    List<TopicPartition> partitions =
        dispatchPartitions.stream().map(AttemptJournal::journalPartition).toList();
    Map<TopicPartition, Long> ends = highWatermarks.apply(partitions);
    reader.assign(partitions);
    reader.seekToBeginning(partitions);
    boolean read =
        TopicReads.toOffsets(
            reader,
            ends,
            limit,
            record ->
                journal.apply(
                    new TopicPartition(record.topic(), record.partition()),
                    record.key(),
                    record.value()));
    if (!read) {
      List<String> open = describeOpen(partitions);
      throw new IllegalStateException(
          "Could not read the attempt journal "
              + partitions
              + " to its end within "
              + limit
              + " (a transaction on it stayed open); is the cluster healthy? The executor stops rather than run effects it"
              + " cannot tell apart from started ones; restart it."
              + (open.isEmpty()
                  ? ""
                  : " Open transactions on it: "
                      + String.join("; ", open)
                      + ". One its coordinator no longer lists as ongoing is a hanging transaction left by"
                      + " a broker crash: it never ends by itself. Read docs/operations.md (Honest limits)"
                      + " before aborting it: its start markers may belong to effects that ran."));
    }
    reader.assign(List.of());
    int unanswered = dispatchPartitions.stream().mapToInt(journal::unanswered).sum();
    if (unanswered > 0) {
      log.info(
          "{} effect(s) on {} were started by an earlier owner without a committed outcome; they will be answered from"
              + " a lookup or held as ambiguous, not run again",
          unanswered,
          dispatchPartitions);
    }
  }

  @Override
  public void close() {
    try {
      resources.close();
    } catch (Exception e) {
      log.debug("Closing the attempt journal reader: {}", e.toString());
    }
  }

  /** The open transactions on {@code partitions}, described; empty when they cannot be found. */
  private List<String> describeOpen(Collection<TopicPartition> partitions) {
    try {
      return openTransactions.apply(partitions);
    } catch (RuntimeException e) {
      log.debug("Could not describe the open transactions on {}: {}", partitions, e.toString());
      return List.of();
    }
  }

  /**
   * Each open transaction on {@code partitions}: its producer, epoch and first offset, and the
   * transactional id with the state its coordinator gives it.
   */
  static List<String> openTransactions(Admin admin, Collection<TopicPartition> partitions) {
    try {
      List<String> open = new ArrayList<>();
      Map<TopicPartition, PartitionProducerState> states =
          admin
              .describeProducers(partitions)
              .all()
              .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      for (Map.Entry<TopicPartition, PartitionProducerState> e : states.entrySet()) {
        for (ProducerState producer : e.getValue().activeProducers()) {
          if (producer.currentTransactionStartOffset().isEmpty()) {
            continue;
          }
          String owner =
              admin
                  .listTransactions(
                      new ListTransactionsOptions()
                          .filterProducerIds(Set.of(producer.producerId())))
                  .all()
                  .get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS)
                  .stream()
                  .map(t -> t.transactionalId() + " (" + t.state() + ")")
                  .collect(Collectors.joining(", "));
          open.add(
              e.getKey()
                  + " from offset "
                  + producer.currentTransactionStartOffset().getAsLong()
                  + ", producer "
                  + producer.producerId()
                  + " epoch "
                  + producer.producerEpoch()
                  + (owner.isEmpty() ? "" : ", transactional id " + owner));
        }
      }
      return open;
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("could not describe the producers of " + partitions, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "interrupted while describing the producers of " + partitions, e);
    }
  }

  private static Map<TopicPartition, Long> highWatermarks(
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

  private static void createTopics(Properties kafka, Collection<String> lanes) {
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
