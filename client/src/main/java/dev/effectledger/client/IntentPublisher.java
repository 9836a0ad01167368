package dev.effectledger.client;

import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Utils;

/**
 * The one publisher of intents, the client's ({@link ToolCallClient}) and the HTTP gateway's: owns
 * the Kafka producer it is given (the caller sets its timeouts: the gateway fails fast, the client
 * waits as long as Kafka's defaults), turns a call and its derived key into the {@link ToolIntent}
 * it publishes, and knows which reply-topic partition a key's reply lands on.
 */
public final class IntentPublisher {

  private final KafkaProducer<String, ToolIntent> producer;
  private final String intentsTopic;
  private final String replyTopic;
  private final Clock clock;

  private volatile int replyPartitions = -1;

  public IntentPublisher(
      KafkaProducer<String, ToolIntent> producer,
      String intentsTopic,
      String replyTopic,
      Clock clock) {
    this.producer = producer;
    this.intentsTopic = intentsTopic;
    this.replyTopic = replyTopic;
    this.clock = clock;
  }

  /** The intent published for {@code call} under {@code key}, asking for replies on replyTopic. */
  public static ToolIntent intentOf(
      ToolCall call, DerivedKey key, String replyTopic, Instant requestedAt) {
    return ToolIntent.newBuilder()
        .setIdempotencyKey(key.key())
        .setTenant(call.step().tenant())
        .setRunId(call.step().runId())
        .setStepId(call.step().stepId())
        .setTool(call.tool())
        .setArguments(call.argumentsJson())
        .setArgumentsHash(key.argumentsHash())
        .setBusinessScope(call.step().businessScope())
        .setRequestedAt(requestedAt)
        .setReplyTopic(replyTopic)
        .setBypassApproval(call.bypassApproval())
        .setTraceId(call.traceId())
        .build();
  }

  /**
   * Publishes the call's intent with {@code requestId} (see {@link #publish(ToolIntent, String)});
   * completes with its offset once the broker took it.
   */
  public CompletableFuture<Long> publish(ToolCall call, DerivedKey key, String requestId) {
    return publish(intentOf(call, key, replyTopic, clock.instant()), requestId);
  }

  /**
   * Publishes {@code intent} keyed by its idempotency key, with the current span's trace context
   * (else its {@code traceId}'s) in {@code traceparent} headers, {@code requestId} (when not null)
   * in the {@value Topics#REQUEST_ID_HEADER} header, which the ledger copies onto the replies that
   * answer this intent itself; completes with its offset once the broker took it, exceptionally
   * with the producer's error (on the producer's I/O thread: hand long work to another).
   */
  public CompletableFuture<Long> publish(ToolIntent intent, String requestId) {
    RecordHeaders headers = new RecordHeaders();
    if (requestId != null) {
      headers.add(Topics.REQUEST_ID_HEADER, requestId.getBytes(StandardCharsets.UTF_8));
    }
    // W3C trace context: the caller's current span (an agent's tool span, the gateway's call), else
    // the traceparent the call was given; the intent's traceId names the same
    Context trace = Traces.currentOr(intent.getTraceId());
    Traces.inject(trace, headers);
    if (intent.getTraceId() == null) {
      intent.setTraceId(Traces.traceparent(trace)); // a traceId the caller gave stays as given
    }
    CompletableFuture<Long> sent = new CompletableFuture<>();
    try {
      producer.send(
          new ProducerRecord<>(intentsTopic, null, intent.getIdempotencyKey(), intent, headers),
          (metadata, error) -> {
            if (error != null) {
              sent.completeExceptionally(error);
            } else {
              sent.complete(metadata.offset());
            }
          });
    } catch (RuntimeException e) { // a serializer or the producer refusing before sending
      sent.completeExceptionally(e);
    }
    return sent;
  }

  /** The reply-topic partition {@code key}'s reply lands on (fetches metadata the first time). */
  public int replyPartitionOf(String key) {
    if (replyPartitions < 0) {
      replyPartitions = producer.partitionsFor(replyTopic).size();
    }
    return partitionOf(key, replyPartitions);
  }

  /** The partition Kafka's default partitioner gives {@code key} among {@code partitions}. */
  public static int partitionOf(String key, int partitions) {
    return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
  }

  /** Closes the producer, waiting up to {@code wait} for sends still under way. */
  public void close(Duration wait) {
    producer.close(wait);
  }
}
