package dev.effectledger.connectors.reconcile;

import dev.effectledger.connectors.Connector;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ErrorCode;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which held keys a pass may look up on lanes whose downstream cannot take a repeat: owns fencing
 * their lives on the lanes' attempt journals ({@link ReleaseFences}) and naming the keys that must
 * stay held, with the finding that says why.
 */
final class LookupFences implements AutoCloseable {

  private final Map<String, Connector> connectors;
  private final Map<String, String> lanes;
  private final ReleaseFences fences;

  LookupFences(Map<String, Connector> connectors, Map<String, String> lanes, ReleaseFences fences) {
    this.connectors = connectors;
    this.lanes = lanes;
    this.fences = fences;
  }

  /**
   * Fences the lives of the held keys this pass will look up on lanes whose downstream cannot take
   * a repeat; answers the store keys that must stay held, with the finding that says why.
   */
  Map<String, String> fenceDue(
      Map<String, AuditEvent> latest, Map<String, AuditEvent> resolved, Instant cutoff) {
    Map<String, String> refused = new HashMap<>();
    Map<ReleaseFences.Life, String> due = new LinkedHashMap<>();
    for (Map.Entry<String, AuditEvent> e : latest.entrySet()) {
      AuditEvent event = e.getValue();
      Connector connector = connectors.get(event.getTool());
      if (event.getType() != AuditType.HELD_UNKNOWN
          || event.getAt().isAfter(cutoff)
          || connector == null
          || !connector.capabilities().supportsLookup()
          || connector.capabilities().safeToRepeat()
          || ErrorCode.PARTIAL_SUCCESS.name().equals(event.getCode())
          || event.equals(resolved.get(e.getKey()))) {
        continue;
      }
      String lane = lanes.get(event.getTool());
      if (lane == null || event.getIncarnation() == null) {
        refused.put(
            e.getKey(),
            "NOT_FENCED: "
                + (lane == null
                    ? "the reconciler knows no lane for the tool"
                    : "the held entry names no life (a ledger of an earlier release)")
                + ", so a queued dispatch of it could still run; still held");
        continue;
      }
      due.put(
          new ReleaseFences.Life(
              lane,
              event.getIdempotencyKey(),
              Resolutions.effectKey(event),
              event.getIncarnation()),
          e.getKey());
    }
    if (!due.isEmpty()) {
      fences
          .fence(List.copyOf(due.keySet()))
          .forEach(
              (life, fence) -> {
                if (fence == ReleaseFences.Fence.STARTED) {
                  refused.put(
                      due.get(life),
                      "STARTED: an executor started this life's effect and has not answered it"
                          + " (attempt journal), so it may be under way; looked up again once it"
                          + " is answered");
                } else if (fence != ReleaseFences.Fence.RELEASABLE) {
                  refused.put(
                      due.get(life),
                      "NOT_FENCED: the attempt journal could not be written or read back in time,"
                          + " so a queued dispatch of it could still run; looked up again next"
                          + " pass");
                }
              });
    }
    return refused;
  }

  @Override
  public void close() {
    fences.close();
  }
}
