package dev.effectledger.bench;

import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Times each measured call of {@code bench/run gateway} at its stages: when its dispatch and when
 * its reply became readable to a read_committed consumer of those topics (fetch wait 5 ms, so the
 * reader itself adds little). Calls are matched by run and step, which the dispatch carries; the
 * reply by the key the dispatch named.
 */
final class HopReader implements AutoCloseable {

  private record Sent(long at, GatewayBench.Tally tally) {}

  private final Map<String, Sent> byStep = new ConcurrentHashMap<>();
  private final Map<String, Sent> byKey = new ConcurrentHashMap<>();
  private final List<String> dispatchTopics;
  private final Thread thread;
  private final KafkaConsumer<String, byte[]> consumer;
  private final RegistryAvroSerde<Dispatch> dispatches;
  private final RegistryAvroSerde<ToolResult> results;
  private volatile boolean running = true;

  private HopReader(
      String bootstrap, String registry, List<String> dispatchTopics, List<String> replyTopics) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, "hop-reader-" + UUID.randomUUID());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
    props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 5);
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1_000);
    this.consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    this.dispatches = new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), Dispatch.class);
    this.results = new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), ToolResult.class);
    this.dispatchTopics = dispatchTopics;
    List<String> topics = new ArrayList<>(dispatchTopics);
    topics.addAll(replyTopics);
    consumer.subscribe(topics);
    this.thread = new Thread(this::read, "hop-reader");
    this.thread.setDaemon(true);
  }

  static HopReader start(
      String bootstrap, String registry, List<String> dispatchTopics, List<String> replyTopics)
      throws InterruptedException {
    HopReader reader = new HopReader(bootstrap, registry, dispatchTopics, replyTopics);
    reader.thread.start();
    Thread.sleep(3_000); // joined its group and positioned before the first measured call
    return reader;
  }

  /** A measured call to {@code step} (run/step) was sent at {@code at} (nanoTime). */
  void sent(String step, long at, GatewayBench.Tally tally) {
    byStep.put(step, new Sent(at, tally));
  }

  private void read() {
    while (running) {
      var records = consumer.poll(Duration.ofMillis(20));
      long now = System.nanoTime();
      for (ConsumerRecord<String, byte[]> record : records) {
        if (record.value() == null) {
          continue;
        }
        if (dispatchTopics.contains(record.topic())) {
          Dispatch d = dispatches.deserializer().deserialize(record.topic(), record.value());
          Sent sent = byStep.remove(d.getRunId() + "/" + d.getStepId());
          if (sent != null) {
            GatewayBench.Tally.hop(sent.tally().toDispatch, (now - sent.at()) / 1_000);
            byKey.put(d.getIdempotencyKey(), sent);
          }
        } else {
          ToolResult r = results.deserializer().deserialize(record.topic(), record.value());
          if (r.getStatus() == ResultStatus.SUCCEEDED && !r.getReplayed()) {
            Sent sent = byKey.remove(r.getIdempotencyKey());
            if (sent != null) {
              GatewayBench.Tally.hop(sent.tally().toReply, (now - sent.at()) / 1_000);
            }
          }
        }
      }
    }
    consumer.close();
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    thread.join(10_000);
  }
}
