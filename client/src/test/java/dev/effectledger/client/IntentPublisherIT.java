package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.Traces;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import dev.effectledger.testkit.KafkaClusterExtension;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The one intent publisher on a real broker: an intent lands keyed by its idempotency key, at the
 * offset the publish completes with, with the request id (the gateway's) in its header, and with
 * none when the caller gives none (the client's).
 */
@Tag("integration")
@Timeout(120)
class IntentPublisherIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @Test
  void shouldPublishKeyedByTheKeyWithTheRequestIdWhenGiven() throws Exception {
    kafka.createTopics(Map.of(Topics.INTENTS, 1));
    SchemaRegistry registry =
        SchemaRegistries.forUrl("mock://intent-publisher-it", new Properties());
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    IntentPublisher publisher =
        new IntentPublisher(
            new KafkaProducer<>(
                props, new StringSerializer(), new RegistryAvroSerde<>(registry, ToolIntent.class)),
            Topics.INTENTS,
            "tool-results.it",
            Clock.systemUTC());
    long withId;
    long withoutId;
    try {
      withId = publisher.publish(intent("k-gw"), "req-42").get(30, TimeUnit.SECONDS);
      withoutId = publisher.publish(intent("k-client"), null).get(30, TimeUnit.SECONDS);
    } finally {
      publisher.close(Duration.ofSeconds(5));
    }

    List<ConsumerRecord<String, byte[]>> read = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition p0 = new TopicPartition(Topics.INTENTS, 0);
      consumer.assign(List.of(p0));
      consumer.seekToBeginning(List.of(p0));
      for (int polls = 0; polls < 100 && read.size() < 2; polls++) {
        consumer.poll(Duration.ofMillis(200)).forEach(read::add);
      }
    }
    assertThat(read).as("intents read back").hasSize(2);
    ConsumerRecord<String, byte[]> first = read.get(0);
    assertThat(first.key()).isEqualTo("k-gw");
    assertThat(first.offset()).isEqualTo(withId);
    Header id = first.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    assertThat(id).isNotNull();
    assertThat(new String(id.value(), StandardCharsets.UTF_8)).isEqualTo("req-42");
    ConsumerRecord<String, byte[]> second = read.get(1);
    assertThat(second.key()).isEqualTo("k-client");
    assertThat(second.offset()).isEqualTo(withoutId);
    assertThat(second.headers().lastHeader(Topics.REQUEST_ID_HEADER)).isNull();
  }

  @Test
  void shouldCarryTheCurrentSpanElseTheTraceTheCallWasGivenAndKeepTheGivenTraceId()
      throws Exception {
    String topic = "tool-intents-traced";
    kafka.createTopics(Map.of(topic, 1));
    SchemaRegistry registry =
        SchemaRegistries.forUrl("mock://intent-publisher-traced", new Properties());
    Properties props = new Properties();
    props.put("bootstrap.servers", kafka.bootstrapServers());
    String given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    Span agent =
        Span.wrap(
            SpanContext.create(
                "4bf92f3577b34da6a3ce929d0e0e4736",
                "00f067aa0ba902b7",
                TraceFlags.getSampled(),
                TraceState.getDefault()));
    ToolIntent outsideSpan = intent("k-given");
    outsideSpan.setTraceId(given);
    ToolIntent inSpan = intent("k-span");
    inSpan.setTraceId(given);
    IntentPublisher publisher =
        new IntentPublisher(
            new KafkaProducer<>(
                props, new StringSerializer(), new RegistryAvroSerde<>(registry, ToolIntent.class)),
            topic,
            "tool-results.it",
            Clock.systemUTC());
    try {
      publisher.publish(outsideSpan, null).get(30, TimeUnit.SECONDS);
      try (Scope scope = agent.makeCurrent()) {
        publisher.publish(inSpan, null).get(30, TimeUnit.SECONDS);
      }
    } finally {
      publisher.close(Duration.ofSeconds(5));
    }

    List<ConsumerRecord<String, byte[]>> read = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition p0 = new TopicPartition(topic, 0);
      consumer.assign(List.of(p0));
      consumer.seekToBeginning(List.of(p0));
      for (int polls = 0; polls < 100 && read.size() < 2; polls++) {
        consumer.poll(Duration.ofMillis(200)).forEach(read::add);
      }
    }
    assertThat(read).as("intents read back").hasSize(2);
    assertThat(header(read.get(0), Traces.TRACEPARENT))
        .as("no current span: the trace the call was given")
        .isEqualTo(given);
    assertThat(header(read.get(1), Traces.TRACEPARENT))
        .as("the current span wins")
        .isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assertThat(inSpan.getTraceId()).as("a traceId the caller gave stays as given").isEqualTo(given);
  }

  private static String header(ConsumerRecord<String, byte[]> record, String name) {
    Header header = record.headers().lastHeader(name);
    return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
  }

  private static ToolIntent intent(String key) {
    return ToolIntent.newBuilder()
        .setIdempotencyKey(key)
        .setTenant("acme")
        .setRunId("run-1")
        .setStepId("step-1")
        .setTool("charge_card")
        .setArguments("{}")
        .setArgumentsHash("h")
        .setRequestedAt(Instant.EPOCH)
        .setReplyTopic("tool-results.it")
        .build();
  }
}
