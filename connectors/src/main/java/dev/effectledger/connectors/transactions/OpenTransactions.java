package dev.effectledger.connectors.transactions;

import dev.effectledger.connectors.transactions.HangingTransactions.Decision;
import dev.effectledger.connectors.transactions.HangingTransactions.Hanging;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartition;

/**
 * What the cluster says of the transactions open on partitions, for {@link HangingTransactions}:
 * owns the Admin questions (the partitions' producers, the coordinator's view of a producer,
 * whether the cluster runs transactions v2), each awaited for at most {@link
 * HangingTransactions#ADMIN_TIMEOUT}.
 */
final class OpenTransactions {

  /** The cluster feature whose level 2 is transactions v2 (KIP-890). */
  private static final String TRANSACTION_VERSION = "transaction.version";

  private final Admin admin;
  private final Clock clock;

  private volatile Boolean transactionsV2;

  OpenTransactions(Admin admin, Clock clock) {
    this.admin = admin;
    this.clock = clock;
  }

  /** A transaction open on a partition, with what its coordinator says of its producer. */
  record Open(
      TopicPartition partition,
      ProducerState producer,
      Map<String, TransactionDescription> coordinator) {

    Hanging hanging(Decision decision) {
      return new Hanging(
          partition,
          producer.producerId(),
          (short) producer.producerEpoch(),
          producer.coordinatorEpoch().orElse(0),
          producer.currentTransactionStartOffset().getAsLong(),
          producer.lastTimestamp(),
          decision,
          Set.copyOf(coordinator.keySet()),
          coordinator.entrySet().stream()
              .map(
                  e ->
                      e.getKey()
                          + " ("
                          + e.getValue().state()
                          + " at epoch "
                          + e.getValue().producerEpoch()
                          + ")")
              .collect(Collectors.joining(", ")));
    }
  }

  /**
   * The transactions open on {@code partitions} whose producer has been silent there for longer
   * than {@code silentFor}, each with its coordinator's view. The coordinator is asked once per
   * producer, and only about those: on a busy cluster most open transactions are young, and a sweep
   * asks every 30 s.
   */
  List<Open> open(Collection<TopicPartition> partitions, Duration silentFor) {
    long now = clock.millis();
    Map<Long, Map<String, TransactionDescription>> views = new HashMap<>();
    List<Open> open = new ArrayList<>();
    for (Map.Entry<TopicPartition, List<ProducerState>> e : producers(partitions).entrySet()) {
      for (ProducerState producer : e.getValue()) {
        if (producer.currentTransactionStartOffset().isPresent()
            && (silentFor.isZero() || HangingTransactions.silent(producer, now, silentFor))) {
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

  /** Whether the cluster runs transactions v2 (its finalized {@code transaction.version}). */
  boolean v2() {
    Boolean known = transactionsV2;
    if (known == null) {
      FinalizedVersionRange version =
          await(admin.describeFeatures().featureMetadata(), "describe the cluster's features")
              .finalizedFeatures()
              .get(TRANSACTION_VERSION);
      known = version != null && version.maxVersionLevel() >= 2;
      transactionsV2 = known;
    }
    return known;
  }

  Map<TopicPartition, List<ProducerState>> producers(Collection<TopicPartition> partitions) {
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

  static <T> T await(org.apache.kafka.common.KafkaFuture<T> future, String what) {
    try {
      return future.get(HangingTransactions.ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Could not " + what + ": " + (e.getCause() == null ? e : e.getCause()), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while trying to " + what, e);
    }
  }
}
