package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.AbstractMap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * The whole effect protocol explored, not sampled (issue 52): a model of the ledger, the dispatch
 * partition, the executor with its attempt journal, the reconciler, the agents' retries and the
 * downstream (one that ignores keys), and a breadth-first search through <em>every</em>
 * interleaving of their steps within a scenario's bounds, crash points and restarts included,
 * checking after every step that no action took effect more than once and that every success told
 * to an agent names that one effect, and in every state where the executor is idle that no start
 * marker is left unanswered (a release waiting on it would wait for good). Breadth first, so the
 * first violation found is a shortest one: it is printed step by step.
 *
 * <h2>What is real and what is modelled</h2>
 *
 * The executor's decisions are this module's code, called as the executor calls it: {@link
 * AttemptJournal} (start markers, answers, tombstones after the committed offset, fences, beaten
 * starts, read back in partition order), {@link DispatchGate#decide} and {@link
 * DispatchGate#mayRun}; the reconciler's release decision is {@link AttemptJournal#releasable}.
 * Revert either fix in that code and this test fails with a counterexample (the note of 2026-11-28
 * shows both). The ledger is modelled from its state machine (docs/architecture.md, whose every row
 * {@code LedgerStateMachineContract} holds to the real topology under both guarantees): its steps
 * are the transactions it commits under exactly_once_v2, so a ledger crash falls between steps and
 * changes nothing the model keeps. Kafka is modelled as ordered logs: a transaction's records are
 * appended at once; a crash loses what was not committed.
 *
 * <h2>Why hand-written</h2>
 *
 * jqwik's stateful testing and Fray were considered: jqwik samples action sequences (shrinking a
 * failure, but never covering every interleaving), and Fray explores thread schedules of one JVM,
 * while the hazards here are between processes and their logs. The model's state is a value, so a
 * visited set prunes what two interleavings reach alike, and the search is exhaustive within the
 * bounds at a cost of seconds.
 */
class EffectProtocolExplorationTest {

  private static final TopicPartition P = new TopicPartition("tool-dispatch.payments", 0);
  private static final TopicPartition J = AttemptJournal.journalPartition(P);

  // ---------------------------------------------------------------- the model's values

  /** A dispatch on the one partition; its offset is its index. */
  record Disp(String key, long life, int attempt) {}

  enum Status {
    SUCCEEDED,
    AMBIGUOUS,
    RETRYABLE
  }

  /** An outcome on tool-outcomes. */
  record Out(String key, long life, int attempt, Status status, String code, String effectId) {}

  /** A record of the journal partition; a null value is a tombstone. */
  record JRec(String key, String value) {}

  enum EntryState {
    PENDING,
    UNKNOWN,
    SUCCEEDED
  }

  record Entry(EntryState state, long life, int attempt, String effectId) {}

  /** A HELD_UNKNOWN audit event, the reconciler's cue; {@code seq} tells two holds apart. */
  record Held(String key, long life, int attempt, int seq) {}

  /** What a downstream call does. */
  enum Result {
    /** Acts and answers. */
    OK,
    /** Acts, then the answer is lost (500, a dropped connection). */
    AMBIGUOUS_AFTER_EFFECT,
    /** Does not act, and the answer is lost all the same. */
    AMBIGUOUS_BEFORE_EFFECT,
    /** Refuses before acting (retries spent). */
    REFUSED
  }

  enum Phase {
    STAGED,
    RUNNING,
    DONE
  }

  /** An executor's work on one dispatch read. */
  record Work(long offset, Disp d, Phase phase, String marker, Out out, boolean noEffect) {}

  /** An operation on the executor's journal, replayed to rebuild it (it is mutable). */
  sealed interface Op permits Assigned, Apply, Start, Answer, Commit, Confirmed {}

  record Assigned() implements Op {}

  record Apply(JRec record) implements Op {}

  record Start(String marker, long offset) implements Op {}

  record Answer(String marker, long offset, boolean noEffect) implements Op {}

  record Commit() implements Op {}

  record Confirmed(long offset) implements Op {}

  /**
   * The executor's journal: the operations that made it, compared by the journal's canonical state,
   * so that two histories leading to the same journal are one state.
   */
  static final class Memory {
    final List<Op> ops;
    final String state;

    Memory(List<Op> ops) {
      this.ops = List.copyOf(ops);
      this.state = rebuild().toString();
    }

    AttemptJournal rebuild() {
      AttemptJournal journal = new AttemptJournal("executor");
      for (Op op : ops) {
        if (op instanceof Assigned) {
          journal.assigned(P);
        } else if (op instanceof Apply a) {
          journal.apply(J, bytes(a.record().key()), bytes(a.record().value()));
        } else if (op instanceof Start st) {
          journal.start(P, st.marker(), st.offset());
        } else if (op instanceof Answer a) {
          journal.answer(P, a.marker(), a.offset(), a.noEffect());
        } else if (op instanceof Commit) {
          journal.records();
          journal.committed();
        } else if (op instanceof Confirmed c) {
          journal.confirmed(Map.of(P, c.offset()));
        }
      }
      return journal;
    }

    Memory plus(Op... more) {
      List<Op> next = new ArrayList<>(ops);
      next.addAll(List.of(more));
      return new Memory(next);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Memory m && m.state.equals(state);
    }

    @Override
    public int hashCode() {
      return state.hashCode();
    }

    @Override
    public String toString() {
      return state;
    }
  }

  record Exec(
      boolean up, long position, int journalRead, List<Work> work, Memory memory, int crashes) {}

  enum ReconPhase {
    IDLE,
    FENCED,
    LOOKED
  }

  record Recon(int passes, ReconPhase phase, Held target, String found, Set<Integer> resolved) {}

  /** The whole system: every log, every process's state, the downstream's effects. */
  record State(
      List<String> intents,
      int intentsRead,
      List<Out> outcomes,
      int outcomesRead,
      List<Disp> dispatches,
      Map<String, Entry> entries,
      Map<String, Held> held,
      int holds,
      Map<String, Integer> sends,
      Set<String> answered,
      Map<String, List<String>> effects,
      List<JRec> journal,
      long committedOffset,
      Exec exec,
      Recon recon) {}

  /** A scenario's bounds. */
  record Bounds(
      List<String> keys,
      int maxSends,
      boolean executorUp,
      int maxCrashes,
      int reconcilerPasses,
      Set<Result> results,
      int concurrency,
      boolean redispatchOnTimeout) {}

  /** A property broken after a step. */
  static final class Violation extends RuntimeException {
    Violation(String message) {
      super(message);
    }
  }

  /** A labelled step from one state to the next. */
  record Step(String label, State next) {}

  // ---------------------------------------------------------------- the scenarios

  /**
   * Issue 52's class: the lane's executor is down (an outage, or a crash at any point), the pending
   * timeout holds the key, the reconciler fences, looks up and publishes in separate steps, and the
   * agent sends again whenever it likes; the downstream acts or not, answering or not.
   */
  @Test
  void shouldNeverActTwiceWhileTheReconcilerReleasesAroundAQueuedDispatch() {
    Bounds bounds =
        new Bounds(
            List.of("k1"),
            2,
            false,
            1,
            2,
            Set.of(Result.OK, Result.AMBIGUOUS_AFTER_EFFECT, Result.AMBIGUOUS_BEFORE_EFFECT),
            1,
            false);
    Report report = explore(bounds);
    report.print("released-around-a-queued-dispatch");
    assertThat(report.violation).as(report.trace()).isNull();
    assertThat(report.states).as("states explored").isGreaterThan(10_000);
  }

  /**
   * The class fixed on 2026-11-24: two dispatches on one partition, the later one finishing first;
   * its outcome commits while the partition's offset stays below the earlier one; then the executor
   * crashes and every dispatch above the committed offset is read again.
   */
  @Test
  void shouldNeverActTwiceWhenEffectsFinishOutOfOrderAndTheExecutorCrashes() {
    Bounds bounds =
        new Bounds(
            List.of("k1", "k2"),
            1,
            true,
            2,
            0,
            Set.of(Result.OK, Result.AMBIGUOUS_BEFORE_EFFECT, Result.REFUSED),
            2,
            false);
    Report report = explore(bounds);
    report.print("out-of-order-completion-and-crashes");
    assertThat(report.violation).as(report.trace()).isNull();
    assertThat(report.states).as("states explored").isGreaterThan(10_000);
  }

  /**
   * Re-dispatches after a pending timeout (attempt 2 follows an attempt that may have acted), the
   * executor up from the start and crashing at any point, the reconciler once.
   */
  @Test
  void shouldNeverActTwiceWithRedispatchesCrashesAndTheReconciler() {
    Bounds bounds =
        new Bounds(
            List.of("k1"),
            2,
            true,
            1,
            1,
            Set.of(Result.OK, Result.AMBIGUOUS_AFTER_EFFECT),
            1,
            true);
    Report report = explore(bounds);
    report.print("redispatch-crash-reconcile");
    assertThat(report.violation).as(report.trace()).isNull();
    assertThat(report.states).as("states explored").isGreaterThan(10_000);
  }

  // ---------------------------------------------------------------- the search

  /** What a search found: states and steps seen, and the first violation with its trace. */
  static final class Report {
    int states;
    long steps;
    int depth;
    Violation violation;
    List<String> path = List.of();

    String trace() {
      if (violation == null) {
        return "no violation";
      }
      StringBuilder out =
          new StringBuilder("counterexample (" + path.size() + " steps, shortest found):\n");
      for (int i = 0; i < path.size(); i++) {
        out.append(String.format("  %2d. %s%n", i + 1, path.get(i)));
      }
      return out.append("  => ").append(violation.getMessage()).toString();
    }

    void print(String scenario) {
      System.out.printf(
          "effect protocol exploration, %s: %,d states, %,d steps, depth %d, %s%n",
          scenario, states, steps, depth, violation == null ? "no violation" : trace());
    }
  }

  private record Visit(State parent, String label, int depth) {}

  /** A search that grows past this many states stops with an error naming its bounds. */
  static final int MAX_STATES = 3_000_000;

  static Report explore(Bounds bounds) {
    Report report = new Report();
    State start = initial(bounds);
    Map<State, Visit> seen = new HashMap<>();
    seen.put(start, new Visit(null, null, 0));
    ArrayDeque<State> frontier = new ArrayDeque<>();
    frontier.add(start);
    while (!frontier.isEmpty()) {
      if (seen.size() > MAX_STATES) {
        throw new IllegalStateException(
            "more than "
                + MAX_STATES
                + " states: the bounds "
                + bounds
                + " are too wide to explore");
      }
      State state = frontier.poll();
      int depth = seen.get(state).depth();
      report.depth = Math.max(report.depth, depth);
      List<String> labels = new ArrayList<>();
      List<UnaryOperator<State>> moves = new ArrayList<>();
      steps(state, bounds, labels, moves);
      String stuck = unansweredStart(state);
      if (stuck != null) {
        report.violation = new Violation(stuck);
        List<String> path = new ArrayList<>();
        for (State s = state; seen.get(s).parent() != null; s = seen.get(s).parent()) {
          path.add(0, seen.get(s).label());
        }
        report.path = path;
        report.states = seen.size();
        return report;
      }
      for (int i = 0; i < moves.size(); i++) {
        report.steps++;
        State next;
        try {
          next = moves.get(i).apply(state);
        } catch (Violation v) {
          report.violation = v;
          List<String> path = new ArrayList<>();
          path.add(labels.get(i));
          for (State s = state; seen.get(s).parent() != null; s = seen.get(s).parent()) {
            path.add(0, seen.get(s).label());
          }
          report.path = path;
          report.states = seen.size();
          return report;
        }
        if (!seen.containsKey(next)) {
          seen.put(next, new Visit(state, labels.get(i), depth + 1));
          frontier.add(next);
        }
      }
    }
    report.states = seen.size();
    return report;
  }

  /**
   * The liveness half: once the executor is up and idle (every dispatch read, every outcome
   * committed) and the ledger has read everything, no start marker may be left "started". A release
   * waits for a start before its fence to be answered; one never answered keeps the key held for
   * good (a redelivered dispatch answered SUPERSEDED without answering its marker did that, found
   * by reading the code on 2026-11-28). Null when none is.
   */
  static String unansweredStart(State s) {
    Exec x = s.exec();
    if (!x.up()
        || !x.work().isEmpty()
        || x.position() < s.dispatches().size()
        || s.intentsRead() < s.intents().size()
        || s.outcomesRead() < s.outcomes().size()) {
      return null;
    }
    Map<String, String> latest = new HashMap<>();
    s.journal().forEach(r -> latest.put(r.key(), r.value()));
    for (Map.Entry<String, String> marker : latest.entrySet()) {
      String value = marker.getValue();
      if (value != null && value.startsWith("started ")) {
        return "the executor is idle with every dispatch read, yet the start marker "
            + marker.getKey()
            + " is still started: a release of its key waits for it for good";
      }
    }
    return null;
  }

  static State initial(Bounds bounds) {
    Map<String, Integer> sends = new TreeMap<>();
    Map<String, List<String>> effects = new TreeMap<>();
    bounds
        .keys()
        .forEach(
            k -> {
              sends.put(k, 0);
              effects.put(k, List.of());
            });
    Exec exec =
        bounds.executorUp()
            ? new Exec(true, 0, 0, List.of(), new Memory(List.of(new Assigned())), 0)
            : new Exec(false, 0, 0, List.of(), new Memory(List.of()), 0);
    return new State(
        List.of(),
        0,
        List.of(),
        0,
        List.of(),
        Map.of(),
        Map.of(),
        0,
        Map.copyOf(sends),
        Set.of(),
        Map.copyOf(effects),
        List.of(),
        0,
        exec,
        new Recon(0, ReconPhase.IDLE, null, null, Set.of()));
  }

  /** Every step enabled in {@code s}, with its label. */
  static void steps(State s, Bounds b, List<String> labels, List<UnaryOperator<State>> moves) {
    // agents: each may send (again) until it has its answer, within its bound
    for (String key : b.keys()) {
      if (s.sends().get(key) < b.maxSends() && !s.answered().contains(key)) {
        labels.add("agent sends " + key);
        moves.add(st -> send(st, key));
      }
    }
    // the ledger: the next intent, the next outcome, a pending timeout
    if (s.intentsRead() < s.intents().size()) {
      labels.add("ledger reads intent @" + s.intentsRead());
      moves.add(st -> ledgerIntent(st));
    }
    if (s.outcomesRead() < s.outcomes().size()) {
      labels.add("ledger reads outcome " + s.outcomes().get(s.outcomesRead()));
      moves.add(st -> ledgerOutcome(st));
    }
    for (Map.Entry<String, Entry> e : s.entries().entrySet()) {
      if (e.getValue().state() == EntryState.PENDING) {
        labels.add("ledger: pending timeout of " + e.getKey());
        moves.add(st -> timeout(st, e.getKey(), b));
      }
    }
    // the executor
    Exec x = s.exec();
    if (x.up()) {
      long unfinished = x.work().size();
      if (x.position() < s.dispatches().size() && unfinished < b.concurrency()) {
        labels.add(
            "executor reads dispatch @"
                + x.position()
                + " "
                + s.dispatches().get((int) x.position()));
        moves.add(st -> executorRead(st));
      }
      boolean toCommit =
          x.work().stream().anyMatch(w -> w.phase() != Phase.RUNNING)
              || x.memory().rebuild().hasStaged();
      if (toCommit) {
        labels.add("executor commits a transaction");
        moves.add(st -> executorCommit(st));
      }
      for (int i = 0; i < x.work().size(); i++) {
        if (x.work().get(i).phase() == Phase.RUNNING) {
          for (Result r : b.results()) {
            int index = i;
            labels.add("downstream call for " + x.work().get(i).d() + ": " + r);
            moves.add(st -> executorEffect(st, index, r));
          }
        }
      }
      if (!x.memory().rebuild().sweepable().isEmpty()) {
        labels.add("executor sweeps its journal at committed offset " + s.committedOffset());
        moves.add(st -> executorSweep(st));
      }
      if (x.crashes() < b.maxCrashes()) {
        labels.add("executor crashes (kill -9)");
        moves.add(st -> executorCrash(st));
      }
    } else {
      labels.add("executor starts");
      moves.add(st -> executorStart(st));
    }
    // the reconciler
    Recon r = s.recon();
    if (r.phase() == ReconPhase.IDLE && r.passes() < b.reconcilerPasses()) {
      for (Held h : s.held().values()) {
        if (!r.resolved().contains(h.seq())) {
          labels.add("reconciler fences and reads back " + h);
          moves.add(st -> reconcilerFence(st, h));
        }
      }
    } else if (r.phase() == ReconPhase.FENCED) {
      labels.add("reconciler looks " + r.target().key() + " up");
      moves.add(st -> reconcilerLookup(st));
    } else if (r.phase() == ReconPhase.LOOKED) {
      labels.add("reconciler publishes what it found for " + r.target());
      moves.add(st -> reconcilerPublish(st));
    }
  }

  // ---------------------------------------------------------------- agents and the ledger

  static State send(State s, String key) {
    return with(s)
        .intents(append(s.intents(), key))
        .sends(put(s.sends(), key, s.sends().get(key) + 1))
        .build();
  }

  static State ledgerIntent(State s) {
    int offset = s.intentsRead();
    String key = s.intents().get(offset);
    Builder next = with(s).intentsRead(offset + 1);
    Entry e = s.entries().get(key);
    if (e == null) {
      next.entries(put(s.entries(), key, new Entry(EntryState.PENDING, offset, 1, null)))
          .dispatches(append(s.dispatches(), new Disp(key, offset, 1)))
          .held(remove(s.held(), key));
    } else if (e.state() == EntryState.SUCCEEDED) {
      answer(s, key, e.effectId(), "a replay");
      next.answered(add(s.answered(), key));
    } // PENDING: IN_FLIGHT; UNKNOWN: a replay of UNKNOWN: nothing the agent acts on
    return next.build();
  }

  /** The ledger's outcome rules (OutcomeProcessor), for a tool held on ambiguity. */
  static State ledgerOutcome(State s) {
    Out o = s.outcomes().get(s.outcomesRead());
    Builder next = with(s).outcomesRead(s.outcomesRead() + 1);
    Entry e = s.entries().get(o.key());
    boolean current = e != null && o.attempt() == e.attempt() && o.life() == e.life();
    if (ErrorCode.SUPERSEDED.name().equals(o.code())) {
      return next.build(); // only audited
    }
    if (e == null) {
      if (o.status() == Status.SUCCEEDED) { // a late success re-instates the entry
        next.entries(
            put(
                s.entries(),
                o.key(),
                new Entry(EntryState.SUCCEEDED, o.life(), o.attempt(), o.effectId())));
      }
      return next.build();
    }
    if (e.state() == EntryState.SUCCEEDED) {
      return next.build(); // late (a second effect id would be counted)
    }
    if (o.status() == Status.SUCCEEDED) {
      answer(s, o.key(), o.effectId(), "the completion");
      return next.entries(
              put(
                  s.entries(),
                  o.key(),
                  new Entry(EntryState.SUCCEEDED, e.life(), e.attempt(), o.effectId())))
          .held(remove(s.held(), o.key()))
          .answered(add(s.answered(), o.key()))
          .build();
    }
    if (!current) {
      return next.build();
    }
    if (o.status() == Status.RETRYABLE) { // released: the agent may send again
      return next.entries(remove(s.entries(), o.key())).held(remove(s.held(), o.key())).build();
    }
    if (e.state() == EntryState.PENDING) { // AMBIGUOUS: held
      return hold(next, s, o.key(), e);
    }
    return next.build(); // UNKNOWN and ambiguous again: no evidence
  }

  static State timeout(State s, String key, Bounds b) {
    Entry e = s.entries().get(key);
    if (b.redispatchOnTimeout() && e.attempt() < 2) {
      Entry again = new Entry(EntryState.PENDING, e.life(), e.attempt() + 1, null);
      return with(s)
          .entries(put(s.entries(), key, again))
          .dispatches(append(s.dispatches(), new Disp(key, e.life(), again.attempt())))
          .build();
    }
    return hold(with(s), s, key, e);
  }

  static State hold(Builder next, State s, String key, Entry e) {
    return next.entries(
            put(s.entries(), key, new Entry(EntryState.UNKNOWN, e.life(), e.attempt(), null)))
        .held(put(s.held(), key, new Held(key, e.life(), e.attempt(), s.holds())))
        .holds(s.holds() + 1)
        .build();
  }

  /** Checks a success told to an agent: it must name the one effect the action had. */
  static void answer(State s, String key, String effectId, String what) {
    List<String> effects = s.effects().get(key);
    if (effects.size() != 1 || !effects.get(0).equals(effectId)) {
      throw new Violation(
          "the agent of "
              + key
              + " is told "
              + what
              + " names effect "
              + effectId
              + ", but the downstream has "
              + effects);
    }
  }

  // ---------------------------------------------------------------- the executor

  static Dispatch avro(Disp d) {
    return Dispatch.newBuilder()
        .setIdempotencyKey(d.key())
        .setEffectKey(d.key())
        .setTenant("acme")
        .setRunId("run")
        .setStepId("step")
        .setTool("pay")
        .setLane("payments")
        .setArguments("{}")
        .setAttempt(d.attempt())
        .setDispatchedAt(Instant.EPOCH)
        .setIncarnation(d.life())
        .build();
  }

  static String marker(Disp d) {
    return AttemptJournal.marker(d.key(), d.attempt(), d.life());
  }

  static State executorRead(State s) {
    Exec x = s.exec();
    long offset = x.position();
    Disp d = s.dispatches().get((int) offset);
    AttemptJournal journal = x.memory().rebuild();
    Memory memory = x.memory();
    Work work =
        switch (DispatchGate.decide(journal, P, avro(d), offset)) {
          case SUPERSEDED -> new Work(offset, d, Phase.DONE, null, superseded(d), true);
          case RUN -> {
            memory = memory.plus(new Start(marker(d), offset));
            yield new Work(offset, d, Phase.STAGED, marker(d), null, false);
          }
          case ANSWERED -> new Work(offset, d, Phase.DONE, null, null, false);
          case STARTED_BEFORE -> {
            List<String> effects = s.effects().get(d.key());
            Out out =
                effects.isEmpty()
                    ? new Out(
                        d.key(),
                        d.life(),
                        d.attempt(),
                        Status.AMBIGUOUS,
                        "STARTED_BEFORE_REDELIVERY",
                        null)
                    : new Out(
                        d.key(), d.life(), d.attempt(), Status.SUCCEEDED, null, effects.get(0));
            yield new Work(offset, d, Phase.DONE, marker(d), out, false);
          }
        };
    return with(s)
        .exec(
            new Exec(
                true, offset + 1, x.journalRead(), append(x.work(), work), memory, x.crashes()))
        .build();
  }

  static Out superseded(Disp d) {
    return new Out(
        d.key(), d.life(), d.attempt(), Status.AMBIGUOUS, ErrorCode.SUPERSEDED.name(), null);
  }

  /**
   * One transaction: the finished work's outcomes and journal answers, the staged start markers and
   * tombstones, the offsets at the low watermark; then, when it carried starts, the journal read
   * back up to them, and each start run or answered SUPERSEDED as a fence before it says.
   */
  static State executorCommit(State s) {
    Exec x = s.exec();
    Memory memory = x.memory();
    List<Op> answers = new ArrayList<>();
    for (Work w : x.work()) {
      if (w.phase() == Phase.DONE && w.marker() != null) {
        answers.add(new Answer(w.marker(), w.offset(), w.noEffect()));
      }
    }
    memory = memory.plus(answers.toArray(Op[]::new));
    AttemptJournal journal = memory.rebuild();
    List<JRec> log = new ArrayList<>(s.journal());
    for (ProducerRecord<byte[], byte[]> r : journal.records()) {
      log.add(new JRec(string(r.key()), string(r.value())));
    }
    memory = memory.plus(new Commit());
    List<Out> outcomes = new ArrayList<>(s.outcomes());
    List<Work> left = new ArrayList<>();
    boolean starting = false;
    for (Work w : x.work()) {
      if (w.phase() == Phase.DONE) {
        if (w.out() != null) {
          outcomes.add(w.out());
        }
      } else {
        starting |= w.phase() == Phase.STAGED;
        left.add(w);
      }
    }
    long committed = left.stream().mapToLong(Work::offset).min().orElse(x.position());
    int read = x.journalRead();
    if (starting) { // read back what precedes the starts: a fence beats a start it precedes
      List<Op> applied = new ArrayList<>();
      for (int i = read; i < log.size(); i++) {
        applied.add(new Apply(log.get(i)));
      }
      read = log.size();
      memory = memory.plus(applied.toArray(Op[]::new));
      AttemptJournal back = memory.rebuild();
      List<Work> decided = new ArrayList<>();
      for (Work w : left) {
        if (w.phase() != Phase.STAGED) {
          decided.add(w);
        } else if (DispatchGate.mayRun(back, P, w.marker())) {
          decided.add(new Work(w.offset(), w.d(), Phase.RUNNING, w.marker(), null, false));
        } else {
          decided.add(new Work(w.offset(), w.d(), Phase.DONE, w.marker(), superseded(w.d()), true));
        }
      }
      left = decided;
    }
    return with(s)
        .journal(List.copyOf(log))
        .outcomes(List.copyOf(outcomes))
        .committedOffset(committed)
        .exec(new Exec(true, x.position(), read, List.copyOf(left), memory, x.crashes()))
        .build();
  }

  static State executorEffect(State s, int index, Result result) {
    Exec x = s.exec();
    Work w = x.work().get(index);
    Disp d = w.d();
    List<String> effects = s.effects().get(d.key());
    boolean acts = result == Result.OK || result == Result.AMBIGUOUS_AFTER_EFFECT;
    if (acts) {
      effects = append(effects, "fx-" + d.key() + "-" + (effects.size() + 1));
      if (effects.size() > 1) {
        throw new Violation(d.key() + " took effect " + effects.size() + " times: " + effects);
      }
    }
    Out out =
        switch (result) {
          case OK ->
              new Out(
                  d.key(),
                  d.life(),
                  d.attempt(),
                  Status.SUCCEEDED,
                  null,
                  effects.get(effects.size() - 1));
          case AMBIGUOUS_AFTER_EFFECT, AMBIGUOUS_BEFORE_EFFECT ->
              new Out(d.key(), d.life(), d.attempt(), Status.AMBIGUOUS, "HTTP_500", null);
          case REFUSED ->
              new Out(d.key(), d.life(), d.attempt(), Status.RETRYABLE, "HTTP_503", null);
        };
    List<Work> work = new ArrayList<>(x.work());
    work.set(index, new Work(w.offset(), d, Phase.DONE, w.marker(), out, result == Result.REFUSED));
    return with(s)
        .effects(put(s.effects(), d.key(), effects))
        .exec(
            new Exec(
                true, x.position(), x.journalRead(), List.copyOf(work), x.memory(), x.crashes()))
        .build();
  }

  static State executorSweep(State s) {
    Exec x = s.exec();
    return with(s)
        .exec(
            new Exec(
                true,
                x.position(),
                x.journalRead(),
                x.work(),
                x.memory().plus(new Confirmed(s.committedOffset())),
                x.crashes()))
        .build();
  }

  static State executorCrash(State s) {
    Exec x = s.exec();
    return with(s)
        .exec(new Exec(false, 0, 0, List.of(), new Memory(List.of()), x.crashes() + 1))
        .build();
  }

  /** A (re)start: the partition assigned, the journal read to its end, reading from the offset. */
  static State executorStart(State s) {
    List<Op> ops = new ArrayList<>();
    ops.add(new Assigned());
    s.journal().forEach(r -> ops.add(new Apply(r)));
    return with(s)
        .exec(
            new Exec(
                true,
                s.committedOffset(),
                s.journal().size(),
                List.of(),
                new Memory(ops),
                s.exec().crashes()))
        .build();
  }

  // ---------------------------------------------------------------- the reconciler

  /** ReleaseFences: the fence appended, the partition read back up to it, the rule applied. */
  static State reconcilerFence(State s, Held h) {
    List<Map.Entry<String, String>> before = new ArrayList<>();
    s.journal().forEach(r -> before.add(new AbstractMap.SimpleEntry<>(r.key(), r.value())));
    JRec fence =
        new JRec(
            AttemptJournal.fenceKey(h.key(), h.life()),
            AttemptJournal.fenceValue(Math.max(0, s.dispatches().size() - 1), "reconciler"));
    Recon r = s.recon();
    Recon next =
        AttemptJournal.releasable(before, h.key(), h.life()) == AttemptJournal.Release.FENCED
            ? new Recon(r.passes(), ReconPhase.FENCED, h, null, r.resolved())
            : new Recon(r.passes() + 1, ReconPhase.IDLE, null, null, r.resolved());
    return with(s).journal(append(s.journal(), fence)).recon(next).build();
  }

  static State reconcilerLookup(State s) {
    Recon r = s.recon();
    List<String> effects = s.effects().get(r.target().key());
    return with(s)
        .recon(
            new Recon(
                r.passes(),
                ReconPhase.LOOKED,
                r.target(),
                effects.isEmpty() ? null : effects.get(0),
                r.resolved()))
        .build();
  }

  static State reconcilerPublish(State s) {
    Recon r = s.recon();
    Held h = r.target();
    Out out =
        r.found() == null
            ? new Out(
                h.key(), h.life(), h.attempt(), Status.RETRYABLE, "RECONCILED_NO_EFFECT", null)
            : new Out(h.key(), h.life(), h.attempt(), Status.SUCCEEDED, null, r.found());
    return with(s)
        .outcomes(append(s.outcomes(), out))
        .recon(new Recon(r.passes() + 1, ReconPhase.IDLE, null, null, add(r.resolved(), h.seq())))
        .build();
  }

  // ---------------------------------------------------------------- plumbing

  static byte[] bytes(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static String string(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static <T> List<T> append(List<T> list, T item) {
    List<T> next = new ArrayList<>(list);
    next.add(item);
    return List.copyOf(next);
  }

  static <T> Set<T> add(Set<T> set, T item) {
    Set<T> next = new LinkedHashSet<>(set);
    next.add(item);
    return Set.copyOf(next);
  }

  static <K, V> Map<K, V> put(Map<K, V> map, K key, V value) {
    Map<K, V> next = new HashMap<>(map);
    next.put(key, value);
    return Map.copyOf(next);
  }

  static <K, V> Map<K, V> remove(Map<K, V> map, K key) {
    Map<K, V> next = new HashMap<>(map);
    next.remove(key);
    return Map.copyOf(next);
  }

  static Builder with(State s) {
    return new Builder(s);
  }

  /** Copies a state with some parts changed. */
  static final class Builder {
    private List<String> intents;
    private int intentsRead;
    private List<Out> outcomes;
    private int outcomesRead;
    private List<Disp> dispatches;
    private Map<String, Entry> entries;
    private Map<String, Held> held;
    private int holds;
    private Map<String, Integer> sends;
    private Set<String> answered;
    private Map<String, List<String>> effects;
    private List<JRec> journal;
    private long committedOffset;
    private Exec exec;
    private Recon recon;

    Builder(State s) {
      intents = s.intents();
      intentsRead = s.intentsRead();
      outcomes = s.outcomes();
      outcomesRead = s.outcomesRead();
      dispatches = s.dispatches();
      entries = s.entries();
      held = s.held();
      holds = s.holds();
      sends = s.sends();
      answered = s.answered();
      effects = s.effects();
      journal = s.journal();
      committedOffset = s.committedOffset();
      exec = s.exec();
      recon = s.recon();
    }

    Builder intents(List<String> v) {
      intents = v;
      return this;
    }

    Builder intentsRead(int v) {
      intentsRead = v;
      return this;
    }

    Builder outcomes(List<Out> v) {
      outcomes = v;
      return this;
    }

    Builder outcomesRead(int v) {
      outcomesRead = v;
      return this;
    }

    Builder dispatches(List<Disp> v) {
      dispatches = v;
      return this;
    }

    Builder entries(Map<String, Entry> v) {
      entries = v;
      return this;
    }

    Builder held(Map<String, Held> v) {
      held = v;
      return this;
    }

    Builder holds(int v) {
      holds = v;
      return this;
    }

    Builder sends(Map<String, Integer> v) {
      sends = v;
      return this;
    }

    Builder answered(Set<String> v) {
      answered = v;
      return this;
    }

    Builder effects(Map<String, List<String>> v) {
      effects = v;
      return this;
    }

    Builder journal(List<JRec> v) {
      journal = v;
      return this;
    }

    Builder committedOffset(long v) {
      committedOffset = v;
      return this;
    }

    Builder exec(Exec v) {
      exec = v;
      return this;
    }

    Builder recon(Recon v) {
      recon = v;
      return this;
    }

    State build() {
      return new State(
          intents,
          intentsRead,
          outcomes,
          outcomesRead,
          dispatches,
          entries,
          held,
          holds,
          sends,
          answered,
          effects,
          journal,
          committedOffset,
          exec,
          recon);
    }
  }
}
