package dev.effectledger.bench.chaos;

import dev.effectledger.bench.Processes;
import dev.effectledger.bench.Processes.Node;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The chaos harness: every moving part as its own OS process (Kafka: a 3-broker KRaft cluster, or
 * one broker with its data on disk; the Schema Registry endpoints; a payment API; processors;
 * executors; agents), a seeded schedule of kill -9s and broker faults while the agents work, then
 * quiescence and the checks: effects per logical action exactly as meant, every step answered, no
 * key PENDING or UNKNOWN, no double effect seen by the ledger, ledger and downstream in agreement.
 * In the key-ignoring mode the payment API acts on every request, so any dispatch performed twice
 * shows as a second effect.
 *
 * <p>What it exercises, because a class of bugs escaped a gentler version: executors running 32
 * effects at once on a payment API that answers some calls slowly (effects finish out of order, so
 * committed outcomes sit above a partition's committed offset), an executor killed only while many
 * effects are in flight, the fault mix of a misbehaving payment API, and a single-broker deployment
 * killed with -9. Processes that exit on their own are restarted, as a supervisor would.
 */
public final class ChaosRun {

  static final String PAYMENTS = "payments";

  /** The {@link ScheduleGate}'s file, in the run's directory (the agents' working directory). */
  static final String GATE_FILE = "schedule-gate.txt";

  /**
   * The payment API's faults: shares of keys, on their first request (see {@code effectledger
   * downstream --help}).
   */
  public static final String FAULT_MIX = "503=5,hang=3,reset=3,500=3,slow=5,drop=3";

  /**
   * What to run. {@code minWorkload}: the least time the agents take to send every step once (zero:
   * as fast as they can); with {@code maxFaults}, each agent's last step also waits until the
   * schedule is over ({@link ScheduleGate}). {@code singleBroker}: one Kafka broker with its data
   * on disk, killed with -9 and started again as the broker fault, instead of a 3-broker cluster
   * whose brokers are stopped. {@code maxFaults} bounds the schedule (0: faults until the agents
   * are done): when faults come faster than the pipeline recovers, nothing finishes, so a short run
   * stops faulting after a few.
   */
  public record Options(
      int agents,
      int actionsPerAgent,
      int processors,
      int executors,
      boolean ignoreKeys,
      boolean singleBroker,
      int executorConcurrency,
      String faultMix,
      long seed,
      Duration minGap,
      Duration maxGap,
      int partitions,
      int maxFaults,
      Path dir,
      Duration minWorkload,
      Timing timing) {

    public int actions() {
      return agents * actionsPerAgent;
    }
  }

  /**
   * The timeouts a run uses, and its lane outage. {@link #SHIPPED}: what a user runs with the
   * shipped files and documented defaults (config/tools.yaml's {@code pendingTimeout} of the charge
   * tool, {@code effectledger reconcile --min-age}'s default, a pass every 5 s).
   *
   * @param outage how long every executor stays down once in the run (killed with -9, then started
   *     again); zero for none. Longer than {@code pendingTimeout + reconcileMinAge +
   *     reconcileEvery}, it lets the reconciler release keys whose dispatches still wait on the
   *     lane, the path of issue 52.
   */
  public record Timing(
      Duration pendingTimeout, Duration reconcileMinAge, Duration reconcileEvery, Duration outage) {

    public static final Timing SHIPPED =
        new Timing(
            Duration.ofMinutes(2), Duration.ofMinutes(1), Duration.ofSeconds(5), Duration.ZERO);

    public Timing withOutage(Duration length) {
      return new Timing(pendingTimeout, reconcileMinAge, reconcileEvery, length);
    }

    /**
     * No new answer for this long after the last fault is a stall: longer than the slowest recovery
     * the ledger has by design (a lost dispatch or outcome waits for the pending timeout, the
     * reconciler's min age and its next pass, and the agent's next ask, within 47 s).
     */
    Duration stallLimit() {
      return pendingTimeout.plus(reconcileMinAge).plus(reconcileEvery).plusSeconds(90);
    }
  }

  private final Options options;
  private final ChaosWorkload workload;
  private final AgentAnswers answers;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private int downstreamPort;

  public ChaosRun(Options options) {
    this.options = options;
    this.workload = new ChaosWorkload(options.agents(), options.actionsPerAgent(), 50);
    this.answers = new AgentAnswers(options.dir(), options.agents(), workload);
  }

  public ChaosResult run() throws Exception {
    long started = System.nanoTime();
    try (Processes processes = new Processes(options.dir())) {
      return runAll(processes, started);
    }
  }

  private ChaosResult runAll(Processes processes, long started) throws Exception {
    ChaosDeployment deployment = ChaosDeployment.start(options, processes);
    downstreamPort = deployment.downstreamPort();
    List<Node> processors = deployment.processors();
    List<Node> executors = deployment.executors();
    int[] ports = deployment.ports();
    String bootstrap = deployment.bootstrap();
    String registry = deployment.registry();
    Properties kafka = deployment.kafka();
    ToolPolicies policies = new ToolPolicyLoader().load(options.dir().resolve("tools.yaml"));
    ScheduledExecutorService reconciling = Executors.newSingleThreadScheduledExecutor();
    // Closed first: a run that ends early (a stall, a processor that did not recover) stops its
    // passes before the reconciler they use is closed.
    try (Reconciler reconciler =
            new Reconciler(
                kafka,
                registry,
                Connectors.forLanes(policies, List.of(PAYMENTS), Clock.systemUTC()),
                Reconciler.lanesOf(policies),
                options.timing().reconcileMinAge(),
                Clock.systemUTC());
        StaleResolutions stale = StaleResolutions.start(kafka, registry, PAYMENTS);
        AutoCloseable stopPasses = reconciling::shutdownNow) {
      List<ToolReport> passes = Collections.synchronizedList(new ArrayList<>());
      reconciling.scheduleWithFixedDelay(
          () -> {
            try {
              passes.add(reconciler.reconcileOnce().tool(ChaosWorkload.TOOL));
            } catch (RuntimeException e) {
              say(
                  "reconciliation pass failed, next in "
                      + options.timing().reconcileEvery()
                      + ": "
                      + e);
            }
          },
          options.timing().reconcileEvery().toMillis(),
          options.timing().reconcileEvery().toMillis(),
          TimeUnit.MILLISECONDS);
      List<Node> agents = new ArrayList<>();
      // Agents spread their first sends over at least minWorkload, measured from here (a restarted
      // agent gets the same origin): on a fast machine the workload would otherwise end before the
      // fault schedule has hit every kind of part once. With a bounded schedule, each agent's last
      // step waits until the schedule is over, so on a slow machine too the faults come before the
      // agents are done.
      long origin = System.currentTimeMillis();
      ScheduleGate gate = ScheduleGate.held(options.dir().resolve(GATE_FILE));
      if (options.maxFaults() == 0) {
        gate.release(); // faults go on until the agents are done
      }
      for (int a = 0; a < options.agents(); a++) {
        agents.add(
            processes
                .node(
                    "agent-" + a,
                    List.of(
                        Processes.java(),
                        "-Xmx512m",
                        "-XX:+UseSerialGC",
                        // C1 only, as the other parts (Processes.jar): an agent lives two
                        // minutes; with C2 each used ~12 s of CPU in a run, with C1 ~7 s.
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        Processes.absoluteClassPath(),
                        ChaosAgent.class.getName(),
                        Integer.toString(a),
                        Integer.toString(options.agents()),
                        Integer.toString(options.actionsPerAgent()),
                        "50",
                        bootstrap,
                        registry,
                        "answers-" + a + ".txt",
                        Long.toString(origin),
                        Long.toString(options.minWorkload().toMillis()),
                        // replays go on as long as a held key can take to be settled
                        Long.toString(options.timing().stallLimit().toMillis()),
                        GATE_FILE))
                .start());
      }
      say(options.agents() + " agents started, " + options.actions() + " actions");

      List<String> violations = new ArrayList<>();
      AtomicInteger processKills = new AtomicInteger();
      AtomicInteger agentKills = new AtomicInteger();
      AtomicInteger brokerFaults = new AtomicInteger();
      AtomicInteger selfExits = new AtomicInteger();
      List<Integer> inFlightAtKills = new ArrayList<>();
      Random schedule = new Random(options.seed() + 1);
      answers.awaitFirst(50, Duration.ofMinutes(3)); // faults hit a flowing pipeline, not its start

      long nextFault = System.nanoTime() + gap(schedule);
      long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      Set<Node> finished = new HashSet<>();
      int outages = 0;
      if (!options.timing().outage().isZero()) {
        LaneOutage.run(deployment, options.timing().outage(), selfExits, started, answers);
        outages++;
      }
      int faults = schedule.nextInt(4);
      int lastAnswered = answers.answered();
      long lastMove = System.nanoTime();
      long nextLook = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (finished.size() < agents.size()) {
        Thread.sleep(200); // polling the agents' exits and the fault schedule's clock
        if (System.nanoTime() >= nextLook) {
          int now = answers.answered();
          if (now != lastAnswered) {
            lastAnswered = now;
            lastMove = System.nanoTime();
          } else if (System.nanoTime() - lastMove > options.timing().stallLimit().toNanos()) {
            throw ChaosStall.stalled(
                options, workload, http, answers, deployment, kafka, agents, now, faults);
          }
          nextLook = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        }
        for (Node agent : agents) {
          if (!finished.contains(agent) && !agent.killing() && !agent.alive()) {
            finished.add(agent);
            if (agent.process().exitValue() != 0) {
              violations.add(
                  agent.name()
                      + " exited "
                      + agent.process().exitValue()
                      + " with steps unanswered (see "
                      + agent.name()
                      + ".log)");
            }
          }
        }
        deployment.superviseExits(selfExits);
        if (System.nanoTime() >= nextReport) {
          say(
              String.format(
                  "%d s: %d of %d steps answered, %d process kills, %d agent kills, %d broker faults, %d restarts after exits",
                  TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                  answers.answered(),
                  answers.steps(),
                  processKills.get(),
                  agentKills.get(),
                  brokerFaults.get(),
                  selfExits.get()));
          nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        }
        if (System.nanoTime() < nextFault
            || finished.size() == agents.size()
            || options.maxFaults() > 0
                && processKills.get() + agentKills.get() + brokerFaults.get()
                    >= options.maxFaults()) {
          continue;
        }
        int pick =
            faults++ % 4; // processor, executor, agent, broker in turn; victims and gaps seeded
        say(
            String.format(
                "fault %d (%s), %.1f s into the agents' %d s minimum",
                processKills.get() + agentKills.get() + brokerFaults.get() + 1,
                List.of("processor", "executor", "agent", "broker").get(pick),
                (System.currentTimeMillis() - origin) / 1000.0,
                options.minWorkload().toSeconds()));
        if (pick == 0) {
          Node victim = processors.get(schedule.nextInt(processors.size()));
          victim.kill();
          processKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else if (pick == 1) {
          Node victim = executors.get(schedule.nextInt(executors.size()));
          inFlightAtKills.add(
              PaymentsInFlight.await(http, downstreamPort, 8, Duration.ofSeconds(30)));
          victim.kill();
          processKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else if (pick == 2) {
          List<Node> running = agents.stream().filter(a -> !finished.contains(a)).toList();
          Node victim = running.get(schedule.nextInt(running.size()));
          victim.kill();
          agentKills.incrementAndGet();
          Thread.sleep(1500);
          victim.restart();
        } else {
          deployment.brokerFault(schedule);
          brokerFaults.incrementAndGet();
        }
        // The next fault comes a seeded gap after the ledger is back (every processor ready):
        // faults faster than recovery (a killed processor restores its tasks from the changelog)
        // would only measure an outage.
        deployment.awaitRecovery(selfExits, faults);
        if (options.maxFaults() > 0
            && processKills.get() + agentKills.get() + brokerFaults.get() >= options.maxFaults()) {
          gate.release();
          say("fault schedule done; the agents' last steps may go");
        }
        lastMove = System.nanoTime(); // a stall is counted from the end of the last fault
        nextFault = System.nanoTime() + gap(schedule);
      }
      say("workload done; waiting for quiescence");
      deployment.awaitQuiescence(selfExits);
      reconciling.shutdown();
      reconciling.awaitTermination(5, TimeUnit.MINUTES);
      ToolReport last = reconciler.reconcileOnce().tool(ChaosWorkload.TOOL);
      ToolReport report = ChaosChecks.sum(passes, last);
      say("reconciler, all passes: " + report);
      ChaosChecks.Findings found =
          new ChaosChecks(workload, http, downstreamPort, answers::answers, answers.steps())
              .takeStock(kafka, registry, ports[0], report, violations);
      ChaosResult result =
          new ChaosResult(
              options.actions(),
              answers.steps(),
              processKills.get(),
              agentKills.get(),
              brokerFaults.get(),
              List.copyOf(inFlightAtKills),
              selfExits.get(),
              found.effects(),
              found.doubled(),
              answers.answered(),
              found.intents(),
              found.replies(),
              found.heldUnknown(),
              found.heldAfterPendingTimeout(),
              found.doubleEffectAudits(),
              report,
              stale.replayed(),
              deployment.skippedMarkers(),
              outages,
              found.superseded(),
              TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
              List.copyOf(violations));
      say(result.summary());
      violations.stream().limit(50).forEach(v -> say("VIOLATION " + v));
      return result;
    }
  }

  private long gap(Random schedule) {
    long min = options.minGap().toMillis();
    long spread = Math.max(1, options.maxGap().toMillis() - min);
    return TimeUnit.MILLISECONDS.toNanos(min + schedule.nextLong(spread));
  }

  /**
   * A progress line, after the time of day (the parts' logs carry it too), so that a CI log tells
   * how long each phase of a run took: start-up, faults, the workload's end, quiescence, the
   * checks.
   */
  static void say(String message) {
    // HH:mm:ss always (LocalTime's own text drops ":00" seconds)
    System.out.println(
        LocalTime.now().format(DateTimeFormatter.ofPattern("HH:mm:ss")) + " " + message);
    System.out.flush();
  }
}
