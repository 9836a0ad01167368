package dev.effectledger.app.console;

import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Utils;

/**
 * A key's trail in {@value Topics#AUDIT} for the console ({@link ConsoleActions#auditTrail}): which
 * partition holds it, how far back to read, and each event as the row the console shows.
 */
final class ConsoleAuditTrail {

  /** How far back the console reads tool-audit for a key's trail, and how long it may take. */
  private static final Duration AUDIT_READ_LIMIT = Duration.ofSeconds(10);

  private static final int MAX_AUDIT_EVENTS = 200;

  private final Properties kafka;
  private final SchemaRegistry registry;
  private final Duration auditLookback;
  private final Clock clock;

  ConsoleAuditTrail(
      Properties kafka, SchemaRegistry registry, Duration auditLookback, Clock clock) {
    this.kafka = kafka;
    this.registry = registry;
    this.auditLookback = auditLookback;
    this.clock = clock;
  }

  /**
   * The key's audit events of the last {@code console.audit.lookback}, oldest first: read from the
   * one tool-audit partition the key's events go to (keyed by the idempotency key), at most 10 s of
   * reading and the latest 200 events.
   */
  List<Map<String, String>> read(String tenant, String key) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "effectledger-console-audit");
    List<Map<String, String>> events = new ArrayList<>();
    try (KafkaConsumer<String, AuditEvent> consumer =
        new KafkaConsumer<>(
            props, new StringDeserializer(), new RegistryAvroSerde<>(registry, AuditEvent.class))) {
      List<PartitionInfo> partitions = consumer.partitionsFor(Topics.AUDIT);
      TopicPartition tp = new TopicPartition(Topics.AUDIT, partitionOf(key, partitions.size()));
      consumer.assign(List.of(tp));
      var from =
          consumer.offsetsForTimes(Map.of(tp, clock.millis() - auditLookback.toMillis())).get(tp);
      if (from == null) {
        consumer.seekToEnd(List.of(tp));
      } else {
        consumer.seek(tp, from.offset());
      }
      TopicReads.toEnd(
          consumer,
          List.of(tp),
          AUDIT_READ_LIMIT,
          record -> {
            AuditEvent event = record.value();
            if (event != null
                && key.equals(event.getIdempotencyKey())
                && tenant.equals(event.getTenant())) {
              events.add(rowOf(event));
              if (events.size() > MAX_AUDIT_EVENTS) {
                events.remove(0);
              }
            }
          });
    }
    return events;
  }

  /** The tool-audit partition the events keyed by {@code key} go to. */
  static int partitionOf(String key, int partitions) {
    return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
  }

  /** An audit event as the console's trail shows it: absent fields as "". */
  static Map<String, String> rowOf(AuditEvent event) {
    Map<String, String> row = new LinkedHashMap<>();
    row.put("at", event.getAt().toString());
    row.put("type", event.getType().name());
    row.put("state", event.getState() == null ? "" : event.getState().name());
    row.put("attempt", String.valueOf(event.getAttempt()));
    row.put("code", event.getCode() == null ? "" : event.getCode());
    row.put("effectId", event.getEffectId() == null ? "" : event.getEffectId());
    row.put("actor", event.getActor() == null ? "" : event.getActor());
    return row;
  }
}
