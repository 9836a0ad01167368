package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRecord;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.Invoker;
import dev.effectledger.connectors.executor.internal.OffsetTracker;
import dev.effectledger.policy.RetryPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes dispatch lanes read_committed, runs each effect through its tool's connector, and
 * publishes each outcome to tool-outcomes in a Kafka transaction together with the consumer
 * offsets, so an outcome is published once per committed dispatch.
 *
 * <p>One poll thread owns the consumer and the producer. Effects run on a pool of {@code
 * concurrency} threads, many per partition, in order per key. Offsets are committed at each
 * partition's low watermark: a crash redelivers every dispatch whose outcome was not committed,
 * which runs again with the same key; the downstream dedups it and the ledger ignores the duplicate
 * outcome.
 *
 * <p>A connector whose downstream cannot take a repeat (it ignores keys and is not transactional)
 * is never run twice for one dispatch: the {@link AttemptJournal} records each start before the
 * effect, and a redelivered dispatch that was started is answered from a lookup or as AMBIGUOUS,
 * which the ledger holds for the reconciler.
 */
public final class Executor implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Executor.class);
  static final String DLQ_CODE_HEADER = "effectledger.error.code";
  static final String DLQ_MESSAGE_HEADER = "effectledger.error.message";

  /** A finished effect, handed from a worker to the poll thread. */
  private record Finished(TopicPartition tp, long offset, int epoch, List<ProducerRecord<byte[], byte[]>> records, String marker) {}

  /** A dispatch whose start must be journalled before its effect runs. */
  private record Journalled(TopicPartition tp, long offset, int epoch, Dispatch dispatch, String marker) {}

  private final ExecutorConfig config;
  private final Map<String, Connector> connectors;
  private final ToolPolicies policies;
  private final Clock clock;
  private final Invoker invoker;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final KafkaProducer<byte[], byte[]> producer;
  private final RegistryAvroSerde<Dispatch> dispatchSerde;
  private final RegistryAvroSerde<Outcome> outcomeSerde;
  private final ExecutorService workers;
  private final Thread pollThread;
  private final OffsetTracker tracker = new OffsetTracker();
  private final LinkedBlockingQueue<Finished> finished = new LinkedBlockingQueue<>();
  private final List<ProducerRecord<byte[], byte[]>> unpublished = new ArrayList<>();
  private final Map<TopicPartition, Integer> epochs = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();
  /** Null when no tool on these lanes needs start markers. */
  private final AttemptJournal journal;
  private final Set<String> journalledTopics;
  private final String owner;
  /** What the journal learns once the current transaction commits. */
  private final List<Runnable> onCommitted = new ArrayList<>();
  private final AtomicInteger effectsRun = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running = true;
  private volatile boolean halted;
  /** Set once the final commit is done: what still runs is abandoned, never published. */
  private volatile boolean abandoning;
  private boolean paused;
  private long lastCommitMs;

  private Executor(ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies, Clock clock, Sleeper sleeper) {
    this.config = config;
    this.connectors = Map.copyOf(connectors);
    this.policies = policies;
    this.clock = clock;
    this.invoker = new Invoker(sleeper, () -> ThreadLocalRandom.current().nextDouble());
    SchemaRegistry registry = SchemaRegistries.forUrl(config.schemaRegistryUrl());
    this.dispatchSerde = new RegistryAvroSerde<>(registry, Dispatch.class);
    this.outcomeSerde = new RegistryAvroSerde<>(registry, Outcome.class);
    this.consumer = new KafkaConsumer<>(consumerProps(config), new ByteArrayDeserializer(), new ByteArrayDeserializer());
    Properties producerProps = producerProps(config);
    this.owner = producerProps.getProperty(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
    this.producer = new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer());
    List<String> journalledLanes = config.lanes().stream().filter(lane -> policies.tools().values().stream()
        .anyMatch(p -> p.lane().equals(lane) && needsJournal(p.name()))).toList();
    this.journalledTopics = journalledLanes.stream().map(lane -> "tool-dispatch." + lane).collect(Collectors.toSet());
    this.journal = journalledLanes.isEmpty() ? null : AttemptJournal.open(config.kafka(), journalledLanes);
    this.workers = Executors.newFixedThreadPool(config.concurrency(), r -> {
      Thread t = new Thread(r, "effect-worker");
      t.setDaemon(true);
      return t;
    });
    this.pollThread = new Thread(this::run, "executor-poll-" + String.join(",", config.lanes()));
  }

  /**
   * Checks that every irreversible tool on these lanes has a connector that cannot act twice, or
   * one whose held effects the reconciler can look up, then starts consuming.
   *
   * @throws IllegalStateException naming each irreversible tool whose connector neither honours
   *     keys nor is transactional nor can look effects up, or that has no connector
   */
  public static Executor start(ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies,
      Clock clock, Sleeper sleeper) {
    refuseUnsafeIrreversibleTools(config, connectors, policies);
    Executor executor = new Executor(config, connectors, policies, clock, sleeper);
    executor.producer.initTransactions();
    executor.consumer.subscribe(config.lanes().stream().map(lane -> "tool-dispatch." + lane).toList(), executor.new Rebalance());
    executor.pollThread.start();
    return executor;
  }

  public static Executor start(ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies) {
    return start(config, connectors, policies, Clock.systemUTC(), Sleeper.REAL);
  }

  static void refuseUnsafeIrreversibleTools(ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies) {
    List<String> unsafe = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      if (policy.toolClass() != ToolClass.IRREVERSIBLE || !config.lanes().contains(policy.lane())) {
        continue;
      }
      Connector connector = connectors.get(policy.name());
      if (connector == null || !connector.capabilities().safeToRepeat() && !connector.capabilities().supportsLookup()) {
        unsafe.add(policy.name());
      }
    }
    if (!unsafe.isEmpty()) {
      throw new IllegalStateException("Refusing to start: irreversible tool(s) " + unsafe
          + " have a connector that neither honours keys nor is transactional nor can look an effect up by key, so an"
          + " effect that may have happened could never be resolved. Use a connector whose downstream dedups the key"
          + " (e.g. http with honoursKeys: true against an Idempotency-Key API), jdbc, kafka, or give it a lookup"
          + " (http lookupUrl).");
    }
  }

  /** Effects run so far (connector calls that ended in an outcome, retries counted once). */
  public int effectsRun() {
    return effectsRun.get();
  }

  /** Why the executor stopped on its own, if it did. */
  public Throwable failure() {
    return failure.get();
  }

  public boolean isRunning() {
    return pollThread.isAlive();
  }

  /**
   * Stops consuming, lets running effects finish within the shutdown deadline, commits their
   * outcomes, and closes. Effects still running then are abandoned: their dispatches are
   * redelivered to the next owner.
   */
  @Override
  public void close() {
    running = false;
    join();
  }

  /** Stops at once without committing anything more, as a crash would. For tests and chaos. */
  public void halt() {
    halted = true;
    running = false;
    join();
  }

  private void join() {
    try {
      pollThread.join(config.shutdownDeadline().toMillis() + 30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void run() {
    try {
      while (running) {
        // Paused (too many effects running): wait for effects to finish, not in a poll that
        // cannot return records; otherwise take what has finished and poll.
        drainFinished(paused ? nextWait() : Duration.ZERO);
        if (clock.millis() - lastCommitMs >= config.commitInterval().toMillis()) {
          commit();
        }
        applyBackpressure();
        List<Journalled> toJournal = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(paused ? Duration.ZERO : nextWait())) {
          start(record, toJournal);
        }
        if (!toJournal.isEmpty()) {
          startJournalled(toJournal);
        }
      }
      if (!halted) {
        finishRunning(tracker::pending);
        commit();
      }
    } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
      failure.set(e);
      log.error("Executor stopped: {}. Another executor may share its transactional id, or it lacks ACLs;"
          + " restart it once the cause is fixed.", e.toString());
    } catch (RuntimeException e) {
      failure.set(e);
      log.error("Executor stopped on an unexpected error; restart it. Uncommitted dispatches will be redelivered.", e);
    } finally {
      abandoning = true;
      workers.shutdownNow();
      consumer.close(CloseOptions.timeout(Duration.ZERO));
      producer.close(halted ? Duration.ZERO : Duration.ofSeconds(5));
      if (journal != null) {
        journal.close();
      }
    }
  }

  private boolean needsJournal(String tool) {
    Connector connector = connectors.get(tool);
    return connector != null && !connector.capabilities().safeToRepeat();
  }

  private void start(ConsumerRecord<byte[], byte[]> record, List<Journalled> toJournal) {
    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
    tracker.started(tp, record.offset());
    int epoch = epochs.getOrDefault(tp, 0);
    Dispatch dispatch;
    try {
      dispatch = dispatchSerde.deserialize(record.topic(), record.value());
      if (dispatch == null) {
        throw new SerializationException("dispatch record has no value");
      }
    } catch (SerializationException e) {
      finished.add(new Finished(tp, record.offset(), epoch, List.of(deadLetter(record, e)), null));
      return;
    }
    if (journal != null && needsJournal(dispatch.getTool())) {
      String marker = AttemptJournal.marker(dispatch.getEffectKey(), dispatch.getAttempt());
      if (journal.isStarted(tp, marker)) {
        runInKeyOrder(dispatch.getEffectKey(), () -> new Finished(tp, record.offset(), epoch, startedBefore(dispatch), marker));
      } else {
        toJournal.add(new Journalled(tp, record.offset(), epoch, dispatch, marker));
      }
      return;
    }
    runInKeyOrder(dispatch.getEffectKey(), () -> new Finished(tp, record.offset(), epoch, perform(dispatch), null));
  }

  /**
   * Commits start markers for these dispatches (with the offsets, so a fenced executor fails here)
   * and only then runs them. If the commit aborts, they are redelivered and journalled again.
   */
  private void startJournalled(List<Journalled> dispatches) {
    Set<TopicPartition> partitions = new HashSet<>();
    for (Journalled j : dispatches) {
      unpublished.add(journal.startRecord(j.tp(), j.marker(), owner));
      partitions.add(j.tp());
    }
    if (!commit(partitions)) {
      return;
    }
    for (Journalled j : dispatches) {
      journal.started(j.tp(), j.marker());
      runInKeyOrder(j.dispatch().getEffectKey(), () -> new Finished(j.tp(), j.offset(), j.epoch(), perform(j.dispatch()), j.marker()));
    }
  }

  private void runInKeyOrder(String key, Supplier<Finished> effect) {
    CompletableFuture<Void> previous = tails.getOrDefault(key, CompletableFuture.completedFuture(null));
    CompletableFuture<Void> next = previous.handle((ignored, error) -> null)
        .thenRunAsync(() -> finished.add(effect.get()), workers);
    tails.put(key, next);
    next.whenComplete((ignored, error) -> {
      tails.remove(key, next);
      if (error != null && !halted) {
        log.error("Effect for key {} was not recorded: {}", key, error.toString());
      }
    });
  }

  /** Runs the effect and returns what to publish for it: the outcome and any effect records. */
  private List<ProducerRecord<byte[], byte[]>> perform(Dispatch dispatch) {
    Connector connector = connectors.get(dispatch.getTool());
    EffectOutcome outcome;
    if (connector == null) {
      outcome = new EffectOutcome.Retryable("NO_CONNECTOR",
          "no connector is configured for tool " + dispatch.getTool() + " on this executor");
    } else {
      RetryPolicy retry = policies.forTool(dispatch.getTool()).map(ToolPolicy::retry).orElse(RetryPolicy.DEFAULT);
      outcome = invoker.invoke(connector, new EffectRequest(dispatch.getEffectKey(), dispatch.getIdempotencyKey(),
          dispatch.getTenant(), dispatch.getTool(), dispatch.getArguments(), dispatch.getAttempt(), dispatch.getTraceId()), retry);
      effectsRun.incrementAndGet();
    }
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    if (outcome instanceof EffectOutcome.Succeeded s) {
      for (EffectRecord r : s.records()) {
        records.add(new ProducerRecord<>(r.topic(), r.key(), r.value()));
      }
    }
    Outcome value = toOutcome(dispatch, outcome);
    records.add(new ProducerRecord<>(ExecutorConfig.OUTCOMES_TOPIC, utf8(dispatch.getIdempotencyKey()),
        outcomeSerde.serialize(ExecutorConfig.OUTCOMES_TOPIC, value)));
    return records;
  }

  /**
   * A redelivered dispatch whose effect an earlier run started on a connector that cannot take a
   * repeat: found by lookup it succeeded, otherwise it may have happened and is held as ambiguous.
   */
  private List<ProducerRecord<byte[], byte[]>> startedBefore(Dispatch dispatch) {
    Connector connector = connectors.get(dispatch.getTool());
    Lookup lookup;
    try {
      lookup = connector.capabilities().supportsLookup() ? connector.lookup(dispatch.getEffectKey()) : Lookup.unsupported();
    } catch (RuntimeException e) {
      lookup = Lookup.unavailable();
    }
    EffectOutcome outcome = lookup.status() == Lookup.Status.FOUND
        ? new EffectOutcome.Succeeded(lookup.resultJson() == null ? "{}" : lookup.resultJson(), lookup.effectId(), List.of())
        : new EffectOutcome.Ambiguous("STARTED_BEFORE_REDELIVERY", "attempt " + dispatch.getAttempt() + " was started by an"
            + " earlier run whose outcome was never committed, and the downstream cannot take a repeat (lookup: "
            + lookup.status() + "); held for reconciliation instead of run again");
    return List.of(new ProducerRecord<>(ExecutorConfig.OUTCOMES_TOPIC, utf8(dispatch.getIdempotencyKey()),
        outcomeSerde.serialize(ExecutorConfig.OUTCOMES_TOPIC, toOutcome(dispatch, outcome))));
  }

  private Outcome toOutcome(Dispatch dispatch, EffectOutcome outcome) {
    Outcome.Builder out = Outcome.newBuilder()
        .setIdempotencyKey(dispatch.getIdempotencyKey())
        .setTenant(dispatch.getTenant())
        .setTool(dispatch.getTool())
        .setAttempt(dispatch.getAttempt())
        .setCompletedAt(clock.instant())
        .setReplyTopic(dispatch.getReplyTopic());
    if (outcome instanceof EffectOutcome.Succeeded s) {
      return out.setStatus(OutcomeStatus.SUCCEEDED).setResultJson(s.resultJson()).setEffectId(s.effectId()).build();
    }
    if (outcome instanceof EffectOutcome.Failed f) {
      return out.setStatus(OutcomeStatus.FAILED).setError(error(f.code(), f.message(), false,
          "Fix the request; the downstream will not accept it as it is.")).build();
    }
    if (outcome instanceof EffectOutcome.Retryable r) {
      return out.setStatus(OutcomeStatus.RETRYABLE).setError(error(r.code(), r.message(), true,
          "Nothing happened downstream; send the intent again later.")).build();
    }
    EffectOutcome.Ambiguous a = (EffectOutcome.Ambiguous) outcome;
    return out.setStatus(OutcomeStatus.AMBIGUOUS).setError(error(a.code(), a.message(), false,
        "The effect may have happened; reconcile with the downstream by key.")).build();
  }

  private static ErrorInfo error(String code, String message, boolean retriable, String action) {
    return ErrorInfo.newBuilder().setCode(code).setMessage(message).setRetriable(retriable).setCorrectiveAction(action).build();
  }

  private ProducerRecord<byte[], byte[]> deadLetter(ConsumerRecord<byte[], byte[]> record, Exception e) {
    log.warn("Dead-lettering an undecodable dispatch from {}-{}@{}", record.topic(), record.partition(), record.offset());
    RecordHeaders headers = new RecordHeaders();
    headers.add(DLQ_CODE_HEADER, utf8("UNDECODABLE_DISPATCH"));
    headers.add(DLQ_MESSAGE_HEADER, utf8(String.valueOf(e.getMessage())));
    headers.add("effectledger.source.topic", utf8(record.topic()));
    headers.add("effectledger.source.partition", utf8(Integer.toString(record.partition())));
    headers.add("effectledger.source.offset", utf8(Long.toString(record.offset())));
    return new ProducerRecord<>(ExecutorConfig.DEAD_LETTER_TOPIC, null, record.key(), record.value(), headers);
  }

  /** Moves finished effects from the workers into the next transaction. */
  private void drainFinished(Duration wait) {
    try {
      Finished first = wait.isZero() ? finished.poll() : finished.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
      for (Finished f = first; f != null; f = finished.poll()) {
        if (f.epoch() == epochs.getOrDefault(f.tp(), 0) && tracker.finished(f.tp(), f.offset())) {
          unpublished.addAll(f.records());
          if (f.marker() != null) {
            Finished done = f;
            unpublished.add(journal.tombstone(done.tp(), done.marker()));
            onCommitted.add(() -> journal.cleared(done.tp(), done.marker()));
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void commit() {
    commit(Set.of());
  }

  /**
   * Publishes finished outcomes and the offsets below the watermark in one transaction, with the
   * offsets of {@code fenced} even where they did not move. False when the transaction aborted
   * and everything in flight was dropped to be read again.
   */
  private boolean commit(Set<TopicPartition> fenced) {
    lastCommitMs = clock.millis();
    Map<TopicPartition, OffsetAndMetadata> offsets = tracker.committable();
    fenced.forEach(tp -> offsets.computeIfAbsent(tp, t -> new OffsetAndMetadata(tracker.watermark(t))));
    if (unpublished.isEmpty() && offsets.isEmpty()) {
      return true;
    }
    try {
      producer.beginTransaction();
      unpublished.forEach(producer::send);
      if (!offsets.isEmpty()) {
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
      }
      producer.commitTransaction();
      tracker.committed(offsets);
      unpublished.clear();
      onCommitted.forEach(Runnable::run);
      onCommitted.clear();
      return true;
    } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
      throw e;
    } catch (KafkaException e) {
      log.warn("Commit failed ({}); aborting and re-reading from the last committed offsets", e.toString());
      producer.abortTransaction();
      rewind();
      return false;
    }
  }

  /** After an aborted transaction: drop all work in flight and read again from committed offsets. */
  private void rewind() {
    unpublished.clear();
    onCommitted.clear();
    Collection<TopicPartition> assigned = consumer.assignment();
    assigned.forEach(tp -> epochs.merge(tp, 1, Integer::sum));
    tracker.forgetAll();
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new java.util.HashSet<>(assigned));
    for (TopicPartition tp : assigned) {
      OffsetAndMetadata offset = committed.get(tp);
      if (offset != null) {
        consumer.seek(tp, offset);
      } else {
        consumer.seekToBeginning(List.of(tp));
      }
    }
  }

  /**
   * How long the loop may block: up to 50 ms when nothing is running or waiting to be committed,
   * else only until the next commit is due, so that a finished effect waits for its commit no
   * longer than the commit interval.
   */
  private Duration nextWait() {
    if (tracker.pending() == 0 && unpublished.isEmpty() && finished.isEmpty()) {
      return Duration.ofMillis(50);
    }
    long untilCommit = config.commitInterval().toMillis() - (clock.millis() - lastCommitMs);
    return Duration.ofMillis(Math.max(1, Math.min(50, untilCommit)));
  }

  private void applyBackpressure() {
    boolean full = tracker.pending() >= config.concurrency() * 4;
    if (full && !paused) {
      consumer.pause(consumer.assignment());
      paused = true;
    } else if (!full && paused) {
      consumer.resume(consumer.paused());
      paused = false;
    }
  }

  /** Waits, within the shutdown deadline, until {@code pending} reaches zero. */
  private void finishRunning(java.util.function.IntSupplier pending) {
    long deadline = clock.millis() + config.shutdownDeadline().toMillis();
    while (pending.getAsInt() > 0 && clock.millis() < deadline) {
      drainFinished(Duration.ofMillis(20));
    }
    if (pending.getAsInt() > 0) {
      log.warn("Abandoning {} effect(s) still running after {}; their dispatches will be redelivered",
          pending.getAsInt(), config.shutdownDeadline());
    }
  }

  private final class Rebalance implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      if (halted || abandoning || partitions.isEmpty()) {
        return;
      }
      finishRunning(() -> tracker.pending(partitions));
      commit();
      forget(partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      paused = false;
      if (journal != null) {
        journal.load(partitions.stream().filter(tp -> journalledTopics.contains(tp.topic())).toList());
      }
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      unpublished.clear();
      onCommitted.clear();
      forget(partitions);
    }

    private void forget(Collection<TopicPartition> partitions) {
      partitions.forEach(tp -> epochs.merge(tp, 1, Integer::sum));
      tracker.forget(partitions);
      if (journal != null) {
        journal.forget(partitions);
      }
    }
  }

  private static Properties consumerProps(ExecutorConfig config) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, config.concurrency() * 4);
    return props;
  }

  private static Properties producerProps(ExecutorConfig config) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, config.transactionalIdPrefix() + "-" + UUID.randomUUID());
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000);
    return props;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
