package dev.effectledger.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * Calls tools through the ledger: the agent runtime's side of Effect Ledger. {@link ToolCallClient}
 * is the Kafka implementation; code that calls tools takes this interface, so its tests can pass a
 * fake that answers {@link CallResult}s.
 */
public interface ToolCalls extends AutoCloseable {

  /**
   * The applied tool policy's class of {@code tool} ({@code read}, {@code write-idempotent}, {@code
   * write-non-idempotent}, {@code irreversible}), where the implementation follows the policy;
   * empty otherwise. Agent-runtime adapters route by it: read tools run in the agent's process.
   */
  default java.util.Optional<String> toolClassOf(String tool) {
    return java.util.Optional.empty();
  }

  /** The key a call gets; the same for every retry of it. */
  DerivedKey keyOf(ToolCall call);

  /**
   * Publishes the call's intent and completes with what became of it. Completes exceptionally only
   * when no answer can come: {@link KeyDerivationException} when no key can be derived from the
   * arguments, {@link IllegalStateException} when the intent could not be published.
   */
  CompletableFuture<CallResult> invoke(ToolCall call, CallOptions options);

  /** {@link #invoke(ToolCall, CallOptions)} with the client's settings. */
  default CompletableFuture<CallResult> invoke(ToolCall call) {
    return invoke(call, CallOptions.defaults());
  }

  /** Waits on for a call that was still running, up to the client's timeout again. */
  default CompletableFuture<CallResult> attach(CallResult.StillRunning running) {
    return invoke(running.call());
  }

  /** {@link #invoke(ToolCall)} and wait; the wait is bounded by the call's timeout. */
  default CallResult invokeAndWait(ToolCall call) throws InterruptedException {
    try {
      return invoke(call).get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  @Override
  void close();
}
