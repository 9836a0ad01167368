package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.testkit.KafkaClusterExtension;
import dev.effectledger.testkit.TopicCollector;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ledger's deadlines, and what its releases say about the intents read, survive a restore of
 * its state from the changelog alone.
 */
@Tag("integration")
class DeadlineRestoreIT {

  private static final int PARTITIONS = 2;

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  @TempDir Path work;
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() {
    processes.forEach(Process::destroyForcibly);
  }

  /**
   * The deadline index has no changelog: a processor killed mid-window and restored on an empty
   * state directory rebuilds it from the restored entries, so a pending entry still times out and a
   * settled one still leaves its window. And a key released by the restored ledger before it has
   * read an intent names, on its release, the intents it answers: at least the one that started the
   * key's life (until 2026-11-27 it said -1, answering nobody, and the callers waited out their
   * timeouts).
   */
  @Test
  @Timeout(300)
  void shouldStillTimeOutAndPurgeAfterARestoreOnAnEmptyStateDirectory() throws Exception {
    kafka.createTopics(Fixtures.topics(PARTITIONS));
    try (SchemaRegistryServer registry = SchemaRegistryServer.start()) {
      String bootstrap = kafka.bootstrapServers();
      try (EchoExecutor executor = new EchoExecutor(bootstrap, registry.url());
          var results = Fixtures.results(bootstrap, registry.url());
          var audit =
              new TopicCollector<>(
                  bootstrap,
                  Topics.AUDIT,
                  new RegistryAvroSerde<>(
                      SchemaRegistries.forUrl(registry.url()), AuditEvent.class));
          KafkaProducer<String, ToolIntent> producer =
              Fixtures.intentProducer(bootstrap, registry.url())) {
        Process ledger = start(bootstrap, registry.url(), "d1");
        producer.send(
            new ProducerRecord<>(Topics.INTENTS, "settled", Fixtures.intent("settled", 1)));
        ToolIntent ticket = Fixtures.intent("waiting", 2);
        ticket.setTool(Fixtures.STALLED_TOOL);
        producer.send(new ProducerRecord<>(Topics.INTENTS, "waiting", ticket));
        ToolIntent released = Fixtures.intent("released", 4);
        released.setTool(Fixtures.STALLED_TOOL);
        long releasedAt =
            producer
                .send(new ProducerRecord<>(Topics.INTENTS, "released", released))
                .get()
                .offset();
        producer.flush();
        await("a result for settled")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () ->
                    assertThat(results.byKey.keySet())
                        .as("keys with a result")
                        .contains("settled"));
        assertThat(results.byKey.get("settled").get(0).getStatus())
            .isEqualTo(ResultStatus.SUCCEEDED);
        // its dispatch committed: the restored ledger has its entry, and reads on past it
        await("the DISPATCHED audit event of released")
            .atMost(Duration.ofSeconds(60))
            .untilAsserted(
                () ->
                    assertThat(audit.byKey.getOrDefault("released", List.of()))
                        .extracting(AuditEvent::getType)
                        .as("audit events of released")
                        .contains(AuditType.DISPATCHED));
        kill(ledger); // mid-window, the ticket pending: nothing of the index survives below
        // While the ledger is down, the executor's last try at "released" fails with no effect:
        // the restored ledger releases the key before it has read any intent.
        retryableOutcome(bootstrap, registry.url(), released, releasedAt);

        ledger = start(bootstrap, registry.url(), "d2");

        await("the restored ledger releases released (RETRIES_EXHAUSTED)")
            .atMost(Duration.ofSeconds(90))
            .untilAsserted(
                () ->
                    assertThat(releaseOf("released", results))
                        .as(
                            () ->
                                "the release; results of released: "
                                    + results.byKey.get("released"))
                        .isNotNull());
        assertThat(
                Long.parseLong(
                    new String(
                        releaseOf("released", results)
                            .headers()
                            .lastHeader(Topics.INTENTS_THROUGH_HEADER)
                            .value(),
                        StandardCharsets.US_ASCII)))
            .as(
                "the release answers the call whose intent started the key's life, read before the"
                    + " restart (not -1: nothing read since)")
            .isGreaterThanOrEqualTo(releasedAt);

        await("the pending timeout's result for waiting")
            .atMost(Duration.ofSeconds(90))
            .untilAsserted(
                () ->
                    assertThat(results.byKey.keySet())
                        .as("keys with a result")
                        .contains("waiting"));
        ToolResult held = results.byKey.get("waiting").get(0);
        assertThat(held.getStatus())
            .as("the pending timeout fired")
            .isEqualTo(ResultStatus.UNKNOWN);
        assertThat(held.getError().getCode()).isEqualTo("PENDING_TIMEOUT");

        // Past the 20-second window in record time (new keys on the settled key's partition move
        // its stream time), the purge scan expires the settled key without its being asked for.
        int partition = partitionOf("settled");
        AtomicInteger ticks = new AtomicInteger();
        await("the purge scan expires settled (EXPIRED audit event) as stream time moves on")
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofSeconds(2))
            .untilAsserted(
                () -> {
                  String tick = nextKeyOn(partition, ticks);
                  producer
                      .send(new ProducerRecord<>(Topics.INTENTS, tick, Fixtures.intent(tick, 3)))
                      .get();
                  assertThat(audit.byKey.getOrDefault("settled", List.of()))
                      .extracting(AuditEvent::getType)
                      .as("audit events of settled (%s ticks sent)", ticks.get())
                      .contains(AuditType.EXPIRED);
                });
        kill(ledger);
      }
    }
  }

  /** The reply that released {@code key}, once it came. */
  private static ConsumerRecord<String, ToolResult> releaseOf(
      String key, TopicCollector<ToolResult> results) {
    return results.records.stream()
        .filter(r -> key.equals(r.key()))
        .filter(r -> r.value().getError() != null)
        .filter(r -> "RETRIES_EXHAUSTED".equals(r.value().getError().getCode()))
        .findFirst()
        .orElse(null);
  }

  /** What an executor publishes when its only try at {@code intent} failed with no effect. */
  private static void retryableOutcome(
      String bootstrap, String registryUrl, ToolIntent intent, long incarnation) throws Exception {
    try (KafkaProducer<String, Outcome> outcomes =
        Fixtures.outcomeProducer(bootstrap, registryUrl)) {
      outcomes
          .send(
              new ProducerRecord<>(
                  Topics.OUTCOMES,
                  intent.getIdempotencyKey(),
                  Outcome.newBuilder()
                      .setIdempotencyKey(intent.getIdempotencyKey())
                      .setTenant(intent.getTenant())
                      .setTool(intent.getTool())
                      .setAttempt(1)
                      .setStatus(OutcomeStatus.RETRYABLE)
                      .setError(
                          ErrorInfo.newBuilder()
                              .setCode("UPSTREAM_UNAVAILABLE")
                              .setMessage("503 before the effect")
                              .setRetriable(true)
                              .setCorrectiveAction("none: the ledger releases the key")
                              .build())
                      .setCompletedAt(Instant.now())
                      .setIncarnation(incarnation)
                      .build()))
          .get();
    }
  }

  private Process start(String bootstrap, String registryUrl, String name)
      throws IOException, InterruptedException {
    Process process =
        LedgerProcesses.start(
            work,
            bootstrap,
            registryUrl,
            Files.createDirectory(work.resolve("state-" + name)),
            name,
            "deadlines-it",
            "short-deadlines");
    processes.add(process);
    return process;
  }

  private static void kill(Process process) throws InterruptedException {
    LedgerProcesses.kill(process);
  }

  /** The intents partition of {@code key} under the producer's default partitioner. */
  private static int partitionOf(String key) {
    return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
  }

  private static String nextKeyOn(int partition, AtomicInteger counter) {
    String key;
    do {
      key = "tick-" + counter.incrementAndGet();
    } while (partitionOf(key) != partition);
    return key;
  }
}
