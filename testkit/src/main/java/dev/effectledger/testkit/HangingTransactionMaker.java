package dev.effectledger.testkit;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitResponse;

/**
 * Leaves a real hanging transaction on a partition: transactional records of a producer appended to
 * a partition that its transaction coordinator never heard of, which is what a coordinator that
 * lost part of its log after a broker's kill -9 leaves behind. Nothing ends it by itself; every
 * read_committed reader of the partition stops before it.
 *
 * <p>A client cannot do this through {@code KafkaProducer} (it always adds the partition to its
 * transaction first), so this sends one produce request of the last version before transactions v2
 * over a plain socket. The broker must not verify transactional appends: start the cluster with
 * {@code transaction.partition.verification.enable=false} ({@link #BROKER_CONFIG}).
 */
public final class HangingTransactionMaker {

  /** The broker setting under which {@link #leaveOpen} works. */
  public static final Map<String, String> BROKER_CONFIG =
      Map.of("transaction.partition.verification.enable", "false");

  private HangingTransactionMaker() {}

  /**
   * Appends {@code keyValues} (a key and a value each, the value null for a tombstone) to {@code
   * partition} of the single broker at {@code bootstrap} in a transaction of producer {@code
   * producerId} at {@code epoch} that nothing will end, each record with {@code timestamp}.
   *
   * @param transactionalId the transactional id the request names (any; the broker does not check
   *     it without an authorizer)
   */
  public static void leaveOpen(
      String bootstrap,
      TopicPartition partition,
      String transactionalId,
      long producerId,
      short epoch,
      long timestamp,
      List<byte[][]> keyValues) {
    SimpleRecord[] records =
        keyValues.stream()
            .map(kv -> new SimpleRecord(timestamp, kv[0], kv[1]))
            .toArray(SimpleRecord[]::new);
    ProduceRequestData.TopicProduceDataCollection topics =
        new ProduceRequestData.TopicProduceDataCollection();
    topics.add(
        new ProduceRequestData.TopicProduceData()
            .setName(partition.topic())
            .setPartitionData(
                List.of(
                    new ProduceRequestData.PartitionProduceData()
                        .setIndex(partition.partition())
                        .setRecords(
                            MemoryRecords.withTransactionalRecords(
                                Compression.NONE, producerId, epoch, 0, records)))));
    short version = ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2;
    ProduceRequest request =
        ProduceRequest.builder(
                new ProduceRequestData()
                    .setAcks((short) -1)
                    .setTimeoutMs(30_000)
                    .setTransactionalId(transactionalId)
                    .setTopicData(topics),
                true)
            .build(version);
    RequestHeader header =
        new RequestHeader(ApiKeys.PRODUCE, version, "hanging-transaction-maker", 1);
    ProduceResponse response =
        (ProduceResponse) send(bootstrap, request.serializeWithHeader(header), header);
    response
        .data()
        .responses()
        .forEach(
            topic ->
                topic
                    .partitionResponses()
                    .forEach(
                        p -> {
                          if (p.errorCode() != Errors.NONE.code()) {
                            throw new IllegalStateException(
                                "The broker refused the open transaction on "
                                    + partition
                                    + ": "
                                    + Errors.forCode(p.errorCode())
                                    + " "
                                    + p.errorMessage()
                                    + " (is transaction.partition.verification.enable false?)");
                          }
                        }));
  }

  /**
   * Leaves {@code offsets} as a pending transactional offset commit of {@code groupId} in a
   * transaction of producer {@code producerId} at {@code epoch} that nothing will end: until it
   * ends, a read_committed consumer's fetch of the group's committed offsets for those partitions
   * waits. Sent to the single broker at {@code bootstrap} (the group's coordinator).
   */
  public static void leaveOffsetsOpen(
      String bootstrap,
      String groupId,
      String transactionalId,
      long producerId,
      short epoch,
      Map<TopicPartition, Long> offsets) {
    Map<String, TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic> topics = new HashMap<>();
    offsets.forEach(
        (tp, offset) ->
            topics
                .computeIfAbsent(
                    tp.topic(),
                    t -> new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic().setName(t))
                .partitions()
                .add(
                    new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition()
                        .setPartitionIndex(tp.partition())
                        .setCommittedOffset(offset)
                        .setCommittedLeaderEpoch(-1)
                        .setCommittedMetadata("")));
    short version = TxnOffsetCommitRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2;
    TxnOffsetCommitRequest request =
        TxnOffsetCommitRequest.Builder.forTopicNames(
                new TxnOffsetCommitRequestData()
                    .setTransactionalId(transactionalId)
                    .setGroupId(groupId)
                    .setProducerId(producerId)
                    .setProducerEpoch(epoch)
                    .setGenerationIdOrMemberEpoch(-1)
                    .setMemberId("")
                    .setTopics(new ArrayList<>(topics.values())),
                false)
            .build(version);
    RequestHeader header =
        new RequestHeader(ApiKeys.TXN_OFFSET_COMMIT, version, "hanging-transaction-maker", 2);
    TxnOffsetCommitResponse response =
        (TxnOffsetCommitResponse) send(bootstrap, request.serializeWithHeader(header), header);
    for (TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic topic :
        response.data().topics()) {
      for (TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition partition :
          topic.partitions()) {
        Errors error = Errors.forCode(partition.errorCode());
        if (error != Errors.NONE) {
          throw new IllegalStateException(
              "The group coordinator refused the open offset commit of "
                  + topic.name()
                  + "-"
                  + partition.partitionIndex()
                  + ": "
                  + error
                  + " (is transaction.partition.verification.enable false?)");
        }
      }
    }
  }

  private static AbstractResponse send(String bootstrap, ByteBuffer payload, RequestHeader header) {
    String first = bootstrap.split(",")[0];
    int colon = first.lastIndexOf(':');
    try (Socket socket =
        new Socket(first.substring(0, colon), Integer.parseInt(first.substring(colon + 1)))) {
      socket.setSoTimeout(30_000);
      DataOutputStream out = new DataOutputStream(socket.getOutputStream());
      byte[] bytes = new byte[payload.remaining()];
      payload.get(bytes);
      out.writeInt(bytes.length);
      out.write(bytes);
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      byte[] answer = new byte[in.readInt()];
      in.readFully(answer);
      return AbstractResponse.parseResponse(ByteBuffer.wrap(answer), header);
    } catch (IOException e) {
      throw new IllegalStateException("Could not send a produce request to " + first, e);
    }
  }
}
