package dev.effectledger.bench.chaos;

import dev.effectledger.connectors.reconcile.ToolReport;
import java.util.List;

/**
 * What the run saw. {@code brokerFaults}: broker stops (3 brokers) or kill -9s (one broker); {@code
 * inFlightAtExecutorKills}: requests in progress at the payment API at each executor kill; {@code
 * selfExits}: processors and executors that exited on their own and were restarted; {@code
 * doubleEffects}: actions with more effects than meant; {@code doubleEffectAudits}: what the ledger
 * flagged as DOUBLE_EFFECT.
 */
public record ChaosResult(
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
