package dev.effectledger.client;

/**
 * The text an agent's model gets for a tool call that did not succeed: what happened and what to do
 * (or not do) next, for the agent-runtime adapters (LangChain4j, Spring AI; the TypeScript adapters
 * say the same). A held call must not be retried with other arguments: that would be a second
 * action.
 */
public final class ModelText {

  private ModelText() {}

  public static String of(String tool, CallResult result) {
    if (result instanceof CallResult.Succeeded s) {
      return s.resultJson();
    }
    if (result instanceof CallResult.Failed f) {
      return tool
          + " failed and did not take effect: "
          + detail(f.error())
          + (f.error().retriable()
              ? ". Calling it again for the same request gets the same answer; tell the user it can"
                  + " be tried later."
              : ". Do not call it again with the same arguments; fix them or tell the user.");
    }
    if (result instanceof CallResult.HeldUnknown h && h.partial()) {
      return tool
          + " took effect in part: "
          + detail(h.error())
          + (h.reportJson() == null ? "" : ". What was done: " + h.reportJson())
          + ". Do not call "
          + tool
          + " again for this request, not with other arguments either: tell the user which part"
          + " was done.";
    }
    if (result instanceof CallResult.HeldUnknown) {
      return tool
          + ": it is not known yet whether this action took effect; it is held for"
          + " reconciliation. Do not call "
          + tool
          + " again for this request, not with other arguments either: tell the user it is being"
          + " checked.";
    }
    if (result instanceof CallResult.Rejected r) {
      return tool + " was refused before anything ran: " + detail(r.error()) + ".";
    }
    return tool
        + " is still running. Calling it again with the same arguments waits for the same action"
        + " (it will not run twice); do not change the arguments.";
  }

  private static String detail(CallError error) {
    return error.code()
        + ": "
        + error.message()
        + (error.correctiveAction().isEmpty() ? "" : " (" + error.correctiveAction() + ")");
  }
}
