package dev.effectledger.connectors.executor.internal;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds and ends <em>hanging</em> transactions: records of a transaction left open on a partition
 * that no transaction coordinator will ever end, because the coordinator no longer knows that the
 * partition is in it (seen after the only broker of a cluster was killed with -9: the coordinator
 * listed the executor's transactional id as {@code Empty} while four partitions held its records
 * open). Nothing ends such a transaction by itself: neither the transaction timeout nor the
 * successor's {@code initTransactions}. Behind it, every read_committed reader of the partition
 * waits forever.
 *
 * <p>A transaction is hanging when the partition has records of it open, the producer appended
 * nothing to the partition for longer than {@code after} (more than a transaction timeout plus the
 * coordinator's abort interval, so a coordinator that knew it would have ended it), and no
 * transactional id the coordinator maps to that producer has an ongoing or preparing transaction
 * with this partition in it. This is the test of Kafka's {@code kafka-transactions.sh
 * find-hanging}; ending one is its {@code abort}: an abort marker written by the partition's
 * leader.
 *
 * <p>Aborting is safe for what readers of an outcome topic see (an outcome lost this way leaves its
 * attempt pending until the ledger's pending timeout, or its dispatch is redelivered and answered
 * from the attempt journal). It is not safe by itself for the attempt journal: the {@link
 * JournalReader} re-commits the start markers of a hanging transaction before it aborts it.
 */
public final class HangingTransactions {

  private static final Logger log = LoggerFactory.getLogger(HangingTransactions.class);

  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  /** Coordinator states in which a transaction still ends by itself (or might: unknown). */
  private static final Set<TransactionState> ENDS_BY_ITSELF =
      EnumSet.of(
          TransactionState.ONGOING,
          TransactionState.PREPARE_COMMIT,
          TransactionState.PREPARE_ABORT,
          TransactionState.PREPARE_EPOCH_FENCE,
          TransactionState.UNKNOWN);

  /**
   * Records of one producer's transaction, open on a partition since {@code startOffset}.
   *
   * @param owner the transactional ids the coordinator maps to the producer, with their states;
   *     empty when it knows none
   */
  public record Hanging(
      TopicPartition partition,
      long producerId,
      short producerEpoch,
      int coordinatorEpoch,
      long startOffset,
      long lastTimestamp,
      String owner) {

    @Override
    public String toString() {
      return partition
          + " from offset "
          + startOffset
          + ", producer "
          + producerId
          + " epoch "
          + producerEpoch
          + (owner.isEmpty() ? ", unknown to its coordinator" : ", transactional id " + owner);
    }
  }

  private final Admin admin;
  private final Duration after;
  private final Clock clock;

  /**
   * @param after how long a producer must have been silent on a partition before its open
   *     transaction there can be hanging
   */
  public HangingTransactions(Admin admin, Duration after, Clock clock) {
    this.admin = admin;
    this.after = after;
    this.clock = clock;
  }

  /**
   * The hanging transactions on {@code partitions}.
   *
   * @throws IllegalStateException when the cluster cannot be asked
   */
  public List<Hanging> find(Collection<TopicPartition> partitions) {
    List<Hanging> hanging = new ArrayList<>();
    for (Open open : open(partitions, after)) {
      if (isHanging(
          open.partition(), open.producer(), open.coordinator().values(), clock.millis(), after)) {
        hanging.add(open.hanging());
      }
    }
    return hanging;
  }

  /** Every transaction open on {@code partitions}, hanging or not, described for an error. */
  public List<String> describeOpen(Collection<TopicPartition> partitions) {
    return open(partitions, Duration.ZERO).stream().map(o -> o.hanging().toString()).toList();
  }

  /**
   * Writes an abort marker for {@code hanging}, unless its records are no longer open (checked
   * again first: the same producer, epoch and first offset).
   *
   * @return whether it aborted
   */
  public boolean abort(Hanging hanging) {
    boolean stillOpen =
        producers(List.of(hanging.partition()))
            .getOrDefault(hanging.partition(), List.of())
            .stream()
            .anyMatch(
                p ->
                    p.producerId() == hanging.producerId()
                        && p.producerEpoch() == hanging.producerEpoch()
                        && p.currentTransactionStartOffset().orElse(-1) == hanging.startOffset());
    if (!stillOpen) {
      return false;
    }
    await(
        admin
            .abortTransaction(
                new AbortTransactionSpec(
                    hanging.partition(),
                    hanging.producerId(),
                    hanging.producerEpoch(),
                    hanging.coordinatorEpoch()))
            .all(),
        "abort the hanging transaction " + hanging);
    return true;
  }

  /**
   * Aborts every hanging transaction on the partitions of {@code topics} and on the partition of
   * {@code __consumer_offsets} that holds {@code groupId}'s offsets (null: none). Only for records
   * that, if lost, are sent again: outcomes and dispatches (the ledger's pending timeout), and a
   * pending offset commit (its dispatches are read again and meet the attempt journal). A hanging
   * offset commit would otherwise hold back every fetch of the group's committed offsets.
   *
   * @return how many it aborted
   */
  public int sweep(Collection<String> topics, String groupId) {
    List<String> described = new ArrayList<>(topics);
    if (groupId != null) {
      described.add(Topic.GROUP_METADATA_TOPIC_NAME);
    }
    Map<String, TopicDescription> descriptions =
        await(admin.describeTopics(described).allTopicNames(), "describe " + described);
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : topics) {
      descriptions.get(topic).partitions().stream()
          .map(p -> new TopicPartition(topic, p.partition()))
          .forEach(partitions::add);
    }
    if (groupId != null) {
      partitions.add(
          new TopicPartition(
              Topic.GROUP_METADATA_TOPIC_NAME,
              Utils.abs(groupId.hashCode())
                  % descriptions.get(Topic.GROUP_METADATA_TOPIC_NAME).partitions().size()));
    }
    int aborted = 0;
    for (Hanging h : find(partitions)) {
      if (abort(h)) {
        aborted++;
        log.warn(
            "Aborted a hanging transaction on {} (left open by a broker crash; no coordinator would"
                + " ever end it, and every read_committed reader of the partition waited behind"
                + " it); the ledger's pending timeout sends a dispatch in it again and answers an"
                + " outcome in it again (by a lookup where the effect may have happened), and the"
                + " dispatches of a pending offset commit in it are read again",
            h);
      }
    }
    return aborted;
  }

  /**
   * Sweeps {@code topics} and {@code groupId}'s offsets (see {@link #sweep}) every {@code
   * interval}, from now, on a daemon thread, until closed. A sweep that fails is logged and tried
   * again at the next.
   */
  public AutoCloseable sweepEvery(Duration interval, Collection<String> topics, String groupId) {
    ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "hanging-transaction-sweep");
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(
        () -> {
          try {
            sweep(topics, groupId);
          } catch (RuntimeException e) {
            log.debug("Sweeping {} for hanging transactions failed: {}", topics, e.toString());
          }
        },
        0,
        interval.toMillis(),
        TimeUnit.MILLISECONDS);
    return timer::shutdownNow;
  }

  /**
   * Whether {@code producer}'s open transaction on {@code partition} is hanging: open, silent for
   * longer than {@code after}, and in no transaction its coordinator still ends by itself ({@code
   * coordinator} holds the coordinator's descriptions of the transactional ids mapped to the
   * producer).
   */
  static boolean isHanging(
      TopicPartition partition,
      ProducerState producer,
      Collection<TransactionDescription> coordinator,
      long nowMs,
      Duration after) {
    if (producer.currentTransactionStartOffset().isEmpty()) {
      return false;
    }
    if (nowMs - producer.lastTimestamp() <= after.toMillis()) {
      return false;
    }
    return coordinator.stream()
        .noneMatch(
            d ->
                d.producerId() == producer.producerId()
                    && ENDS_BY_ITSELF.contains(d.state())
                    && d.topicPartitions().contains(partition));
  }

  /** A transaction open on a partition, with what its coordinator says of its producer. */
  private record Open(
      TopicPartition partition,
      ProducerState producer,
      Map<String, TransactionDescription> coordinator) {

    Hanging hanging() {
      return new Hanging(
          partition,
          producer.producerId(),
          (short) producer.producerEpoch(),
          producer.coordinatorEpoch().orElse(0),
          producer.currentTransactionStartOffset().getAsLong(),
          producer.lastTimestamp(),
          coordinator.entrySet().stream()
              .map(e -> e.getKey() + " (" + e.getValue().state() + ")")
              .collect(Collectors.joining(", ")));
    }
  }

  /**
   * The transactions open on {@code partitions} whose producer has been silent there for at least
   * {@code silentFor}, each with its coordinator's view. The coordinator is asked once per
   * producer, and only about those: on a busy cluster most open transactions are young, and a sweep
   * asks every 30 s.
   */
  private List<Open> open(Collection<TopicPartition> partitions, Duration silentFor) {
    long now = clock.millis();
    Map<Long, Map<String, TransactionDescription>> views = new HashMap<>();
    List<Open> open = new ArrayList<>();
    for (Map.Entry<TopicPartition, List<ProducerState>> e : producers(partitions).entrySet()) {
      for (ProducerState producer : e.getValue()) {
        if (producer.currentTransactionStartOffset().isPresent()
            && now - producer.lastTimestamp() >= silentFor.toMillis()) {
          open.add(
              new Open(
                  e.getKey(),
                  producer,
                  views.computeIfAbsent(producer.producerId(), this::coordinatorView)));
        }
      }
    }
    return open;
  }

  private Map<TopicPartition, List<ProducerState>> producers(
      Collection<TopicPartition> partitions) {
    Map<TopicPartition, PartitionProducerState> states =
        await(admin.describeProducers(partitions).all(), "describe the producers of " + partitions);
    return states.entrySet().stream()
        .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().activeProducers()));
  }

  private Map<String, TransactionDescription> coordinatorView(long producerId) {
    List<String> ids =
        await(
                admin
                    .listTransactions(
                        new ListTransactionsOptions().filterProducerIds(Set.of(producerId)))
                    .all(),
                "list the transactions of producer " + producerId)
            .stream()
            .map(TransactionListing::transactionalId)
            .toList();
    if (ids.isEmpty()) {
      return Map.of();
    }
    return await(admin.describeTransactions(ids).all(), "describe the transactions " + ids);
  }

  private static <T> T await(org.apache.kafka.common.KafkaFuture<T> future, String what) {
    try {
      return future.get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Could not " + what + ": " + (e.getCause() == null ? e : e.getCause()), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while trying to " + what, e);
    }
  }
}
