package dev.effectledger.topology.internal;

import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.topology.LedgerConfig;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;

/**
 * A bypass: an operator's approval to run a settled key's tool once more, under an effect key of
 * its own that the downstream has not seen. Decides whether an intent asks for one ({@link #isNew})
 * and runs or refuses it: the tool must allow bypass, a key held as UNKNOWN must be settled first,
 * an approval is used once, and a configured signer's signature must verify.
 */
final class Bypass {

  private final LedgerConfig config;
  private final LedgerActions actions;
  private final Refusals refusals;

  Bypass(LedgerConfig config, LedgerActions actions, Refusals refusals) {
    this.config = config;
    this.actions = actions;
    this.refusals = refusals;
  }

  /**
   * An approved second execution of a settled key, under a fresh effect key the downstream has not
   * seen.
   */
  void run(ToolIntent intent, LedgerEntry entry, ToolPolicy policy, String replyTopic, long now) {
    if (!policy.bypassAllowed()) {
      refusals.refuse(
          intent,
          replyTopic,
          ErrorCode.BYPASS_NOT_ALLOWED,
          "tool '" + intent.getTool() + "' does not allow bypass",
          now);
      return;
    }
    if (entry.getState() == LedgerState.UNKNOWN
        && (entry.getError() == null
            || !ErrorCode.PARTIAL_SUCCESS.name().equals(entry.getError().getCode()))) {
      // a bypass replaces the held life without a fence: its dispatch may still be waiting on the
      // lane and would run beside the bypass (issue 52). Releasing it fences it first.
      refusals.refuse(
          intent,
          replyTopic,
          ErrorCode.BYPASS_NOT_ALLOWED,
          "the key is held as UNKNOWN and a dispatch of it may still run, so a bypass could act"
              + " twice; settle it first (effectledger reconcile, or the console's mark as applied"
              + " or not applied, which fence it), then send the intent again",
          now);
      return;
    }
    String effectKey = effectKey(intent);
    if (entry.getBypassesUsed().contains(effectKey)) {
      refusals.refuse(
          intent,
          replyTopic,
          ErrorCode.BYPASS_APPROVAL_INVALID,
          "the approval was used already, for an earlier bypass of this key; ask for a new one",
          now);
      return;
    }
    String operator = null;
    if (config.bypassApprovals().verifying()) {
      BypassApprovals.Verdict verdict =
          config
              .bypassApprovals()
              .verify(
                  intent.getBypassApproval(),
                  intent.getTenant(),
                  intent.getIdempotencyKey(),
                  Instant.ofEpochMilli(now));
      if (verdict instanceof BypassApprovals.Verdict.Invalid invalid) {
        refusals.refuse(intent, replyTopic, ErrorCode.BYPASS_APPROVAL_INVALID, invalid.why(), now);
        return;
      }
      operator = ((BypassApprovals.Verdict.Valid) verdict).approval().operator();
    }
    actions.audit(entry, AuditType.BYPASSED, null, operator, now);
    actions.start(intent, policy, replyTopic, effectKey, entry.getAttempts() + 1, entry, now);
  }

  /**
   * Whether the intent asks for a bypass this settled entry has not run yet: it carries an
   * approval, and its effect key is not the entry's own.
   */
  static boolean isNew(ToolIntent intent, LedgerEntry entry) {
    String approval = intent.getBypassApproval();
    return approval != null
        && !approval.isEmpty()
        && entry.getState() != LedgerState.PENDING
        && !effectKey(intent).equals(entry.getEffectKey());
  }

  /** The effect key of the bypass an approval asks for: the key, then a digest of the approval. */
  static String effectKey(ToolIntent intent) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256")
              .digest(intent.getBypassApproval().getBytes(StandardCharsets.UTF_8));
      return intent.getIdempotencyKey() + "~bypass-" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }
}
