package dev.effectledger.bench;

import dev.effectledger.client.IntentPublisher;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.serde.AvroBinarySerde;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A large ledger without running millions of calls: settled entries written straight to the ledger
 * store's changelog before the processors first start, each on the partition its key's intents go
 * to. A processor restores them as it would a store of that size, so what follows a kill (a wipe
 * and a full restore, or a replay of the changelog's tail) is what a ledger that grew by calls
 * would go through. {@code bench/run state} loads by calls instead, and measures the restore from
 * an empty state directory.
 */
final class LedgerPreload {

  private LedgerPreload() {}

  static void write(String bootstrap, String applicationId, int partitions, long entries)
      throws Exception {
    String topic = LedgerStore.changelog(applicationId);
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin
          .createTopics(
              List.of(
                  new NewTopic(topic, partitions, (short) 1)
                      .configs(
                          Map.of(
                              TopicConfig.CLEANUP_POLICY_CONFIG,
                              TopicConfig.CLEANUP_POLICY_COMPACT))))
          .all()
          .get(60, TimeUnit.SECONDS);
    }
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
    AvroBinarySerde<LedgerEntry> serde = new AvroBinarySerde<>(LedgerEntry.class);
    // Settled an hour ago: inside charge_card's window, so nothing expires during the run.
    Instant settled = Instant.now().minus(Duration.ofHours(1));
    long start = System.nanoTime();
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      for (long i = 0; i < entries; i++) {
        String key = "v1:preload-" + i;
        String arguments = "{\"amount\":" + (i % 10_000) + ",\"to\":\"cus_" + i + "\"}";
        LedgerEntry entry =
            LedgerEntry.newBuilder()
                .setIdempotencyKey(key)
                .setTenant("preload")
                .setRunId("run-" + i / 10)
                .setStepId("step-" + i % 10)
                .setTool("charge_card")
                .setEffectKey(key)
                .setArgumentsHash(ArgumentsHash.of(arguments, List.of()))
                .setArguments("")
                .setState(LedgerState.SUCCEEDED)
                .setAttempts(1)
                .setFirstSeenAt(settled.minusMillis(200))
                .setLastDispatchedAt(settled.minusMillis(150))
                .setCompletedAt(settled)
                .setResultJson("{\"id\":\"ch_" + i + "\",\"status\":\"succeeded\"}")
                .setEffectId("ch_" + i)
                .build(); // no incarnation: no intent on tool-intents started these lives

        int partition = IntentPublisher.partitionOf(key, partitions);
        producer.send(
            new ProducerRecord<>(
                topic,
                partition,
                settled.toEpochMilli(),
                LedgerStore.key("preload", key),
                serde.serialize(topic, entry)));
        if (i > 0 && i % 1_000_000 == 0) {
          Bench.say(String.format("failover: preloaded %,d entries", i));
        }
      }
    }
    Bench.say(
        String.format(
            "failover: preloaded %,d entries into %s in %.0f s",
            entries, topic, (System.nanoTime() - start) / 1e9));
  }
}
