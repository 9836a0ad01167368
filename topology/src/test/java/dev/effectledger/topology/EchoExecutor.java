package dev.effectledger.topology;

import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A stand-in downstream for the topology's tests: answers every committed dispatch with a SUCCEEDED
 * outcome. The real executor runtime is the connectors module's.
 */
final class EchoExecutor implements AutoCloseable {

  final AtomicInteger effects = new AtomicInteger();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final Thread thread;

  EchoExecutor(String bootstrap, String registryUrl) {
    var registry = SchemaRegistries.forUrl(registryUrl);
    KafkaConsumer<String, Dispatch> consumer =
        Fixtures.committedReader(
            bootstrap, "echo-executor", new RegistryAvroSerde<>(registry, Dispatch.class));
    KafkaProducer<String, Outcome> producer = Fixtures.outcomeProducer(bootstrap, registryUrl);
    consumer.subscribe(List.of(Topics.dispatch(Fixtures.LANE)));
    thread =
        new Thread(
            () -> {
              try (consumer;
                  producer) {
                while (running.get()) {
                  for (ConsumerRecord<String, Dispatch> record :
                      consumer.poll(Duration.ofMillis(200))) {
                    Dispatch d = record.value();
                    effects.incrementAndGet();
                    producer.send(
                        new ProducerRecord<>(
                            Topics.OUTCOMES,
                            d.getIdempotencyKey(),
                            Outcome.newBuilder()
                                .setIdempotencyKey(d.getIdempotencyKey())
                                .setTenant(d.getTenant())
                                .setTool(d.getTool())
                                .setAttempt(d.getAttempt())
                                .setStatus(OutcomeStatus.SUCCEEDED)
                                .setResultJson("{\"charge\":\"ch_" + d.getEffectKey() + "\"}")
                                .setEffectId("ch_" + d.getEffectKey())
                                .setCompletedAt(Instant.now())
                                .build()));
                  }
                  producer.flush();
                  consumer.commitSync();
                }
              }
            },
            "echo-executor");
    thread.setDaemon(true);
    thread.start();
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
