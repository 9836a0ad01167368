package dev.effectledger.app.demo;

import dev.effectledger.app.demo.DemoWorkload.Action;
import dev.effectledger.app.demo.DemoWorkload.Report;
import dev.effectledger.app.demo.DemoWorkload.Result;
import dev.effectledger.client.CallResult;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads what the ledger and the Kafka connector wrote, once the workload is over. */
final class DemoCounters {
  private final String bootstrap;
  private final String registry;

  DemoCounters(String bootstrap, String registry) {
    this.bootstrap = bootstrap;
    this.registry = registry;
  }

  Report report(Result result, CountingDownstream payments, CountingDownstream receipts) {
    Map<AuditType, Integer> audit = new EnumMap<>(AuditType.class);
    readAll(
        Topics.AUDIT,
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), AuditEvent.class),
        (key, event) -> audit.merge(event.getType(), 1, Integer::sum));
    Map<String, Integer> events = new HashMap<>();
    readAll(
        DemoWorkload.EFFECTS_TOPIC,
        new ByteArrayDeserializer(),
        (key, value) -> events.merge(key, 1, Integer::sum));
    Map<String, Integer> effectsByKey = new HashMap<>();
    List<String> violations = new ArrayList<>();
    int replays = 0;
    int missing = 0;
    for (Action a : result.actions()) {
      int effects =
          switch (a.tool()) {
            case "charge_card" -> payments.effects(a.key());
            case "send_receipt" -> receipts.effects(a.key());
            default -> events.getOrDefault(a.key(), 0);
          };
      effectsByKey.put(a.key(), effects);
      if (effects != 1) {
        violations.add(
            a.tool() + " step-" + a.index() + " (" + a.key() + "): " + effects + " effects");
      }
      for (CallResult r : a.results()) {
        replays += DemoWorkload.replayed(r) ? 1 : 0;
        missing += r instanceof CallResult.StillRunning ? 1 : 0;
      }
    }
    return new Report(
        result.actions().size(),
        result.intentsPublished(),
        result.intentsPublished() - audit.getOrDefault(AuditType.DISPATCHED, 0),
        payments.totalEffects(),
        events.values().stream().mapToInt(Integer::intValue).sum(),
        receipts.totalEffects(),
        replays,
        audit.getOrDefault(AuditType.CONFLICT, 0),
        audit.getOrDefault(AuditType.HELD_UNKNOWN, 0),
        result.heldResolved(),
        missing,
        violations);
  }

  private <V> void readAll(String topic, Deserializer<V> values, BiConsumer<String, V> each) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<String, V> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), values)) {
      if (!TopicReads.wholeTopic(
          consumer,
          topic,
          Duration.ofSeconds(60),
          record -> each.accept(record.key(), record.value()))) {
        throw new IllegalStateException(
            "Could not read " + topic + " to its end within 60 s; is a transaction left open?");
      }
    }
  }
}
