package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.PolicyFeed;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An executor's following of the applied tool policy ({@link EffectExecutor#followPolicy}): the
 * policy feed, the version in use, the decision to take or refuse each newer version, and the
 * connectors made for the versions taken (closed with the executor).
 */
final class PolicyFollower {

  private static final Logger log = LoggerFactory.getLogger(PolicyFollower.class);

  private final ExecutorConfig config;
  private final EffectPerformer performer;
  private final DispatchGate gate;

  /** The lanes that have had an attempt journal since the start. */
  private final Set<String> journalledLanes;

  private volatile long policyVersion;
  private volatile PolicyFeed policyFeed;

  /** Connectors this executor made for policies applied live, closed when it closes. */
  private final List<Connector> made = new CopyOnWriteArrayList<>();

  PolicyFollower(
      ExecutorConfig config,
      EffectPerformer performer,
      DispatchGate gate,
      Set<String> journalledLanes) {
    this.config = config;
    this.performer = performer;
    this.gate = gate;
    this.journalledLanes = journalledLanes;
  }

  /** See {@link EffectExecutor#followPolicy}. */
  long follow(Function<ToolPolicies, Map<String, Connector>> connectorsFor)
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

  /** The applied policy version in use; 0: the executor's own file. */
  long policyVersion() {
    return policyVersion;
  }

  /** Stops following: no version is applied after this. */
  void stop() {
    PolicyFeed feed = policyFeed;
    if (feed != null) {
      feed.close();
    }
  }

  /** Closes the connectors made for the versions taken. */
  void closeMade() {
    made.forEach(Connector::close);
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
}
