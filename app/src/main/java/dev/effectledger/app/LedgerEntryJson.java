package dev.effectledger.app;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.Replies;
import dev.effectledger.schema.ReplyJson;

/**
 * How the query API and the console show a ledger entry as JSON ({@code GET /v1/keys/...}, the held
 * list, the console's key page): the entry's fields an operator reads, never its arguments; and the
 * key's answer as the reply a caller gets ({@code GET /v1/results/...}).
 */
final class LedgerEntryJson {

  private static final ObjectMapper JSON = new ObjectMapper();

  private LedgerEntryJson() {}

  /**
   * The entry without its arguments (payloads stay out of operator tools), and with its stored
   * result when {@code withResult} ({@code /v1/keys/...?result=1}, the console's key page: the
   * answer the agent got is what an operator checks against the downstream).
   */
  static ObjectNode describe(LedgerEntry entry, boolean withResult) {
    ObjectNode out =
        JSON.createObjectNode()
            .put("key", entry.getIdempotencyKey())
            .put("tenant", entry.getTenant())
            .put("tool", entry.getTool())
            .put("state", entry.getState().name())
            .put("attempts", entry.getAttempts())
            .put("effectKey", entry.getEffectKey())
            .put("runId", entry.getRunId())
            .put("stepId", entry.getStepId())
            .put("firstSeenAt", entry.getFirstSeenAt().toString())
            .put("lastDispatchedAt", entry.getLastDispatchedAt().toString());
    if (entry.getCompletedAt() != null) {
      out.put("completedAt", entry.getCompletedAt().toString());
    }
    if (entry.getEffectId() != null) {
      out.put("effectId", entry.getEffectId());
    }
    if (entry.getError() != null) {
      out.put("error", entry.getError().getCode());
      out.put("errorMessage", entry.getError().getMessage());
    }
    if (entry.getIncarnation() != null) {
      out.put("incarnation", entry.getIncarnation());
    }
    if (withResult && entry.getResultJson() != null) {
      out.put("result", entry.getResultJson());
    }
    return out;
  }

  /**
   * The key's answer as a reply ({@link ReplyJson}, result included): what {@code GET
   * /v1/results/...} answers, and the gateway's {@code GET /v1/calls/{key}} reads.
   */
  static ObjectNode asReply(LedgerEntry entry) {
    return ReplyJson.of(Replies.of(entry, true));
  }
}
