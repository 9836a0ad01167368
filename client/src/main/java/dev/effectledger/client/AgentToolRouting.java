package dev.effectledger.client;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * How an agent-runtime adapter (LangChain4j, Spring AI) routes a tool and waits for its call: one
 * rule for both. By the applied policy's class ({@link ToolCalls#toolClassOf}): {@code read} runs
 * the tool's own code, any other class goes through the ledger. For a tool the policy does not name
 * (or while none is read): the names the application gave as {@code ledgered} go through the
 * ledger, those it gave as {@code direct} (not the ledger's tools: an agent used as a tool) run as
 * they are, and any other is not run at all.
 */
public final class AgentToolRouting {

  /** Where a tool's call goes. */
  public enum Route {
    LEDGER,
    DIRECT,
    UNKNOWN
  }

  private final Set<String> ledgered;
  private final Set<String> direct;
  private final Duration attach;

  public AgentToolRouting(Set<String> ledgered, Set<String> direct, Duration attach) {
    this.ledgered = Set.copyOf(ledgered);
    this.direct = Set.copyOf(direct);
    this.attach = attach;
  }

  public Route route(ToolCalls client, String tool) {
    Optional<String> policyClass = client.toolClassOf(tool);
    if (policyClass.isPresent()) {
      return policyClass.get().equals("read") ? Route.DIRECT : Route.LEDGER;
    }
    if (ledgered.contains(tool)) {
      return Route.LEDGER;
    }
    return direct.contains(tool) ? Route.DIRECT : Route.UNKNOWN;
  }

  /**
   * Calls through the ledger and waits on a call still running after a timeout, up to the attach
   * duration in all (a client closed meanwhile answers at once: not waited on).
   */
  public CallResult call(ToolCalls client, ToolCall call) {
    long deadline = System.nanoTime() + attach.toNanos();
    try {
      CallResult result = client.invokeAndWait(call);
      while (result instanceof CallResult.StillRunning running
          && running.reason() == CallResult.StillRunning.Reason.TIMED_OUT
          && System.nanoTime() < deadline) {
        result = client.attach(running).get();
      }
      return result;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(call.tool() + " was interrupted while it waited", e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException(call.tool() + ": " + e.getCause().getMessage(), e.getCause());
    }
  }

  /** What the model is told of a tool the routing refuses. */
  public static String unknownText(String tool, String howToName) {
    return tool
        + " is not in Effect Ledger's applied tool policy (or none has been read yet), so it was not"
        + " run: add it to the ledger's tools.yaml (class read for a tool without effects) and apply"
        + " it with `effectledger tools apply`, or name it in "
        + howToName;
  }
}
