package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.CommitPacer;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.connectors.executor.internal.Finished;
import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.executor.internal.JournalSweep;
import dev.effectledger.connectors.executor.internal.KeyOrderedRunner;
import dev.effectledger.connectors.executor.internal.OffsetTracker;
import dev.effectledger.connectors.executor.internal.OutcomeTransactions;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's poll thread and what only it touches: the consumer and the producer, the offsets
 * handed out, the finished effects waiting for a transaction, each partition's epoch, the commit
 * (with the read-back of start markers it carried) and the rewind after an abort, and the orderly
 * or halted stop. Its pacing is the {@link CommitPacer}'s, its journal sweep the {@link
 * JournalSweep}'s, its rebalances the {@link Rebalance}'s; see {@link EffectExecutor} for the
 * protocol.
 */
final class PollLoop {

  private static final Logger log = LoggerFactory.getLogger(PollLoop.class);

  /** How long a clean close waits for the group to take its leave. */
  private static final Duration LEAVE_WAIT = Duration.ofSeconds(5);

  /** How much longer than the shutdown deadline close() waits for the poll thread. */
  private static final Duration JOIN_SLACK = Duration.ofSeconds(30);

  /** How long the producer may take to close after the last commit. */
  private static final Duration PRODUCER_CLOSE = Duration.ofSeconds(5);

  /** How long start markers may take to be readable as committed before they are written again. */
  private static final Duration START_SETTLE_WAIT = Duration.ofSeconds(1);

  /** Commits of one set of start markers before their effects are given up for this read. */
  private static final int START_SETTLE_ROUNDS = 3;

  private final ExecutorConfig config;
  private final Clock clock;
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
  private final Set<String> journalledTopics;
  private final OutcomeTransactions transactions;
  private final CommitPacer pacer;
  private final JournalSweep sweep;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running = true;
  private volatile boolean halted;

  /** Set once the final commit is done: what still runs is abandoned, never published. */
  private volatile boolean abandoning;

  /** Aborts hanging transactions on the outcome and dispatch topics while the executor runs. */
  private AutoCloseable hangingSweep = () -> {};

  PollLoop(
      ExecutorConfig config,
      Clock clock,
      Clients clients,
      RegistryAvroSerde<Dispatch> dispatches,
      EffectPerformer performer,
      LaneTools tools,
      AttemptJournal journal,
      JournalReader journalReader,
      Set<String> journalledTopics) {
    this.config = config;
    this.clock = clock;
    this.consumer = clients.consumer();
    this.producer = clients.producer();
    this.journal = journal;
    this.journalReader = journalReader;
    this.journalledTopics = journalledTopics;
    this.transactions = new OutcomeTransactions(producer, tracker, journal);
    this.workers = new KeyOrderedRunner(config.concurrency(), "effect-worker", () -> halted);
    this.gate = new DispatchGate(dispatches, performer, journal, tools, workers, finished);
    this.pacer =
        new CommitPacer(
            config,
            clock,
            tracker,
            transactions,
            finished,
            consumer,
            config.concurrency() * Clients.BACKLOG_PER_WORKER);
    this.sweep = new JournalSweep(journal, consumer, clock);
    this.pollThread = new Thread(this::run, "executor-poll-" + String.join(",", config.lanes()));
  }

  DispatchGate gate() {
    return gate;
  }

  Producer<byte[], byte[]> producer() {
    return producer;
  }

  Consumer<byte[], byte[]> consumer() {
    return consumer;
  }

  /** The listener to subscribe with: this loop's answer to rebalances. */
  Rebalance rebalance() {
    return new Rebalance(
        this,
        consumer,
        tracker,
        transactions,
        pacer,
        epochs,
        journal,
        journalReader,
        journalledTopics);
  }

  /** Runs {@code sweep} while the executor runs, and closes it when the loop ends. */
  void sweepHangingWith(AutoCloseable sweep) {
    this.hangingSweep = sweep;
  }

  void start() {
    pollThread.start();
  }

  long transactionsCommitted() {
    return transactions.committed();
  }

  Throwable failure() {
    return failure.get();
  }

  boolean isRunning() {
    return pollThread.isAlive();
  }

  boolean halted() {
    return halted;
  }

  boolean abandoning() {
    return abandoning;
  }

  /** Stops consuming; what runs finishes within the shutdown deadline and is committed. */
  void stop() {
    running = false;
  }

  /** Stops at once without committing anything more, as a crash would. */
  void halt() {
    halted = true;
    running = false;
  }

  void join() {
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
        boolean watchEffects = !pacer.paused() && config.commitsEarly() && tracker.pending() > 0;
        drainFinished(
            pacer.paused() ? pacer.nextWait() : watchEffects ? pacer.effectsWait() : Duration.ZERO);
        if (pacer.commitDue()) {
          commit();
          sweep.sweepJournal();
        }
        pacer.applyBackpressure();
        for (ConsumerRecord<byte[], byte[]> record :
            consumer.poll(pacer.paused() || watchEffects ? Duration.ZERO : pacer.nextWait())) {
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

  void commit() {
    commit(Set.of());
  }

  /**
   * Commits what finished (see {@link OutcomeTransactions#commit}); false when the transaction
   * aborted and everything in flight was dropped to be read again.
   */
  private boolean commit(Set<TopicPartition> starting) {
    pacer.committing();
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

  /** Waits, within the shutdown deadline, until {@code pending} reaches zero. */
  void finishRunning(IntSupplier pending) {
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

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      log.debug("Closing {}: {}", closeable, e.toString());
    }
  }
}
