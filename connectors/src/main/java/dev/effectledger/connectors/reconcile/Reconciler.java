package dev.effectledger.connectors.reconcile;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.TopicReads;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compares the ledger with the downstreams. It follows tool-audit to learn each key's latest state,
 * asks each tool's connector {@link Connector#lookup} about completed and UNKNOWN keys, and for
 * UNKNOWN keys publishes the resolving outcome to tool-outcomes: SUCCEEDED when the effect is found
 * (the ledger completes the key), RETRYABLE when it provably is not (the ledger releases it). Runs
 * on demand ({@link #reconcileOnce}) or on a schedule ({@link #every}).
 *
 * <p>Keys held for less than {@code minAge} are left alone: a request still in flight downstream
 * could yet act, and "not found" would be a guess.
 *
 * <p>On a lane whose downstream ignores keys (one with an attempt journal), a held key's life is
 * fenced ({@link ReleaseFences}) before it is looked up, so no dispatch of it that is still queued
 * can run after the lookup: a key whose start the journal shows unanswered before the fence stays
 * held (finding {@code STARTED}) until its executor answers it; the lookup is taken only after the
 * fence is read back, so a "not found" covers every effect the life can have.
 */
public final class Reconciler implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Reconciler.class);

  /**
   * How long a pass may take to read the audit topic to its end before it reconciles what it read.
   */
  private static final Duration CATCH_UP_LIMIT = Duration.ofSeconds(60);

  /**
   * Audit types that move an entry; the rest (replays, conflicts, late outcomes) leave it as it
   * was.
   */
  private static final Set<AuditType> STATE_CHANGES =
      EnumSet.of(
          AuditType.DISPATCHED,
          AuditType.REDISPATCHED,
          AuditType.COMPLETED,
          AuditType.FAILED,
          AuditType.RELEASED,
          AuditType.HELD_UNKNOWN,
          AuditType.EXPIRED,
          AuditType.BYPASSED);

  private final Map<String, Connector> connectors;
  private final Map<String, String> lanes;
  private final LookupFences lookupFences;
  private final Duration minAge;
  private final Clock clock;
  private final KafkaConsumer<String, AuditEvent> audit;
  private final Resolutions resolver;
  private final ReconcileFindings findings;

  /**
   * The latest event of each key that needs a look: held (to settle) or completed and not yet
   * confirmed. A key leaves when it is confirmed or moves to any other state, so memory follows the
   * keys needing attention, not every key tool-audit holds.
   */
  private final Map<String, AuditEvent> latest = new HashMap<>();

  /**
   * Every key (effect and idempotency key) tool-audit named, for the tools whose connector lists
   * its effects ({@link Connector#listsEffects}): an effect none of them names has no entry. The
   * one share of memory that grows with tool-audit's retention, and only for those tools.
   */
  private final Map<String, Set<String>> known = new HashMap<>();

  /**
   * The held events this reconciler resolved, by key: one is not resolved again while it is still
   * the latest event read for its key (the ledger's answer to the resolution may not be readable
   * yet, and a second lookup then could find the effect of the key's next life in flight).
   */
  private final Map<String, AuditEvent> resolved = new HashMap<>();

  private ScheduledExecutorService schedule;
  private boolean wholeAudit = true; // guarded by this

  /**
   * @param lanes each tool's lane, from the policy: a held key of a tool whose connector cannot
   *     take a repeat is fenced on its lane's attempt journal before it is looked up (one with no
   *     lane here stays held)
   */
  public Reconciler(
      Properties kafka,
      String schemaRegistryUrl,
      Map<String, Connector> connectors,
      Map<String, String> lanes,
      Duration minAge,
      Clock clock) {
    this.connectors = Map.copyOf(connectors);
    this.lanes = Map.copyOf(lanes);
    this.minAge = minAge;
    this.clock = clock;
    var registry = SchemaRegistries.forUrl(schemaRegistryUrl, kafka);
    Properties consumerProps = new Properties();
    consumerProps.putAll(kafka);
    consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    this.audit =
        new KafkaConsumer<>(
            consumerProps,
            new StringDeserializer(),
            new RegistryAvroSerde<>(registry, AuditEvent.class));
    Properties producerProps = new Properties();
    producerProps.putAll(kafka);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    var producer =
        new KafkaProducer<>(
            producerProps,
            new StringSerializer(),
            new RegistryAvroSerde<>(registry, Outcome.class));
    Properties findingProps = new Properties();
    findingProps.putAll(producerProps);
    findingProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5000);
    this.findings =
        new ReconcileFindings(
            new KafkaProducer<>(findingProps, new StringSerializer(), new StringSerializer()),
            clock);
    this.resolver = new Resolutions(producer, findings, clock);
    List<TopicPartition> partitions = new ArrayList<>();
    for (PartitionInfo p : audit.partitionsFor(Topics.AUDIT)) {
      partitions.add(new TopicPartition(Topics.AUDIT, p.partition()));
    }
    audit.assign(partitions);
    audit.seekToBeginning(partitions);
    this.lookupFences =
        new LookupFences(
            this.connectors,
            this.lanes,
            new ReleaseFences(kafka, "reconciler")); // last: nothing after it can throw
  }

  /** Each tool's lane in {@code policies}: the {@code lanes} argument of the constructor. */
  public static Map<String, String> lanesOf(dev.effectledger.policy.ToolPolicies policies) {
    Map<String, String> lanes = new HashMap<>();
    policies.tools().values().forEach(p -> lanes.put(p.name(), p.lane()));
    return lanes;
  }

  /**
   * Reads tool-audit from {@code from} on instead of from its beginning: only keys whose latest
   * change is at or after it are reconciled, and effects without a ledger entry are not counted
   * (every effect of an earlier key would look like one). Call before the first {@link
   * #reconcileOnce}.
   */
  public synchronized Reconciler startingAt(Instant from) {
    wholeAudit = false;
    Map<TopicPartition, Long> times = new HashMap<>();
    audit.assignment().forEach(tp -> times.put(tp, from.toEpochMilli()));
    Map<TopicPartition, Long> ends = audit.endOffsets(audit.assignment());
    audit
        .offsetsForTimes(times)
        .forEach((tp, found) -> audit.seek(tp, found == null ? ends.get(tp) : found.offset()));
    return this;
  }

  /** Reads tool-audit up to its current end, then reconciles every key that needs it. */
  public synchronized Report reconcileOnce() {
    catchUp();
    Map<String, ToolReport> byTool = new TreeMap<>();
    Instant cutoff = clock.instant().minus(minAge);
    List<ProducerRecord<String, Outcome>> resolutions = new ArrayList<>();
    Map<String, AuditEvent> resolving = new HashMap<>();
    List<String> confirmedNow = new ArrayList<>();
    Map<String, String> refused = lookupFences.fenceDue(latest, resolved, cutoff);
    for (Map.Entry<String, AuditEvent> e : latest.entrySet()) {
      AuditEvent event = e.getValue();
      Connector connector = connectors.get(event.getTool());
      boolean partial =
          event.getType() == AuditType.HELD_UNKNOWN
              && ErrorCode.PARTIAL_SUCCESS.name().equals(event.getCode());
      // A partial success is an operator's to settle: a lookup of the whole would mislead.
      if (connector == null || !connector.capabilities().supportsLookup() || partial) {
        if (event.getType() == AuditType.HELD_UNKNOWN) {
          byTool.merge(event.getTool(), new ToolReport(0, 0, 0, 0, 1), ToolReport::plus);
          findings.found(
              e.getKey(),
              partial
                  ? "PARTIAL_SUCCESS: not looked up, an operator settles it"
                  : "NO_LOOKUP: the tool's connector cannot look effects up");
        }
        continue;
      }
      if (event.getType() == AuditType.HELD_UNKNOWN && event.equals(resolved.get(e.getKey()))) {
        continue;
      }
      if (event.getType() == AuditType.HELD_UNKNOWN
          && !event.getAt().isAfter(cutoff)
          && refused.containsKey(e.getKey())) {
        byTool.merge(event.getTool(), new ToolReport(0, 0, 0, 0, 1), ToolReport::plus);
        findings.found(e.getKey(), refused.get(e.getKey()));
      } else if (event.getType() == AuditType.HELD_UNKNOWN && !event.getAt().isAfter(cutoff)) {
        int before = resolutions.size();
        byTool.merge(
            event.getTool(),
            resolver.resolve(connector, event, resolutions, e.getKey()),
            ToolReport::plus);
        if (resolutions.size() > before) {
          resolving.put(e.getKey(), event);
        }
      } else if (event.getType() == AuditType.HELD_UNKNOWN) {
        // held for less than minAge: left alone this pass, and still held
        byTool.merge(event.getTool(), new ToolReport(0, 0, 0, 0, 1), ToolReport::plus);
        findings.found(
            e.getKey(), "NOT_YET: held for less than the minimum age, not looked up yet");
      } else if (event.getType() == AuditType.COMPLETED) {
        Lookup lookup = connector.lookup(Resolutions.effectKey(event));
        if (lookup.status() == Lookup.Status.FOUND || lookup.status() == Lookup.Status.NOT_FOUND) {
          confirmedNow.add(e.getKey());
          boolean found = lookup.status() == Lookup.Status.FOUND;
          byTool.merge(
              event.getTool(),
              new ToolReport(found ? 1 : 0, found ? 0 : 1, 0, 0, 0),
              ToolReport::plus);
          if (!found) {
            log.warn(
                "Ledger says key {} of tool {} completed, but the downstream has no effect for it",
                event.getIdempotencyKey(),
                event.getTool());
          }
        }
      }
    }
    resolver.publish(resolutions);
    findings.publishFindings();
    resolved.putAll(resolving);
    confirmedNow.forEach(latest::remove); // confirmed once: looked at again only in a next life
    if (wholeAudit) {
      countEffectsWithoutEntry(byTool);
    }
    return new Report(byTool);
  }

  /**
   * Effects a downstream lists under a key the audit log never named (needs audit retention to
   * cover them).
   */
  private void countEffectsWithoutEntry(Map<String, ToolReport> byTool) {
    connectors.forEach(
        (tool, connector) ->
            connector
                .effectKeys()
                .ifPresent(
                    keys -> {
                      Set<String> named = known.getOrDefault(tool, Set.of());
                      long orphans = keys.stream().filter(k -> !named.contains(k)).count();
                      if (orphans > 0) {
                        log.warn("{} effect(s) of tool {} have no ledger entry", orphans, tool);
                      }
                      byTool.merge(
                          tool, new ToolReport(0, 0, 0, 0, 0, (int) orphans), ToolReport::plus);
                    }));
  }

  private void catchUp() {
    boolean caughtUp =
        TopicReads.toEnd(
            audit,
            audit.assignment(),
            CATCH_UP_LIMIT,
            record -> {
              AuditEvent event = record.value();
              if (event != null && STATE_CHANGES.contains(event.getType())) {
                String key = LedgerStore.key(event.getTenant(), event.getIdempotencyKey());
                Connector connector = connectors.get(event.getTool());
                boolean confirmable =
                    event.getType() == AuditType.COMPLETED
                        && connector != null
                        && connector.capabilities().supportsLookup();
                if (event.getType() == AuditType.HELD_UNKNOWN || confirmable) {
                  latest.put(key, event);
                } else {
                  latest.remove(key);
                }
                if (event.getType() != AuditType.HELD_UNKNOWN) {
                  findings.noLongerHeld(key); // no longer held: the finding goes
                }
                resolved.remove(key);
                if (connector != null && connector.listsEffects()) {
                  Set<String> named = known.computeIfAbsent(event.getTool(), t -> new HashSet<>());
                  named.add(Resolutions.effectKey(event));
                  named.add(event.getIdempotencyKey());
                }
              }
            });
    if (!caughtUp) {
      log.warn(
          "The audit topic was not read to its end within {}; this pass reconciles what was read",
          CATCH_UP_LIMIT);
    }
  }

  /**
   * Keys this reconciler keeps in memory: held and unconfirmed completed keys, and the keys named
   * for tools whose connector lists its effects.
   */
  public synchronized int tracked() {
    return latest.size() + known.values().stream().mapToInt(Set::size).sum();
  }

  /** Runs {@link #reconcileOnce} every {@code interval} on a thread of its own until closed. */
  public synchronized Reconciler every(Duration interval) {
    schedule = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "reconciler"));
    schedule.scheduleWithFixedDelay(
        () -> {
          try {
            log.info("Reconciliation: {}", reconcileOnce());
          } catch (RuntimeException e) {
            log.warn("Reconciliation failed; will try again in {}: {}", interval, e.toString());
          }
        },
        interval.toMillis(),
        interval.toMillis(),
        TimeUnit.MILLISECONDS);
    return this;
  }

  @Override
  public void close() {
    if (schedule != null) {
      schedule.shutdownNow();
    }
    synchronized (this) {
      audit.close();
      resolver.close();
      findings.close();
      lookupFences.close();
    }
  }

  /** Figures per tool. */
  public record Report(Map<String, ToolReport> byTool) {

    public ToolReport total() {
      return byTool.values().stream().reduce(ToolReport.EMPTY, ToolReport::plus);
    }

    public ToolReport tool(String tool) {
      return byTool.getOrDefault(tool, ToolReport.EMPTY);
    }
  }
}
