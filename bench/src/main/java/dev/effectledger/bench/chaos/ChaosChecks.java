package dev.effectledger.bench.chaos;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.bench.chaos.ChaosWorkload.Action;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The chaos run's stock-taking once everything is quiet: effects per action at the payment API,
 * answers, ledger entries left PENDING or UNKNOWN, the ledger's audit, intents without a reply and
 * the reconciler's findings. Every finding that breaks a promise is added as a violation.
 */
final class ChaosChecks {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** How long reading a topic to its end may take. */
  private static final Duration READ_LIMIT = Duration.ofMinutes(5);

  /**
   * The figures of the stock-taking. {@code doubled}: actions with more effects than meant; {@code
   * heldUnknown}: keys the ledger held as UNKNOWN on the way; {@code heldAfterPendingTimeout}: of
   * them, those held because their pending timeout passed (an outcome or a dispatch that never
   * came, as after a hanging transaction's abort: docs/chaos.md); {@code doubleEffectAudits}: what
   * it flagged as DOUBLE_EFFECT; {@code superseded}: dispatches of a released life that an executor
   * answered without running them (a release fence came first: issue 52).
   */
  record Findings(
      long effects,
      int doubled,
      long intents,
      long replies,
      int heldUnknown,
      int heldAfterPendingTimeout,
      long doubleEffectAudits,
      long superseded) {}

  private final ChaosWorkload workload;
  private final HttpClient http;
  private final int downstreamPort;
  private final Supplier<Map<String, String>> answers;
  private final int steps;

  ChaosChecks(
      ChaosWorkload workload,
      HttpClient http,
      int downstreamPort,
      Supplier<Map<String, String>> answers,
      int steps) {
    this.workload = workload;
    this.http = http;
    this.downstreamPort = downstreamPort;
    this.answers = answers;
    this.steps = steps;
  }

  /** Takes stock, adding what breaks a promise to {@code violations}. */
  Findings takeStock(
      Properties kafka,
      String registry,
      int processorPort,
      ToolReport report,
      List<String> violations)
      throws Exception {
    AuditFacts audits = audits(kafka, registry);
    int[] doubled = new int[1];
    long effects = check(violations, processorPort, report, doubled);
    if (audits.doubleEffects() > 0) {
      violations.add(
          "the ledger audited "
              + audits.doubleEffects()
              + " double effect(s) (LATE_OUTCOME with code DOUBLE_EFFECT)");
    }
    Map<String, Long> intents = countByKey(kafka, Topics.INTENTS);
    Map<String, Long> replies = countByKey(kafka, Topics.RESULTS);
    intents.entrySet().stream()
        .filter(e -> replies.getOrDefault(e.getKey(), 0L) < e.getValue())
        .limit(20)
        .forEach(
            e ->
                violations.add(
                    "intents without a reply: "
                        + e.getKey()
                        + ": "
                        + e.getValue()
                        + " intents, "
                        + replies.getOrDefault(e.getKey(), 0L)
                        + " replies"));
    return new Findings(
        effects,
        doubled[0],
        intents.values().stream().mapToLong(Long::longValue).sum(),
        replies.values().stream().mapToLong(Long::longValue).sum(),
        audits.held().size(),
        audits.timedOut().size(),
        audits.doubleEffects(),
        audits.superseded());
  }

  /**
   * The checks: effects per action exactly as meant (no exception: a second effect is a broken
   * promise whatever the ledger held), answers, each answer true of its step (SUCCEEDED with its
   * effect, FAILED or REJECTED without one: an agent told "failed" whose charge went through was
   * lied to, and a run on 2026-11-26 found such answers), no key left PENDING or UNKNOWN,
   * reconciliation.
   */
  private long check(List<String> violations, int processorPort, ToolReport report, int[] doubled)
      throws Exception {
    Map<String, Integer> effects =
        JSON.readValue(
            http.send(
                    HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + downstreamPort + "/effects"))
                        .build(),
                    HttpResponse.BodyHandlers.ofString())
                .body(),
            new TypeReference<Map<String, Integer>>() {});
    List<String> keys = new ArrayList<>();
    List<String> wrong = new ArrayList<>();
    List<String> untrue = new ArrayList<>();
    Map<String, String> answered = answers.get();
    for (Action action : workload.all()) {
      int sum = 0;
      for (StepContext step : action.steps()) {
        String key = action.key(step);
        keys.add(key);
        sum += effects.getOrDefault(key, 0);
        String answer = answered.get(ChaosStall.answerOf(step.runId(), step.stepId()));
        if (answer != null && answer.equals("SUCCEEDED") != effects.getOrDefault(key, 0) > 0) {
          untrue.add(
              step.runId()
                  + "/"
                  + step.stepId()
                  + " ("
                  + key
                  + "): answered "
                  + answer
                  + ", "
                  + effects.getOrDefault(key, 0)
                  + " effects");
        }
      }
      if (sum > action.steps().size()) {
        doubled[0]++;
      }
      if (sum != action.steps().size()) {
        wrong.add(
            "agent-"
                + action.agent()
                + "/action-"
                + action.index()
                + " ("
                + action.key(action.steps().get(0))
                + "): "
                + sum
                + " effects, meant "
                + action.steps().size());
      }
    }
    wrong.stream().limit(20).forEach(violations::add);
    if (wrong.size() > 20) {
      violations.add(
          (wrong.size() - 20)
              + " more actions with effects other than meant ("
              + doubled[0]
              + " of all with more)");
    }
    untrue.stream()
        .limit(20)
        .forEach(u -> violations.add("an answer the effects contradict: " + u));
    if (untrue.size() > 20) {
      violations.add((untrue.size() - 20) + " more answers the effects contradict");
    }
    if (answered.size() != steps) {
      violations.add((steps - answered.size()) + " steps have no final answer");
    }
    List<String> stuck = unsettled(keys, processorPort);
    stuck.stream().limit(20).forEach(s -> violations.add("ledger entry not final: " + s));
    if (stuck.size() > 20) {
      violations.add((stuck.size() - 20) + " more ledger entries not final");
    }
    if (report.missingEffect() > 0) {
      violations.add(
          "reconciler: "
              + report.missingEffect()
              + " completed keys without their effect downstream");
    }
    if (report.heldUnresolved() > 0) {
      violations.add(
          "reconciler: " + report.heldUnresolved() + " keys held as UNKNOWN it could not resolve");
    }
    if (report.confirmed() < keys.size()) {
      violations.add(
          "reconciler confirmed "
              + report.confirmed()
              + " effects of "
              + keys.size()
              + " completed keys");
    }
    return effects.values().stream().mapToLong(Integer::longValue).sum();
  }

  /** Where a processor's HTTP API answers the ledger's entry of {@code key}. */
  static URI entryUri(int processorPort, String key) {
    return URI.create(
        "http://127.0.0.1:" + processorPort + "/v1/keys/" + ChaosWorkload.TENANT + "/" + key);
  }

  /** Entries the ledger still has as PENDING or UNKNOWN, asked over the processor's HTTP API. */
  private List<String> unsettled(List<String> keys, int port) {
    Semaphore window = new Semaphore(64);
    List<String> stuck = Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<?>> asks = new ArrayList<>();
    for (String key : keys) {
      window.acquireUninterruptibly();
      asks.add(
          http.sendAsync(
                  HttpRequest.newBuilder(entryUri(port, key))
                      .timeout(Duration.ofSeconds(30))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .whenComplete(
                  (response, error) -> {
                    window.release();
                    if (error != null) {
                      stuck.add(key + ": not asked (" + error + ")");
                    } else if (response.body().contains("\"state\":\"PENDING\"")
                        || response.body().contains("\"state\":\"UNKNOWN\"")) {
                      stuck.add(key + ": " + response.body());
                    } else if (response.statusCode() != 200) {
                      stuck.add(key + ": HTTP " + response.statusCode() + " " + response.body());
                    }
                  }));
    }
    CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).exceptionally(e -> null).join();
    return stuck;
  }

  /** Committed records per key on {@code topic}. */
  private static Map<String, Long> countByKey(Properties kafka, String topic) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<String, Long> counts = new HashMap<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      if (!TopicReads.wholeTopic(
          consumer,
          topic,
          READ_LIMIT,
          record -> counts.merge(String.valueOf(record.key()), 1L, Long::sum))) {
        throw new IllegalStateException(
            "could not read " + topic + " to its end within " + READ_LIMIT);
      }
    }
    return counts;
  }

  /**
   * What tool-audit says: keys the ledger held as UNKNOWN at some point, those of them held when
   * their pending timeout passed, and the double effects it saw.
   */
  private record AuditFacts(
      Set<String> held, Set<String> timedOut, long doubleEffects, long superseded) {}

  private static AuditFacts audits(Properties kafka, String registry) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Set<String> held = new HashSet<>();
    Set<String> timedOut = new HashSet<>();
    AtomicLong doubles = new AtomicLong();
    AtomicLong superseded = new AtomicLong();
    try (KafkaConsumer<String, AuditEvent> consumer =
        new KafkaConsumer<>(
            props,
            new StringDeserializer(),
            new RegistryAvroSerde<>(SchemaRegistries.forUrl(registry), AuditEvent.class))) {
      boolean read =
          TopicReads.wholeTopic(
              consumer,
              Topics.AUDIT,
              READ_LIMIT,
              record -> {
                AuditEvent event = record.value();
                if (event != null && event.getType() == AuditType.HELD_UNKNOWN) {
                  held.add(event.getIdempotencyKey());
                  if (ErrorCode.PENDING_TIMEOUT.name().equals(event.getCode())) {
                    timedOut.add(event.getIdempotencyKey());
                  }
                } else if (event != null
                    && event.getType() == AuditType.LATE_OUTCOME
                    && ErrorCode.DOUBLE_EFFECT.name().equals(event.getCode())) {
                  doubles.incrementAndGet();
                } else if (event != null
                    && event.getType() == AuditType.LATE_OUTCOME
                    && ErrorCode.SUPERSEDED.name().equals(event.getCode())) {
                  superseded.incrementAndGet();
                }
              });
      if (!read) {
        throw new IllegalStateException(
            "could not read " + Topics.AUDIT + " to its end within " + READ_LIMIT);
      }
    }
    return new AuditFacts(held, timedOut, doubles.get(), superseded.get());
  }

  /** The reconciler's passes added up. */
  static ToolReport sum(List<ToolReport> passes, ToolReport last) {
    ToolReport total = last;
    synchronized (passes) {
      for (ToolReport p : passes) {
        total =
            new ToolReport(
                total.confirmed() + p.confirmed(),
                total.missingEffect() + p.missingEffect(),
                total.heldFoundEffect() + p.heldFoundEffect(),
                total.heldNoEffect() + p.heldNoEffect(),
                p.heldUnresolved() > 0 ? total.heldUnresolved() : total.heldUnresolved(),
                total.effectWithoutEntry() + p.effectWithoutEntry());
      }
    }
    return total; // unresolved holds count from the last pass only: earlier ones may have been
    // resolved since
  }
}
