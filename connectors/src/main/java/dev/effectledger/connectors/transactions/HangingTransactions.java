package dev.effectledger.connectors.transactions;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
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
 * find-hanging}.
 *
 * <p>A hanging transaction is ended as its coordinator {@link Decision decided}, when that can
 * still be told (see {@link #decide}): a commit marker when it committed (seen after the single
 * broker's kill -9: the coordinator listed the transaction as {@code CompleteCommit} while its
 * markers never reached two outcome partitions and the group's offsets), an abort marker when it
 * aborted. Kafka's tools only abort ({@code Admin.abortTransaction}); {@link TransactionMarkers}
 * writes the commit. When the decision cannot be told any more, what is safe depends on the
 * partition:
 *
 * <ul>
 *   <li>an outcome or dispatch is aborted: if lost, it is sent again (the ledger's pending timeout,
 *       or the dispatch is redelivered and answered from the attempt journal);
 *   <li>a pending offset commit of this group's executors is committed (see {@link
 *       HangingSweep#sweep});
 *   <li>the attempt journal is repaired first: the {@link
 *       dev.effectledger.connectors.executor.internal.JournalReader} re-commits the start markers
 *       of a hanging transaction before it aborts it.
 * </ul>
 *
 * <p>The coordinator forgets how a transaction ended once its producer initialises again, so an
 * executor restarted under the same transactional id first {@link HangingSweep#settlePredecessor
 * settles} what its predecessor left open.
 */
public final class HangingTransactions implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(HangingTransactions.class);

  static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  /** Coordinator states in which a transaction still ends by itself (or might: unknown). */
  private static final Set<TransactionState> ENDS_BY_ITSELF =
      EnumSet.of(
          TransactionState.ONGOING,
          TransactionState.PREPARE_COMMIT,
          TransactionState.PREPARE_ABORT,
          TransactionState.PREPARE_EPOCH_FENCE,
          TransactionState.UNKNOWN);

  /** What a hanging transaction's coordinator decided, as far as it can still tell. */
  public enum Decision {
    /** It committed: the markers it failed to write on the partition are commit markers. */
    COMMITTED,
    /** It aborted, or the transaction was never one its coordinator could commit. */
    ABORTED,
    /**
     * Its coordinator moved on (a later transaction of the producer, or it no longer knows the
     * producer), or the cluster runs transactions v1, whose epochs do not tell one transaction of a
     * producer from the next.
     */
    UNKNOWN
  }

  /**
   * Records of one producer's transaction, open on a partition since {@code startOffset}.
   *
   * @param transactionalIds the transactional ids the coordinator maps to the producer; empty when
   *     it knows none
   * @param coordinator those ids' states and epochs, described for a log line
   */
  public record Hanging(
      TopicPartition partition,
      long producerId,
      short producerEpoch,
      int coordinatorEpoch,
      long startOffset,
      long lastTimestamp,
      Decision decision,
      Set<String> transactionalIds,
      String coordinator) {

    @Override
    public String toString() {
      return partition
          + " from offset "
          + startOffset
          + ", producer "
          + producerId
          + " epoch "
          + producerEpoch
          + (transactionalIds.isEmpty()
              ? ", unknown to its coordinator"
              : ", transactional id " + coordinator)
          + ", decided: "
          + decision;
    }
  }

  private final Admin admin;
  private final TransactionMarkers markers;
  private final AutoCloseable resources;
  private final Duration after;
  private final OpenTransactions cluster;

  /**
   * @param markers writes commit markers (the Admin API only aborts)
   * @param after how long a producer must have been silent on a partition before its open
   *     transaction there can be hanging
   * @param resources closed with this
   */
  public HangingTransactions(
      Admin admin,
      TransactionMarkers markers,
      Duration after,
      Clock clock,
      AutoCloseable resources) {
    this.admin = admin;
    this.markers = markers;
    this.after = after;
    this.cluster = new OpenTransactions(admin, clock);
    this.resources = resources;
  }

  /**
   * Connects to the cluster of {@code kafka} (a client's settings), its own clients closed with it.
   */
  public static HangingTransactions connect(Properties kafka, Duration after) {
    Admin admin = Admin.create(kafka);
    TransactionMarkers markers = new TransactionMarkers(kafka);
    return new HangingTransactions(
        admin,
        markers,
        after,
        Clock.systemUTC(),
        () -> {
          markers.close();
          admin.close(Duration.ZERO);
        });
  }

  @Override
  public void close() {
    try {
      resources.close();
    } catch (Exception e) {
      log.debug("Closing the hanging-transaction clients failed: {}", e.toString());
    }
  }

  /**
   * The hanging transactions on {@code partitions}.
   *
   * @throws IllegalStateException when the cluster cannot be asked
   */
  public List<Hanging> find(Collection<TopicPartition> partitions) {
    List<Hanging> hanging = new ArrayList<>();
    for (OpenTransactions.Open open : cluster.open(partitions, after)) {
      decide(open.partition(), open.producer(), open.coordinator().values(), cluster.v2())
          .ifPresent(d -> hanging.add(open.hanging(d)));
    }
    return hanging;
  }

  /** Every transaction open on {@code partitions}, hanging or not, described for an error. */
  public List<String> describeOpen(Collection<TopicPartition> partitions) {
    return cluster.open(partitions, Duration.ZERO).stream()
        .map(o -> o.hanging(Decision.UNKNOWN).toString())
        .toList();
  }

  /**
   * Ends {@code hanging} as its coordinator decided: a commit marker when it committed, an abort
   * marker otherwise. Nothing is written when its records are no longer open (checked again first:
   * the same producer, epoch and first offset).
   *
   * @return whether it wrote a marker
   */
  public boolean end(Hanging hanging) {
    return hanging.decision() == Decision.COMMITTED ? commit(hanging) : abort(hanging);
  }

  /**
   * Writes an abort marker for {@code hanging}, unless its records are no longer open.
   *
   * @return whether it aborted
   */
  public boolean abort(Hanging hanging) {
    if (!stillOpen(hanging)) {
      return false;
    }
    OpenTransactions.await(
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
   * Writes a commit marker for {@code hanging}, unless its records are no longer open.
   *
   * @return whether it committed
   */
  public boolean commit(Hanging hanging) {
    if (!stillOpen(hanging)) {
      return false;
    }
    String topic = hanging.partition().topic();
    Node leader =
        OpenTransactions.await(
                admin.describeTopics(List.of(topic)).allTopicNames(), "describe " + topic)
            .get(topic)
            .partitions()
            .get(hanging.partition().partition())
            .leader();
    if (leader == null) {
      throw new IllegalStateException(
          "Could not commit the hanging transaction " + hanging + ": its partition has no leader");
    }
    markers.commit(
        leader,
        hanging.partition(),
        hanging.producerId(),
        hanging.producerEpoch(),
        hanging.coordinatorEpoch());
    return true;
  }

  private boolean stillOpen(Hanging hanging) {
    return cluster
        .producers(List.of(hanging.partition()))
        .getOrDefault(hanging.partition(), List.of())
        .stream()
        .anyMatch(
            p ->
                p.producerId() == hanging.producerId()
                    && p.producerEpoch() == hanging.producerEpoch()
                    && p.currentTransactionStartOffset().orElse(-1) == hanging.startOffset());
  }

  /**
   * The transactions of {@code predecessor}'s producer open on {@code partitions}, silent or not,
   * with what {@code predecessor} (its coordinator's description of {@code transactionalId}) says
   * of each; those it still ends are left out.
   */
  List<Hanging> openOf(
      String transactionalId,
      TransactionDescription predecessor,
      Collection<TopicPartition> partitions) {
    boolean v2 = cluster.v2();
    List<Hanging> hanging = new ArrayList<>();
    for (Map.Entry<TopicPartition, List<ProducerState>> e :
        cluster.producers(partitions).entrySet()) {
      for (ProducerState producer : e.getValue()) {
        if (producer.producerId() == predecessor.producerId()) {
          decide(e.getKey(), producer, List.of(predecessor), v2)
              .ifPresent(
                  d ->
                      hanging.add(
                          new OpenTransactions.Open(
                                  e.getKey(), producer, Map.of(transactionalId, predecessor))
                              .hanging(d)));
        }
      }
    }
    return hanging;
  }

  /** The Admin client this asks with. */
  public Admin admin() {
    return admin;
  }

  /**
   * Whether {@code producer} appended nothing to the partition for longer than {@code after}: a
   * coordinator that knew its open transaction there would have ended it by then.
   */
  static boolean silent(ProducerState producer, long nowMs, Duration after) {
    return nowMs - producer.lastTimestamp() > after.toMillis();
  }

  /**
   * Whether {@code producer}'s open transaction on {@code partition} is hanging, and if so what its
   * coordinator decided; empty when it is not (nothing open) or still ends by itself. {@code
   * coordinator} holds the coordinator's descriptions of the transactional ids mapped to the
   * producer.
   *
   * <p>Under transactions v2 the coordinator bumps a producer's epoch when it ends a transaction
   * (and when a producer initialises), so for records open at epoch {@code e}:
   *
   * <ul>
   *   <li>a transaction ongoing or preparing with the partition in it ends by itself;
   *   <li>{@code PrepareCommit} or {@code CompleteCommit} at {@code e + 1}: the transaction at
   *       {@code e} committed;
   *   <li>{@code PrepareAbort}, {@code CompleteAbort} or {@code PrepareEpochFence} at {@code e +
   *       1}: it aborted;
   *   <li>{@code Ongoing} at {@code e} without the partition: it still ends, and its end is the
   *       partition's too; not hanging yet;
   *   <li>anything else is unknown: a later epoch (the coordinator moved on), and also a state
   *       older than the records ({@code Empty} at {@code e}, say). A coordinator that lost the
   *       tail of its log in a crash shows such a state, and what it lost may be a commit that the
   *       producer saw succeed: it is no evidence that the transaction aborted.
   * </ul>
   *
   * Decisions are written to the coordinator's log, so one it shows is one it made. Under
   * transactions v1 the epoch stays the same from one transaction to the next, and every hanging
   * transaction is unknown.
   */
  static Optional<Decision> decide(
      TopicPartition partition,
      ProducerState producer,
      Collection<TransactionDescription> coordinator,
      boolean transactionsV2) {
    if (producer.currentTransactionStartOffset().isEmpty()) {
      return Optional.empty();
    }
    List<TransactionDescription> same =
        coordinator.stream().filter(d -> d.producerId() == producer.producerId()).toList();
    if (same.stream()
        .anyMatch(
            d -> ENDS_BY_ITSELF.contains(d.state()) && d.topicPartitions().contains(partition))) {
      return Optional.empty();
    }
    if (!transactionsV2) {
      return Optional.of(Decision.UNKNOWN);
    }
    int epoch = producer.producerEpoch();
    for (TransactionDescription d : same) {
      if (d.producerEpoch() == epoch + 1) {
        switch (d.state()) {
          case PREPARE_COMMIT, COMPLETE_COMMIT:
            return Optional.of(Decision.COMMITTED);
          case PREPARE_ABORT, COMPLETE_ABORT, PREPARE_EPOCH_FENCE:
            return Optional.of(Decision.ABORTED);
          default:
            break;
        }
      } else if (d.producerEpoch() == epoch && d.state() == TransactionState.ONGOING) {
        return Optional.empty();
      }
    }
    return Optional.of(Decision.UNKNOWN);
  }
}
