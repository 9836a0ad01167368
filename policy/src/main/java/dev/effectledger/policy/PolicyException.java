package dev.effectledger.policy;

import java.util.List;
import java.util.Optional;

/**
 * A policy file has problems; {@link #problems()} lists each, one line per problem, and {@link
 * #wellFormed()} holds the tools whose policies had none, so that a check of what lies beyond the
 * policy (each tool's connector settings) can still report on them.
 */
public class PolicyException extends RuntimeException {

  private final List<String> problems;
  private final transient ToolPolicies wellFormed;

  public PolicyException(String source, List<String> problems) {
    this(source, problems, null);
  }

  public PolicyException(String source, List<String> problems, ToolPolicies wellFormed) {
    super(source + " has " + problems.size() + " problem(s):\n  " + String.join("\n  ", problems));
    this.problems = List.copyOf(problems);
    this.wellFormed = wellFormed;
  }

  public List<String> problems() {
    return problems;
  }

  /** The tools of the file whose policies had no problem, when the file could be read as tools. */
  public Optional<ToolPolicies> wellFormed() {
    return Optional.ofNullable(wellFormed);
  }
}
