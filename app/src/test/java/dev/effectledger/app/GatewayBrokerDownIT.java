package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.gateway.Gateway;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The only broker goes down under a running gateway: a call is answered 503 with Retry-After at
 * once, nothing reaches tool-intents (also after the broker is back) and the downstream never sees
 * the action; once the broker is back the gateway is ready again and the same call runs once.
 */
@Tag("integration")
@Timeout(300)
class GatewayBrokerDownIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @Test
  void shouldAnswer503AndPublishNothingWhileTheBrokerIsDown() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    String body =
        "{\"arguments\":{\"amount\":40,\"to\":\"cus_40\"},\"step\":{\"run\":\"run-down\",\"step\":\"pay\"}}";
    try (GatewayPipeline pipeline =
            GatewayPipeline.start(kafka.bootstrapServers(), "gateway-broker-down-it");
        Gateway gateway = Gateway.start(pipeline.gatewayConfig("gw-down", pipeline.ledgerUrl()))) {
      GatewayReadiness.awaitReady("gateway gw-down", gateway, Duration.ofSeconds(90));
      HttpRequest call =
          HttpRequest.newBuilder(gateway.uri().resolve("/v1/tools/charge_card/calls"))
              .timeout(Duration.ofSeconds(60))
              .header("Authorization", "Bearer " + GatewayPipeline.TOKEN)
              .header("Content-Type", "application/json")
              .header("Idempotency-Key", "charge-broker-down")
              .POST(HttpRequest.BodyPublishers.ofString(body))
              .build();

      kafka.cluster().stopBroker(0);
      GatewayReadiness.awaitNotReady(
          "gateway gw-down, its only broker stopped,", gateway, Duration.ofSeconds(30));
      HttpResponse<String> refused = http.send(call, HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
      assertThat(refused.headers().firstValue("Retry-After")).isPresent();
      assertThat(refused.body()).contains("nothing was published");

      kafka.cluster().startBroker(0);
      GatewayReadiness.awaitReady(
          "gateway gw-down, its broker back,", gateway, Duration.ofSeconds(120));
      assertThat(intentKeys()).doesNotContain("charge-broker-down");
      assertThat(pipeline.payments.requests("charge-broker-down")).isZero();

      HttpResponse<String> retried = http.send(call, HttpResponse.BodyHandlers.ofString());
      assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
      assertThat(pipeline.payments.effects("charge-broker-down")).isEqualTo(1);
      // The retried call's intent went through the same producer to the same partition: had the
      // refused call left an intent behind (buffered until the broker came back), it would be on
      // tool-intents before this one, and the API would have seen it.
      assertThat(intentKeys())
          .as("intents of charge-broker-down: the retried call's only")
          .filteredOn("charge-broker-down"::equals)
          .hasSize(1);
      assertThat(pipeline.payments.requests("charge-broker-down"))
          .as("requests of charge-broker-down: the retried call's only")
          .isEqualTo(1);
    }
  }

  private static List<String> intentKeys() {
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> partitions =
          consumer.partitionsFor(Topics.INTENTS).stream()
              .map(p -> new TopicPartition(Topics.INTENTS, p.partition()))
              .toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      var end = consumer.endOffsets(partitions);
      List<String> keys = new java.util.ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))
          && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          keys.add(r.key());
        }
      }
      assertThat(partitions)
          .as("%s read to its ends %s within 20 s (keys read: %s)", Topics.INTENTS, end, keys)
          .allSatisfy(
              p ->
                  assertThat(consumer.position(p))
                      .as("position on %s", p)
                      .isGreaterThanOrEqualTo(end.get(p)));
      return keys;
    }
  }
}
