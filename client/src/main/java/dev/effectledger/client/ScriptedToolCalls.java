package dev.effectledger.client;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A {@link ToolCalls} for the tests of code that calls tools (an agent, an adapter): it answers the
 * given results in turn (the last one again once they run out), records every call, and knows the
 * policy classes it is given. No Kafka, no ledger: what the code under test does with each answer
 * is what such a test checks.
 */
public final class ScriptedToolCalls implements ToolCalls {

  private final Map<String, String> classes;
  private final Deque<CallResult> answers;
  private final List<ToolCall> calls = new CopyOnWriteArrayList<>();

  /**
   * @param classes each tool's policy class ({@code read}, {@code irreversible}, ...), as {@link
   *     #toolClassOf} answers them
   * @param answers what the calls get, in turn
   */
  public ScriptedToolCalls(Map<String, String> classes, CallResult... answers) {
    if (answers.length == 0) {
      throw new IllegalArgumentException("give at least one answer");
    }
    this.classes = Map.copyOf(classes);
    this.answers = new ArrayDeque<>(List.of(answers));
  }

  /** The calls made, in order. */
  public List<ToolCall> calls() {
    return List.copyOf(calls);
  }

  @Override
  public Optional<String> toolClassOf(String tool) {
    return Optional.ofNullable(classes.get(tool));
  }

  @Override
  public DerivedKey keyOf(ToolCall call) {
    return IdempotencyKeys.derive(call.step(), call.tool(), call.argumentsJson(), KeyRules.NONE);
  }

  @Override
  public synchronized CompletableFuture<CallResult> invoke(ToolCall call, CallOptions options) {
    calls.add(call);
    return CompletableFuture.completedFuture(answers.size() > 1 ? answers.poll() : answers.peek());
  }

  @Override
  public void close() {}
}
