package dev.effectledger.policy;

import java.util.List;

/** A policy file has problems; {@link #problems()} lists each, one line per problem. */
public class PolicyException extends RuntimeException {

  private final List<String> problems;

  public PolicyException(String source, List<String> problems) {
    super(source + " has " + problems.size() + " problem(s):\n  " + String.join("\n  ", problems));
    this.problems = List.copyOf(problems);
  }

  public List<String> problems() {
    return problems;
  }
}
