package dev.effectledger.topology;

import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.WireFormatException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the ledger does when processing a record throws (a bug the record triggers, not bad input
 * the ledger recognises, which it dead-letters itself).
 *
 * <ul>
 *   <li>{@link Result#FAIL} the first {@value #DEFAULT_ATTEMPTS} - 1 times a given record fails:
 *       the task's transaction aborts, nothing of the failed attempt is kept, and the stream thread
 *       (replaced by the processor) processes the record again, since the cause may have passed. A
 *       cause known to pass (a retriable Kafka error, the Schema Registry unreachable) always fails
 *       this way and is not counted.
 *   <li>{@link Result#RESUME} at the {@value #DEFAULT_ATTEMPTS}th failure of the same record: it is
 *       poison. It goes to its topic's dead-letter topic ({@link DeadLetters}: the record, cut if
 *       too large, with the exception's class and message and the source coordinates), and an
 *       intent also gets a {@code REJECTED} reply with code {@code PROCESSING_FAILED}, so that its
 *       caller is not left waiting. Nothing is lost and the partition moves on, instead of a thread
 *       looping on one record for ever.
 * </ul>
 *
 * <p>Failures are counted per source record (topic, partition, offset) in a map kept by the class,
 * not the instance: Kafka Streams creates a handler per stream thread, and the thread that failed
 * is replaced by a new one with a new handler. The map holds at most 10,000 records, the oldest
 * dropped first. Configured by {@link LedgerTopology#streamsProperties}; {@value #ATTEMPTS_CONFIG}
 * changes the number of attempts.
 */
public final class PoisonRecordHandler implements ProcessingExceptionHandler {

  /** How many times one record may fail before it is dead-lettered. */
  public static final String ATTEMPTS_CONFIG = "effectledger.poison.attempts";

  /** Schema Registry URL, for the REJECTED reply to a poison intent. */
  public static final String REGISTRY_URL_CONFIG = "effectledger.schema.registry.url";

  public static final int DEFAULT_ATTEMPTS = 3;

  private static final Logger log = LoggerFactory.getLogger(PoisonRecordHandler.class);
  private static final int TRACKED = 10_000;
  private static final Map<String, Integer> FAILURES =
      Collections.synchronizedMap(
          new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
              return size() > TRACKED;
            }
          });

  private String applicationId = "";
  private int attempts = DEFAULT_ATTEMPTS;
  private RegistryAvroSerde<ToolIntent> intents;
  private RegistryAvroSerde<ToolResult> results;

  @Override
  public void configure(Map<String, ?> configs) {
    applicationId = String.valueOf(configs.get(StreamsConfig.APPLICATION_ID_CONFIG));
    Object configured = configs.get(ATTEMPTS_CONFIG);
    if (configured != null) {
      attempts = Integer.parseInt(configured.toString().trim());
      if (attempts < 1) {
        throw new IllegalArgumentException(
            ATTEMPTS_CONFIG + " must be at least 1, was " + attempts);
      }
    }
    Object registry = configs.get(REGISTRY_URL_CONFIG);
    if (registry != null) {
      // The Streams settings carry the registry's credentials (basic.auth.*, bearer.auth.*).
      var schemas = SchemaRegistries.forUrl(registry.toString(), configs);
      intents = new RegistryAvroSerde<>(schemas, ToolIntent.class);
      results = new RegistryAvroSerde<>(schemas, ToolResult.class);
    }
  }

  @Override
  public Response handleError(
      ErrorHandlerContext context, Record<?, ?> record, Exception exception) {
    String where = context.topic() + "-" + context.partition() + "@" + context.offset();
    if (passes(exception)) {
      log.warn(
          "Processing {} failed on a cause that passes ({}); the stream thread will process it again",
          where,
          exception.toString());
      return Response.fail();
    }
    String id = applicationId + "/" + where;
    int failures = FAILURES.merge(id, 1, Integer::sum);
    if (failures < attempts) {
      log.warn(
          "Processing {} failed ({} of {} attempts): {}; the stream thread will process it again",
          where,
          failures,
          attempts,
          exception.toString());
      return Response.fail();
    }
    FAILURES.remove(id);
    log.error(
        "Processing {} failed {} times: dead-lettering it as poison and moving on. Report this with the dead letter's"
            + " headers: it is a bug.",
        where,
        failures,
        exception);
    return Response.resume(poisonRecords(context, exception));
  }

  private List<ProducerRecord<byte[], byte[]>> poisonRecords(
      ErrorHandlerContext context, Exception exception) {
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    String message = exception.getClass().getName() + ": " + exception.getMessage();
    Headers headers =
        DeadLetters.headers(
            ErrorCode.PROCESSING_FAILED.name(),
            message,
            context.topic(),
            context.partition(),
            context.offset());
    byte[] key = context.sourceRawKey();
    records.add(
        new ProducerRecord<>(
            deadLetterTopic(context.topic()),
            null,
            key,
            DeadLetters.bounded(context.sourceRawValue(), headers),
            headers));
    if (Topics.INTENTS.equals(context.topic()) && key != null && results != null) {
      records.add(reply(key, context.sourceRawValue(), context.timestamp()));
    }
    return records;
  }

  /** A REJECTED reply, on the intent's reply topic when the intent can be read. */
  private ProducerRecord<byte[], byte[]> reply(byte[] key, byte[] value, long timestamp) {
    String idempotencyKey = new String(key, StandardCharsets.UTF_8);
    ToolIntent intent = null;
    try {
      intent = value == null ? null : intents.deserialize(Topics.INTENTS, value);
    } catch (RuntimeException e) {
      // unreadable: reply under the record key on the default topic
    }
    String topic =
        intent == null || intent.getReplyTopic() == null ? Topics.RESULTS : intent.getReplyTopic();
    ToolResult result =
        ToolResult.newBuilder()
            .setIdempotencyKey(idempotencyKey)
            .setTenant(intent == null ? "" : intent.getTenant())
            .setTool(intent == null ? "" : intent.getTool())
            .setStatus(ResultStatus.REJECTED)
            .setError(
                ErrorCode.PROCESSING_FAILED.toError(
                    "the ledger failed on this intent "
                        + attempts
                        + " times; it was dead-lettered"))
            .setFirstSeenAt(Instant.ofEpochMilli(Math.max(0, timestamp)))
            .build();
    return new ProducerRecord<>(topic, null, key, results.serialize(topic, result));
  }

  private static String deadLetterTopic(String source) {
    return Topics.OUTCOMES.equals(source) ? Topics.OUTCOMES_DLQ : Topics.INTENTS_DLQ;
  }

  /** Causes that pass by themselves: Kafka's retriable errors, the Schema Registry unreachable. */
  private static boolean passes(Throwable exception) {
    for (Throwable t = exception; t != null; t = t.getCause()) {
      if (t instanceof RetriableException
          || t instanceof WireFormatException w
              && w.reason() == WireFormatException.Reason.REGISTRY_UNAVAILABLE) {
        return true;
      }
    }
    return false;
  }
}
