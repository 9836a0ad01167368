package dev.effectledger.connectors.transactions;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.ApiVersions;
import org.apache.kafka.clients.ClientRequest;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.clients.ClientUtils;
import org.apache.kafka.clients.DefaultHostResolver;
import org.apache.kafka.clients.ManualMetadataUpdater;
import org.apache.kafka.clients.NetworkClient;
import org.apache.kafka.clients.NetworkClientUtils;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersResponseData;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;

/**
 * Writes a <em>commit</em> marker for a hanging transaction on one partition: what its coordinator
 * decided and failed to write there.
 *
 * <p>Hand-written on purpose, on kafka-clients' own network client: the Admin API can only abort a
 * transaction on a partition ({@code Admin.abortTransaction}, which sends a {@code WriteTxnMarkers}
 * request with the result "abort" to the partition's leader), and no library writes a commit
 * marker. This sends the same request with the result "commit", through the client classes the
 * Admin client itself uses ({@code NetworkClient}, built by {@code ClientUtils} from the executor's
 * Kafka settings), so TLS and SASL settings apply as they do to every other client of the executor.
 * Those classes are public but not a stable API: this is written against kafka-clients 4.4.0 (which
 * moved {@code LogContext} to {@code utils.internals}) and {@code HangingTransactionIT} exercises
 * it on a real broker, so an upgrade that breaks it fails there. Like an abort, the request needs
 * the {@code ClusterAction} permission on the cluster where an authorizer is configured.
 */
final class TransactionMarkers implements AutoCloseable {

  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private final NetworkClient client;
  private final Metrics metrics = new Metrics();
  private final Time time = Time.SYSTEM;

  /** A writer that connects with {@code kafka} (any client's settings: bootstrap, security). */
  TransactionMarkers(Properties kafka) {
    Properties props = new Properties();
    props.putAll(kafka);
    AdminClientConfig config = new AdminClientConfig(props);
    LogContext logContext = new LogContext("[transaction-markers] ");
    this.client =
        ClientUtils.createNetworkClient(
            config,
            config.getList(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG),
            "effectledger-transaction-markers",
            metrics,
            "transaction-markers",
            logContext,
            new ApiVersions(),
            time,
            1,
            (int) TIMEOUT.toMillis(),
            null,
            new ManualMetadataUpdater(),
            new DefaultHostResolver(),
            null,
            null);
  }

  /**
   * Writes a commit marker for producer {@code producerId}'s open transaction on {@code partition},
   * whose leader is {@code leader}, at the transaction's {@code epoch} (checked by the leader as an
   * Admin abort is: the producer's epoch there must not be higher) and {@code coordinatorEpoch}.
   *
   * @throws IllegalStateException when the leader cannot be reached or refuses the marker
   */
  synchronized void commit(
      Node leader, TopicPartition partition, long producerId, short epoch, int coordinatorEpoch) {
    WriteTxnMarkersRequestData.WritableTxnMarker marker =
        new WriteTxnMarkersRequestData.WritableTxnMarker()
            .setProducerId(producerId)
            .setProducerEpoch(epoch)
            .setCoordinatorEpoch(coordinatorEpoch)
            .setTransactionResult(true);
    marker
        .topics()
        .add(
            new WriteTxnMarkersRequestData.WritableTxnMarkerTopic()
                .setName(partition.topic())
                .setPartitionIndexes(List.of(partition.partition())));
    WriteTxnMarkersRequestData data = new WriteTxnMarkersRequestData();
    data.markers().add(marker);
    String what = "write a commit marker for producer " + producerId + " on " + partition;
    ClientResponse response;
    try {
      if (!NetworkClientUtils.awaitReady(client, leader, time, TIMEOUT.toMillis())) {
        throw new IllegalStateException(
            "Could not " + what + ": " + leader + " was not reachable within " + TIMEOUT);
      }
      ClientRequest request =
          client.newClientRequest(
              leader.idString(),
              new WriteTxnMarkersRequest.Builder(data),
              time.milliseconds(),
              true);
      response = NetworkClientUtils.sendAndReceive(client, request, time);
    } catch (IOException e) {
      throw new IllegalStateException("Could not " + what + ": " + e.getMessage(), e);
    }
    Map<Long, Map<TopicPartition, Errors>> errors =
        ((WriteTxnMarkersResponse) response.responseBody()).errorsByProducerId();
    Errors error = errors.getOrDefault(producerId, Map.of()).get(partition);
    if (error == null) {
      throw new IllegalStateException(
          "Could not "
              + what
              + ": the leader's answer named no such marker: "
              + errorsOf(response));
    }
    if (error != Errors.NONE) {
      throw new IllegalStateException(
          "Could not " + what + ": " + error + " (" + error.message() + ")", error.exception());
    }
  }

  private static List<WriteTxnMarkersResponseData.WritableTxnMarkerResult> errorsOf(
      ClientResponse response) {
    return ((WriteTxnMarkersResponse) response.responseBody()).data().markers();
  }

  @Override
  public void close() {
    client.close();
    metrics.close();
  }
}
