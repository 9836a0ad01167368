package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.policy.ToolPolicies;
import java.time.Clock;
import java.util.Map;
import java.util.function.Function;

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
 *
 * <p>Its parts: {@link ExecutorStartup} puts it together and starts it; {@link PollLoop} runs the
 * poll thread, paced by a {@link dev.effectledger.connectors.executor.internal.CommitPacer},
 * sweeping the journal with a {@link dev.effectledger.connectors.executor.internal.JournalSweep}
 * and answering rebalances with a {@link Rebalance}; {@link PolicyFollower} follows the applied
 * tool policy.
 */
public final class EffectExecutor implements AutoCloseable {

  private final EffectPerformer performer;
  private final PollLoop loop;
  private final PolicyFollower policy;

  EffectExecutor(EffectPerformer performer, PollLoop loop, PolicyFollower policy) {
    this.performer = performer;
    this.loop = loop;
    this.policy = policy;
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

  /** Puts the executor together and starts it: see {@link ExecutorStartup}. */
  static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper,
      Clients clients,
      String transactionalId,
      ExecutorObserver observer) {
    return ExecutorStartup.start(
        config, connectors, policies, clock, sleeper, clients, transactionalId, observer);
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
    return loop.transactionsCommitted();
  }

  /** Why the executor stopped on its own, if it did. */
  public Throwable failure() {
    return loop.failure();
  }

  public boolean isRunning() {
    return loop.isRunning();
  }

  /**
   * Stops consuming, lets running effects finish within the shutdown deadline, commits their
   * outcomes, and closes. Effects still running then are abandoned: their dispatches are
   * redelivered to the next owner.
   */
  @Override
  public void close() {
    policy.stop();
    loop.stop();
    loop.join();
    policy.closeMade();
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
    return policy.follow(connectorsFor);
  }

  /** The applied policy version this executor runs dispatches under; 0: its own file. */
  public long policyVersion() {
    return policy.policyVersion();
  }

  /** Stops at once without committing anything more, as a crash would. For tests and chaos. */
  public void halt() {
    loop.halt();
    loop.join();
  }
}
