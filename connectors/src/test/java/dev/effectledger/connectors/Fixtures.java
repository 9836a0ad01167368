package dev.effectledger.connectors;

import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Producers and read_committed collectors for the executor's real-broker tests. */
public final class Fixtures {

  private Fixtures() {}

  /** Kafka settings for executors under test: a short session so a halted member leaves fast. */
  public static Properties kafka(String bootstrap) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
    return props;
  }

  public static Dispatch dispatch(String key, String tool, String lane, String arguments) {
    return Dispatch.newBuilder()
        .setIdempotencyKey(key)
        .setEffectKey(key)
        .setTenant("acme")
        .setRunId("run-" + key)
        .setStepId("step-1")
        .setTool(tool)
        .setLane(lane)
        .setArguments(arguments)
        .setAttempt(1)
        .setDispatchedAt(Instant.now())
        .build();
  }

  public static void send(String bootstrap, String registryUrl, List<Dispatch> dispatches) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<String, Dispatch> producer = new KafkaProducer<>(props, new StringSerializer(),
        new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Dispatch.class))) {
      for (Dispatch d : dispatches) {
        producer.send(new ProducerRecord<>("tool-dispatch." + d.getLane(), d.getIdempotencyKey(), d));
      }
    }
  }

  /** Reads a topic read_committed from the start on its own thread, by key, until closed. */
  public static final class Collector<V> implements AutoCloseable {
    public final Map<String, List<V>> byKey = new ConcurrentHashMap<>();
    public final List<ConsumerRecord<String, V>> records = new CopyOnWriteArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final Thread thread;

    public Collector(String bootstrap, String topic, Deserializer<V> values) {
      Properties props = new Properties();
      props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      props.put(ConsumerConfig.GROUP_ID_CONFIG, "collector-" + topic + "-" + System.nanoTime());
      props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      KafkaConsumer<String, V> consumer = new KafkaConsumer<>(props, new StringDeserializer(), values);
      consumer.subscribe(List.of(topic));
      thread = new Thread(() -> {
        try (consumer) {
          while (running.get()) {
            for (ConsumerRecord<String, V> record : consumer.poll(Duration.ofMillis(200))) {
              records.add(record);
              byKey.computeIfAbsent(record.key(), k -> new CopyOnWriteArrayList<>()).add(record.value());
            }
          }
        }
      }, "collector-" + topic);
      thread.setDaemon(true);
      thread.start();
    }

    public int total() {
      return records.size();
    }

    @Override
    public void close() {
      running.set(false);
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  public static Collector<Outcome> outcomes(String bootstrap, String registryUrl) {
    return new Collector<>(bootstrap, "tool-outcomes", new RegistryAvroSerde<>(SchemaRegistries.forUrl(registryUrl), Outcome.class));
  }
}
