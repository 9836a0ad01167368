package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.connectors.executor.internal.Finished;
import dev.effectledger.connectors.executor.internal.Invoker;
import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.executor.internal.KeyOrderedRunner;
import dev.effectledger.connectors.executor.internal.OffsetTracker;
import dev.effectledger.connectors.executor.internal.OutcomeTransactions;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
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
 * <p>A transaction commits once every effect read so far has finished and the minimum commit
 * interval has passed since the last one, and while effects still run at the latest every commit
 * interval ({@link ExecutorConfig}): dispatches become readable in bursts, one per ledger commit,
 * so each burst is answered when it is done, at about one transaction per burst.
 *
 * <p>A connector whose downstream cannot take a repeat is never run twice for one dispatch: see
 * {@link DispatchGate} and the {@link AttemptJournal}.
 *
 * <p>Every transaction commits the offsets of every partition read, with the group's generation, so
 * an executor that lost its partitions can commit nothing, and cannot start an effect.
 */
public final class EffectExecutor implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(EffectExecutor.class);

  /** The longest the poll loop blocks when nothing is running or waiting to be committed. */
  private static final Duration IDLE_WAIT = Duration.ofMillis(50);

  /**
   * With early commits, how long the loop waits for running effects to finish before it takes what
   * the consumer has fetched meanwhile: a new dispatch waits at most this long to start, and the
   * loop looks at the consumer at most 500 times a second while effects run.
   */
  private static final Duration EFFECTS_WAIT = Duration.ofMillis(2);

  /** How long a clean close waits for the group to take its leave. */
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  /** How much longer than the shutdown deadline close() waits for the poll thread. */
  private static final Duration JOIN_SLACK = Duration.ofSeconds(30);

  /** How long the producer may take to close after the last commit. */
  private static final Duration PRODUCER_CLOSE = Duration.ofSeconds(5);

  /**
   * How long an assignment waits for a killed owner's transaction to end before reading the
   * journal.
   */
  private static final Duration STABLE_OFFSETS_WAIT = Duration.ofMinutes(2);

  /** How long start markers may take to be readable as committed before they are written again. */
  private static final Duration START_SETTLE_WAIT = Duration.ofSeconds(1);

  /** Commits of one set of start markers before their effects are given up for this read. */
  private static final int START_SETTLE_ROUNDS = 3;

  /**
   * How often the journal's markers below the group's committed offsets are tombstoned: each sweep
   * reads the offsets back from the group coordinator (one request), so markers outlive their
   * dispatch by about this long.
   */
  private static final Duration JOURNAL_SWEEP_EVERY = Duration.ofSeconds(1);

  /**
   * How long a sweep waits for the group's offsets to be stable (no transaction holding them
   * pending) before it gives up until the next sweep.
   */
  private static final Duration JOURNAL_SWEEP_WAIT = Duration.ofSeconds(2);

  private final ExecutorConfig config;
  private final Map<String, Connector> connectors;
  private final ToolPolicies policies;
  private volatile long policyVersion;
  private volatile PolicyFeed policyFeed;
  private final Set<String> journalledLanes;

  /** Connectors this executor made for policies applied live, closed when it closes. */
  private final List<Connector> made = new java.util.concurrent.CopyOnWriteArrayList<>();

  private final Clock clock;
  private final EffectPerformer performer;
  private final Consumer<byte[], byte[]> consumer;
  private final Producer<byte[], byte[]> producer;
  private final KeyOrderedRunner workers;
  private final DispatchGate gate;
  private final Thread pollThread;
  private final OffsetTracker tracker = new OffsetTracker();
  private final LinkedBlockingQueue<Finished> finished = new LinkedBlockingQueue<>();

  private final Map<TopicPartition, Integer> epochs = new ConcurrentHashMap<>();

  /** Both null when no tool on these lanes needs start markers. */
  private final AttemptJournal journal;

  private final JournalReader journalReader;
  private final OutcomeTransactions transactions;
  private final Set<String> journalledTopics;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running = true;
  private volatile boolean halted;

  /** Set once the final commit is done: what still runs is abandoned, never published. */
  private volatile boolean abandoning;

  /** Aborts hanging transactions on the outcome and dispatch topics while the executor runs. */
  private AutoCloseable hangingSweep = () -> {};

  private boolean paused;
  private long lastCommitMs;
  private long lastSweepMs;

  private EffectExecutor(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper,
      Clients clients,
      String transactionalId,
      ExecutorObserver observer) {
    this.config = config;
    this.connectors = Map.copyOf(connectors);
    this.policies = policies;
    this.clock = clock;
    // The Kafka settings may carry the registry's credentials (basic.auth.*, bearer.auth.*).
    SchemaRegistry registry = SchemaRegistries.forUrl(config.schemaRegistryUrl(), config.kafka());
    this.performer =
        new EffectPerformer(
            this.connectors,
            policies,
            new Invoker(sleeper, () -> ThreadLocalRandom.current().nextDouble()),
            new RegistryAvroSerde<>(registry, Outcome.class),
            new RegistryAvroSerde<>(registry, ToolResult.class),
            clock,
            observer);
    this.consumer = clients.consumer();
    this.producer = clients.producer();
    LaneTools tools = new LaneTools(config.lanes(), this.connectors, policies);
    List<String> journalledLanes = tools.journalledLanes();
    this.journalledLanes = Set.copyOf(journalledLanes);
    this.journalledTopics =
        journalledLanes.stream().map(Topics::dispatch).collect(Collectors.toSet());
    this.journal = journalledLanes.isEmpty() ? null : new AttemptJournal(transactionalId);
    this.journalReader =
        journalledLanes.isEmpty() ? null : clients.journalReader().apply(journalledLanes);
    this.transactions = new OutcomeTransactions(producer, tracker, journal);
    this.workers = new KeyOrderedRunner(config.concurrency(), "effect-worker", () -> halted);
    this.gate =
        new DispatchGate(
            new RegistryAvroSerde<>(registry, Dispatch.class),
            performer,
            journal,
            tools,
            workers,
            finished);
    this.pollThread = new Thread(this::run, "executor-poll-" + String.join(",", config.lanes()));
  }

  /**
   * Checks that every irreversible tool on these lanes has a connector that cannot act twice, or
   * one whose held effects the reconciler can look up, then starts consuming.
   *
   * @throws IllegalStateException naming each irreversible tool whose connector neither honours
   *     keys nor is transactional nor can look effects up, or that has no connector
   */
  public static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper) {
    String transactionalId = config.transactionalId();
    return start(
        config,
        connectors,
        policies,
        clock,
        sleeper,
        Clients.kafka(config, transactionalId),
        transactionalId);
  }

  static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper,
      Clients clients,
      String transactionalId) {
    return start(
        config,
        connectors,
        policies,
        clock,
        sleeper,
        clients,
        transactionalId,
        ExecutorObserver.NONE);
  }

  static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper,
      Clients clients,
      String transactionalId,
      ExecutorObserver observer) {
    new LaneTools(config.lanes(), connectors, policies).refuseUnsafeIrreversibleTools();
    EffectExecutor executor =
        new EffectExecutor(
            config, connectors, policies, clock, sleeper, clients, transactionalId, observer);
    // While the coordinator still knows how the predecessor's last transaction ended: after
    // initTransactions it does not, and what a broker crash left open of it can only be aborted.
    clients.hanging().settlePredecessor();
    // With a stable transactional id this fences the killed predecessor and aborts its open
    // transaction.
    executor.producer.initTransactions();
    executor.hangingSweep = clients.hanging().sweep();
    executor.consumer.subscribe(
        config.lanes().stream().map(Topics::dispatch).toList(), executor.new Rebalance());
    executor.pollThread.start();
    return executor;
  }

  public static EffectExecutor start(
      ExecutorConfig config, Map<String, Connector> connectors, ToolPolicies policies) {
    return start(config, connectors, policies, Clock.systemUTC(), Sleeper.REAL);
  }

  /** As {@link #start(ExecutorConfig, Map, ToolPolicies)}, telling {@code observer} of effects. */
  public static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      ExecutorObserver observer) {
    String transactionalId = config.transactionalId();
    return start(
        config,
        connectors,
        policies,
        Clock.systemUTC(),
        Sleeper.REAL,
        Clients.kafka(config, transactionalId),
        transactionalId,
        observer);
  }

  /** Effects run so far (connector calls that ended in an outcome, retries counted once). */
  public int effectsRun() {
    return performer.effectsRun();
  }

  /** Transactions this executor has committed (outcomes, replies, start markers, offsets). */
  public long transactionsCommitted() {
    return transactions.committed();
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
    PolicyFeed feed = policyFeed;
    if (feed != null) {
      feed.close();
    }
    running = false;
    join();
    made.forEach(Connector::close);
  }

  /**
   * Follows the applied tool policy on tool-policy ({@code effectledger tools apply}): each newer
   * version's tools on this executor's lanes get connectors from {@code connectorsFor} and are run
   * from the next dispatch on, without a restart. A version this executor cannot run safely as it
   * is (an irreversible tool whose connector cannot resolve an ambiguous effect; a tool whose
   * downstream cannot take a repeat on a lane that has no attempt journal since the start) is
   * refused with a log line naming it and what to do; the executor keeps the version it has. (The
   * gateways follow the policy with {@link dev.effectledger.policy.FollowedPolicy}, which takes
   * every newer version; an executor may refuse one, and makes connectors for each it takes.)
   *
   * @return the version in use once what tool-policy held at the call has been read (0: none)
   */
  public long followPolicy(Function<ToolPolicies, Map<String, Connector>> connectorsFor)
      throws InterruptedException {
    PolicyFeed feed =
        PolicyFeed.start(
            config.kafka(),
            document -> apply(AppliedPolicy.fromJson(document), connectorsFor),
            "effectledger-executor-policy");
    this.policyFeed = feed;
    feed.awaitCurrent(Duration.ofSeconds(30));
    return policyVersion;
  }

  /** The applied policy version this executor runs dispatches under; 0: its own file. */
  public long policyVersion() {
    return policyVersion;
  }

  private synchronized void apply(
      AppliedPolicy applied, Function<ToolPolicies, Map<String, Connector>> connectorsFor) {
    if (applied.version() <= policyVersion) {
      return;
    }
    ToolPolicies next = applied.policies();
    Map<String, Connector> made;
    try {
      made = connectorsFor.apply(next);
    } catch (RuntimeException e) {
      log.error(
          "Tool policy version {} is not applied on this executor: {}. It keeps version {}.",
          applied.version(),
          e.getMessage(),
          policyVersion);
      return;
    }
    LaneTools tools = new LaneTools(config.lanes(), made, next);
    List<String> unjournalled =
        tools.journalledLanes().stream().filter(l -> !journalledLanes.contains(l)).toList();
    String refusal = null;
    try {
      tools.refuseUnsafeIrreversibleTools();
    } catch (IllegalStateException e) {
      refusal = e.getMessage();
    }
    if (refusal == null && !unjournalled.isEmpty()) {
      refusal =
          "lanes "
              + unjournalled
              + " now have a tool whose downstream cannot take a repeat, and need an attempt"
              + " journal that only a restart of this executor sets up";
    }
    if (refusal != null) {
      log.error(
          "Tool policy version {} is not applied on this executor ({}); it keeps version {}."
              + " Restart it to take the new version.",
          applied.version(),
          refusal,
          policyVersion);
      made.values().forEach(Connector::close);
      return;
    }
    performer.use(made, next);
    gate.use(tools);
    this.made.addAll(made.values());
    this.policyVersion = applied.version();
    log.info("Executor applies tool policy version {}", applied.version());
  }

  /** Stops at once without committing anything more, as a crash would. For tests and chaos. */
  public void halt() {
    halted = true;
    running = false;
    join();
  }

  private void join() {
    try {
      pollThread.join(config.shutdownDeadline().plus(JOIN_SLACK).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void run() {
    try {
      while (running) {
        // Paused (too many effects running): wait for effects to finish, not in a poll that
        // cannot return records. Effects running and early commits on: wait for them a moment
        // here, where their finishing wakes the loop (a poll would sleep through it), then take
        // what the consumer has without blocking. Otherwise take what has finished and poll.
        boolean watchEffects = !paused && config.commitsEarly() && tracker.pending() > 0;
        drainFinished(paused ? nextWait() : watchEffects ? effectsWait() : Duration.ZERO);
        if (commitDue()) {
          commit();
          sweepJournal();
        }
        applyBackpressure();
        for (ConsumerRecord<byte[], byte[]> record :
            consumer.poll(paused || watchEffects ? Duration.ZERO : nextWait())) {
          TopicPartition tp = new TopicPartition(record.topic(), record.partition());
          tracker.started(tp, record.offset());
          gate.read(record, epochs.getOrDefault(tp, 0));
        }
        gate.startJournalled(this::commit);
      }
      if (!halted) {
        finishRunning(tracker::pending);
        commit();
      }
    } catch (ProducerFencedException
        | FencedInstanceIdException
        | OutOfOrderSequenceException
        | AuthorizationException e) {
      failure.set(e);
      log.error(
          "Executor stopped: {}. Another executor took its instance id or transactional id (a restart of it, or"
              + " two executors configured with one executor.instance.id), or it lacks ACLs; restart it once the cause is"
              + " fixed.",
          e.toString());
    } catch (RuntimeException e) {
      failure.set(e);
      log.error(
          "Executor stopped on an unexpected error; restart it. Uncommitted dispatches will be redelivered.",
          e);
    } finally {
      abandoning = true;
      workers.shutdownNow();
      consumer.close(
          config.leaveGroupOnClose() && !halted
              ? CloseOptions.timeout(LEAVE_WAIT)
                  .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
              : CloseOptions.timeout(Duration.ZERO));
      producer.close(halted ? Duration.ZERO : PRODUCER_CLOSE);
      if (journalReader != null) {
        journalReader.close();
      }
      closeQuietly(hangingSweep);
    }
  }

  /** Moves finished effects from the workers into the next transaction. */
  private void drainFinished(Duration wait) {
    try {
      Finished first =
          wait.isZero() ? finished.poll() : finished.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
      for (Finished f = first; f != null; f = finished.poll()) {
        if (f.epoch() == epochs.getOrDefault(f.tp(), 0) && tracker.finished(f.tp(), f.offset())) {
          transactions.add(f);
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
   * Commits what finished (see {@link OutcomeTransactions#commit}); false when the transaction
   * aborted and everything in flight was dropped to be read again.
   */
  private boolean commit(Set<TopicPartition> starting) {
    lastCommitMs = clock.millis();
    if (!transactions.commit(starting, consumer::groupMetadata)) {
      rewind();
      return false;
    }
    return starting.isEmpty() || journalReader == null || startsSettled(starting);
  }

  /**
   * After a transaction with start markers for {@code starting} was reported committed: true once
   * they can be read as committed ({@link JournalReader#settled}). Until then they are committed
   * again, in a new transaction whose commit marker also ends the first one's records there, up to
   * {@link #START_SETTLE_ROUNDS} times; then the effects are not run and their dispatches are read
   * again (the journal keeps their markers as started: answered from a lookup or held, never run).
   */
  private boolean startsSettled(Set<TopicPartition> starting) {
    List<TopicPartition> journalPartitions =
        starting.stream().map(AttemptJournal::journalPartition).toList();
    for (int round = 1; ; round++) {
      if (journalReader.settled(journalPartitions, START_SETTLE_WAIT)) {
        // read what precedes the starts there: a releaser's fence beats a start it precedes
        if (journalReader.readNew(journal, journalPartitions, START_SETTLE_WAIT)) {
          return true;
        }
        log.warn(
            "Start markers on {} could not be read back within {}; their effects do not run, and"
                + " their dispatches are read again and answered from a lookup or held",
            journalPartitions,
            START_SETTLE_WAIT);
        rewind();
        return false;
      }
      if (round == START_SETTLE_ROUNDS) {
        break;
      }
      log.warn(
          "Start markers on {} were reported committed but cannot be read as committed after {}"
              + " (a broker restart can leave a transaction's records there pending); committing"
              + " them again",
          journalPartitions,
          START_SETTLE_WAIT);
      journal.reassertStarts(starting);
      if (!transactions.commit(starting, consumer::groupMetadata)) {
        rewind();
        return false;
      }
    }
    log.warn(
        "Start markers on {} still cannot be read as committed; their effects do not run, and their"
            + " dispatches are read again and answered from a lookup or held. Check the brokers'"
            + " health.",
        journalPartitions);
    rewind();
    return false;
  }

  /**
   * Stages tombstones for the journal's markers whose dispatch the group's committed offset has
   * passed, as read back from the group coordinator, not as this executor sent it: a transaction
   * that carried the offsets may still lose them (see {@link AttemptJournal}). The tombstones go
   * into the next transaction. An offset fetch that does not become stable in time (a transaction
   * holds the offsets pending) leaves the markers for the next sweep.
   */
  private void sweepJournal() {
    if (journal == null || clock.millis() - lastSweepMs < JOURNAL_SWEEP_EVERY.toMillis()) {
      return;
    }
    lastSweepMs = clock.millis();
    Set<TopicPartition> sweepable = journal.sweepable();
    if (sweepable.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> committed;
    try {
      committed = consumer.committed(sweepable, JOURNAL_SWEEP_WAIT);
    } catch (RetriableException e) { // a TimeoutException among them
      log.debug("Journal sweep skipped: the group's offsets are not stable yet ({})", e.toString());
      return;
    }
    journal.confirmed(offsets(committed));
  }

  private static Map<TopicPartition, Long> offsets(
      Map<TopicPartition, OffsetAndMetadata> committed) {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    committed.forEach(
        (tp, offset) -> {
          if (offset != null) {
            offsets.put(tp, offset.offset());
          }
        });
    return offsets;
  }

  /**
   * After an aborted transaction: drop all work in flight and read again from committed offsets.
   */
  private void rewind() {
    Collection<TopicPartition> assigned = consumer.assignment();
    assigned.forEach(tp -> epochs.merge(tp, 1, Integer::sum));
    tracker.forgetAll();
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(assigned));
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
   * Whether to commit now: the commit interval is up, or (early commits) every effect read so far
   * has finished, something waits to be published and the minimum interval is up. Dispatches become
   * readable in bursts, one per ledger commit; this commits each burst when its effects are done
   * rather than at a point of the interval unrelated to it.
   */
  private boolean commitDue() {
    long sinceLast = sinceLastCommitMs();
    if (sinceLast >= config.commitInterval().toMillis()) {
      return true;
    }
    return config.commitsEarly()
        && sinceLast >= config.minCommitInterval().toMillis()
        && tracker.pending() == 0
        && !transactions.isEmpty();
  }

  /**
   * How long the loop may block: up to {@link #IDLE_WAIT} when nothing is running or waiting to be
   * committed, else only until the next commit is due, so that a finished effect waits for its
   * commit no longer than the commit interval (with early commits and nothing running, no longer
   * than the minimum interval).
   */
  private Duration nextWait() {
    if (tracker.pending() == 0 && transactions.isEmpty() && finished.isEmpty()) {
      return IDLE_WAIT;
    }
    long untilCommit = config.commitInterval().toMillis() - sinceLastCommitMs();
    if (config.commitsEarly() && tracker.pending() == 0) {
      untilCommit =
          Math.min(untilCommit, config.minCommitInterval().toMillis() - sinceLastCommitMs());
    }
    return Duration.ofMillis(Math.max(1, Math.min(IDLE_WAIT.toMillis(), untilCommit)));
  }

  /**
   * How long the loop waits for running effects before it looks at the consumer again: {@link
   * #EFFECTS_WAIT}, or less when the commit is due sooner.
   */
  private Duration effectsWait() {
    long untilCommit = config.commitInterval().toMillis() - sinceLastCommitMs();
    return Duration.ofMillis(Math.max(1, Math.min(EFFECTS_WAIT.toMillis(), untilCommit)));
  }

  private long sinceLastCommitMs() {
    return clock.millis() - lastCommitMs;
  }

  private void applyBackpressure() {
    boolean full = tracker.pending() >= config.concurrency() * Clients.BACKLOG_PER_WORKER;
    if (full && !paused) {
      consumer.pause(consumer.assignment());
      paused = true;
    } else if (!full && paused) {
      consumer.resume(consumer.paused());
      paused = false;
    }
  }

  /** Waits, within the shutdown deadline, until {@code pending} reaches zero. */
  private void finishRunning(IntSupplier pending) {
    long deadline = clock.millis() + config.shutdownDeadline().toMillis();
    while (pending.getAsInt() > 0 && clock.millis() < deadline) {
      drainFinished(Duration.ofMillis(20));
    }
    if (pending.getAsInt() > 0) {
      log.warn(
          "Abandoning {} effect(s) still running after {}; their dispatches will be redelivered",
          pending.getAsInt(),
          config.shutdownDeadline());
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
      List<TopicPartition> journalled =
          partitions.stream().filter(tp -> journalledTopics.contains(tp.topic())).toList();
      if (journal != null && !journalled.isEmpty()) {
        // Waits until no transaction holds a pending offset commit for these partitions: every
        // transaction that wrote a start marker for them did, so it has committed or aborted.
        Map<TopicPartition, OffsetAndMetadata> committed =
            consumer.committed(new HashSet<>(journalled), STABLE_OFFSETS_WAIT);
        journalReader.load(journal, journalled);
        // Markers a predecessor left below the committed offsets are dead: tombstoned in the
        // first transaction, and no verdict sees them before that.
        journal.confirmed(offsets(committed));
      }
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      transactions.drop(partitions);
      forget(partitions);
    }

    private void forget(Collection<TopicPartition> partitions) {
      partitions.forEach(tp -> epochs.merge(tp, 1, Integer::sum));
      tracker.forget(partitions);
      if (journal != null) {
        journal.forget(partitions);
        journalReader.forget(partitions);
      }
    }
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      log.debug("Closing {}: {}", closeable, e.toString());
    }
  }
}
