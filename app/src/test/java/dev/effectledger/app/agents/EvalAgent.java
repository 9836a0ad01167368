package dev.effectledger.app.agents;

/** A scripted agent of the eval, in its framework's own loop. */
public interface EvalAgent extends AutoCloseable {

  /** Serves one request; throws when a tool call did not succeed and the agent reports it. */
  void run(EvalRequests.Request request, String tenant);

  @Override
  default void close() {}
}
