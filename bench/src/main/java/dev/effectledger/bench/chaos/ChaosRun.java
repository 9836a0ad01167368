package dev.effectledger.bench.chaos;

import dev.effectledger.bench.Processes;
import dev.effectledger.bench.Processes.Node;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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

  /**
   * What the run saw. {@code brokerFaults}: broker stops (3 brokers) or kill -9s (one broker);
   * {@code inFlightAtExecutorKills}: requests in progress at the payment API at each executor kill;
   * {@code selfExits}: processors and executors that exited on their own and were restarted; {@code
   * doubleEffects}: actions with more effects than meant; {@code doubleEffectAudits}: what the
   * ledger flagged as DOUBLE_EFFECT.
   */
  public record Result(
      int actions,
      int steps,
      int processKills,
      int agentKills,
      int brokerFaults,
      List<Integer> inFlightAtExecutorKills,
      int selfExits,
      long effects,
      int doubleEffects,
      int answered,
      long intents,
      long replies,
      int heldUnknown,
      int heldAfterPendingTimeout,
      long doubleEffectAudits,
      ToolReport reconciliation,
      int staleResolutionsReplayed,
      long skippedMarkers,
      int outages,
      long superseded,
      long seconds,
      List<String> violations) {

    public String summary() {
      return String.format(
          "chaos: %d actions (%d steps), %d process kills (executors killed with %s requests in flight),"
              + " %d agent kills, %d broker faults, %d restarts after a process exited on its own, %d effects, %d actions with"
              + " more effects than meant, %d of %d steps answered, %d intents and %d replies, %d keys held as UNKNOWN on the"
              + " way (%d after their pending timeout), %d double effects audited by the ledger, reconciler %s, %d stale resolutions replayed, %d transaction markers skipped by a coordinator,"
              + " %d lane outages, %d dispatches of released lives answered without running, %d s,"
              + " %d violation(s)",
          actions,
          steps,
          processKills,
          inFlightAtExecutorKills,
          agentKills,
          brokerFaults,
          selfExits,
          effects,
          doubleEffects,
          answered,
          steps,
          intents,
          replies,
          heldUnknown,
          heldAfterPendingTimeout,
          doubleEffectAudits,
          reconciliation,
          staleResolutionsReplayed,
          skippedMarkers,
          outages,
          superseded,
          seconds,
          violations.size());
    }
  }

  private final Options options;
  private final ChaosWorkload workload;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private int downstreamPort;

  public ChaosRun(Options options) {
    this.options = options;
    this.workload = new ChaosWorkload(options.agents(), options.actionsPerAgent(), 50);
  }

  public Result run() throws Exception {
    long started = System.nanoTime();
    try (Processes processes = new Processes(options.dir())) {
      return runAll(processes, started);
    }
  }

  private Result runAll(Processes processes, long started) throws Exception {
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
      awaitFirstAnswers(50, Duration.ofMinutes(3)); // faults hit a flowing pipeline, not its start

      long nextFault = System.nanoTime() + gap(schedule);
      long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      Set<Node> finished = new HashSet<>();
      int outages = 0;
      if (!options.timing().outage().isZero()) {
        laneOutage(deployment, selfExits, started);
        outages++;
      }
      int faults = schedule.nextInt(4);
      int lastAnswered = answered();
      long lastMove = System.nanoTime();
      long nextLook = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (finished.size() < agents.size()) {
        Thread.sleep(200); // polling the agents' exits and the fault schedule's clock
        if (System.nanoTime() >= nextLook) {
          int now = answered();
          if (now != lastAnswered) {
            lastAnswered = now;
            lastMove = System.nanoTime();
          } else if (System.nanoTime() - lastMove > options.timing().stallLimit().toNanos()) {
            throw stalled(deployment, kafka, agents, now, faults);
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
                  answered(),
                  steps(),
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
          inFlightAtKills.add(awaitEffectsInFlight(8, Duration.ofSeconds(30)));
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
          new ChaosChecks(workload, http, downstreamPort, this::answers, steps())
              .takeStock(kafka, registry, ports[0], report, violations);
      Result result =
          new Result(
              options.actions(),
              steps(),
              processKills.get(),
              agentKills.get(),
              brokerFaults.get(),
              List.copyOf(inFlightAtKills),
              selfExits.get(),
              found.effects(),
              found.doubled(),
              answered(),
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

  /**
   * Ends a run whose agents got no new answer for its stall limit ({@link Timing#stallLimit}): what
   * the run showed goes to {@code stall.txt} in its directory, to the output and into the
   * exception.
   */
  private IllegalStateException stalled(
      ChaosDeployment deployment, Properties kafka, List<Node> agents, int answered, int faults)
      throws IOException {
    List<Node> parts = new ArrayList<>();
    parts.add(deployment.cluster());
    parts.addAll(deployment.processors());
    parts.addAll(deployment.executors());
    parts.addAll(agents);
    String report =
        String.format(
            "stalled: no new answer for %d s at %d of %d steps (%d faults so far); what the run showed:%n%s",
            options.timing().stallLimit().toSeconds(),
            answered,
            steps(),
            faults,
            new ChaosStall(workload, http, kafka, deployment.ports()[0], ChaosStall.SILENT)
                .describe(answeredSteps(), parts));
    Files.writeString(options.dir().resolve("stall.txt"), report);
    say(report);
    return new IllegalStateException(report);
  }

  /**
   * Every executor killed with -9 and kept down for the run's outage, while the agents go on
   * sending: their dispatches queue on the lane, their pending timeouts hold the keys, and the
   * reconciler, past its min age, looks them up and finds nothing (issue 52). Then the executors
   * start again and read what queued. Processors that exit meanwhile are restarted as usual.
   */
  private void laneOutage(ChaosDeployment deployment, AtomicInteger selfExits, long started)
      throws Exception {
    Duration outage = options.timing().outage();
    say("lane outage: every executor killed with -9, down for " + outage.toSeconds() + " s");
    for (Node executor : deployment.executors()) {
      executor.kill();
    }
    long back = System.nanoTime() + outage.toNanos();
    long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < back) {
      Thread.sleep(200); // polling the outage's clock and the processes' exits
      deployment.superviseExits(selfExits);
      if (System.nanoTime() >= nextReport) {
        say(
            String.format(
                "%d s: lane outage, %d of %d steps answered",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started), answered(), steps()));
        nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      }
    }
    for (Node executor : deployment.executors()) {
      executor.restart();
    }
    say("lane outage over: executors started again");
  }

  /** Waits until the agents have {@code wanted} final answers, or {@code limit}. */
  private void awaitFirstAnswers(int wanted, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (answered() < wanted && System.nanoTime() < deadline) {
      Thread.sleep(200); // polling the agents' answer files
    }
    say(answered() + " steps answered; faults start");
  }

  /**
   * Waits until the payment API has at least {@code wanted} requests in progress, or {@code limit};
   * returns how many it had.
   */
  private int awaitEffectsInFlight(int wanted, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    int seen = 0;
    while (System.nanoTime() < deadline) {
      try {
        seen =
            Integer.parseInt(
                http.send(
                        HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + downstreamPort + "/inflight"))
                            .timeout(Duration.ofSeconds(2))
                            .build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body()
                    .trim());
      } catch (IOException | NumberFormatException e) {
        seen = 0;
      }
      if (seen >= wanted) {
        return seen;
      }
      Thread.sleep(20); // polling the payment API's in-flight count
    }
    return seen;
  }

  private int steps() {
    return workload.all().stream().mapToInt(a -> a.steps().size()).sum();
  }

  private int answered() {
    return answers().size();
  }

  private Set<String> answeredSteps() {
    return answers().keySet();
  }

  /**
   * The final answers in the agents' answer files (SUCCEEDED, FAILED or REJECTED), each step named
   * by its agent's run id and its step id ({@link ChaosStall#answerOf}): every agent numbers its
   * steps from 0.
   */
  private Map<String, String> answers() {
    Map<String, String> answers = new HashMap<>();
    for (int a = 0; a < options.agents(); a++) {
      Path file = options.dir().resolve("answers-" + a + ".txt");
      int agent = a;
      try {
        if (Files.exists(file)) {
          Files.readAllLines(file).stream()
              .filter(l -> l.indexOf('\t') > 0)
              .forEach(
                  l ->
                      answers.put(
                          ChaosStall.answerOf(
                              ChaosWorkload.runId(agent), l.substring(0, l.indexOf('\t'))),
                          l.substring(l.indexOf('\t') + 1)));
        }
      } catch (IOException e) {
        say("could not read " + file + ": " + e.getMessage());
      }
    }
    return answers;
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
