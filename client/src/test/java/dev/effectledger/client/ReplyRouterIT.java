package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The one reply router, as the client ({@link ReplyRouter#onDemand}) and the gateway ({@link
 * ReplyRouter#everyPartition}) use it, on a real broker: each listener gets its key's replies and
 * no other's, a record that is not a reply is skipped without stopping the replies after it, and no
 * reply published before a partition was positioned is read.
 */
@Tag("integration")
@Timeout(120)
class ReplyRouterIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final String TOPIC = "replies-router-it";
  private static SchemaRegistry registry;
  private static KafkaProducer<String, byte[]> producer;

  @BeforeAll
  static void start() {
    kafka.createTopics(Map.of(TOPIC, 3));
    registry = SchemaRegistries.forUrl("mock://reply-router-it", new Properties());
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
  }

  @AfterAll
  static void stop() {
    producer.close();
  }

  @Test
  void shouldRouteRepliesByKeyOnDemandAndSkipARecordThatIsNotAReply() throws Exception {
    try (ReplyRouter router =
        ReplyRouter.onDemand(consumerProps(), TOPIC, serde(), "router-it-on-demand")) {
      send(1, "k-early", reply("k-early", ResultStatus.SUCCEEDED)); // before the watch: not read
      List<String> heard = new CopyOnWriteArrayList<>();
      router.listen("k-early", (r, id, through) -> heard.add("early:" + r.getIdempotencyKey()));
      Runnable stopA = router.listen("k-a", (r, id, through) -> heard.add("a:" + r.getStatus()));
      router.listen("k-b", (r, id, through) -> heard.add("b:" + id));

      router.watch(1).get(30, TimeUnit.SECONDS);
      assertThat(router.ready()).isTrue();

      send(1, "k-a", "not avro at all".getBytes(StandardCharsets.UTF_8));
      send(1, "k-a", reply("k-a", ResultStatus.SUCCEEDED));
      producer.send(requestId(1, "k-b", reply("k-b", ResultStatus.FAILED), "req-7")).get();

      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(heard).containsExactlyInAnyOrder("a:SUCCEEDED", "b:req-7"));
      assertThat(router.failure()).as("a bad record does not stop the router").isNull();
      assertThat(router.waiting()).isEqualTo(3);

      stopA.run();
      send(1, "k-a", reply("k-a", ResultStatus.FAILED));
      send(1, "k-b", reply("k-b", ResultStatus.SUCCEEDED));
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(heard).hasSize(3).contains("b:null"));
      assertThat(heard).as("a stopped listener hears nothing more").doesNotContain("a:FAILED");
      assertThat(router.waiting()).isEqualTo(2);
    }
  }

  @Test
  void shouldReadEveryPartitionWithSeveralConsumers() throws Exception {
    try (ReplyRouter router =
        ReplyRouter.everyPartition(consumerProps(), TOPIC, this::serde, 2, "router-it-every")) {
      await().atMost(Duration.ofSeconds(30)).until(router::ready);
      assertThat(router.watch(2).get(5, TimeUnit.SECONDS)).isNull();
      List<String> heard = new CopyOnWriteArrayList<>();
      for (int p = 0; p < 3; p++) {
        String key = "every-" + p;
        router.listen(key, (r, id, through) -> heard.add(r.getIdempotencyKey()));
        send(p, key, reply(key, ResultStatus.SUCCEEDED));
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> assertThat(heard).containsExactlyInAnyOrder("every-0", "every-1", "every-2"));
      assertThat(
              Thread.getAllStackTraces().keySet().stream()
                  .filter(t -> t.getName().startsWith("router-it-every-"))
                  .count())
          .isEqualTo(2);
    }
  }

  private RegistryAvroSerde<ToolResult> serde() {
    return new RegistryAvroSerde<>(registry, ToolResult.class);
  }

  private static Properties consumerProps() {
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    return props;
  }

  private byte[] reply(String key, ResultStatus status) {
    ToolResult result =
        ToolResult.newBuilder()
            .setIdempotencyKey(key)
            .setTenant("acme")
            .setTool("charge_card")
            .setStatus(status)
            .setFirstSeenAt(Instant.EPOCH)
            .build();
    return serde().serialize(TOPIC, result);
  }

  private static ProducerRecord<String, byte[]> requestId(
      int partition, String key, byte[] value, String id) {
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(TOPIC, partition, key, value);
    record.headers().add(Topics.REQUEST_ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
    return record;
  }

  private static void send(int partition, String key, byte[] value) throws Exception {
    producer.send(new ProducerRecord<>(TOPIC, partition, key, value)).get();
  }
}
