package dev.effectledger.app;

import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.PolicyException;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code effectledger tools validate FILE}. */
@Command(
    name = "tools",
    mixinStandardHelpOptions = true,
    description = "Work with tool policy files.",
    subcommands = ToolsCommand.Validate.class)
final class ToolsCommand implements Runnable {

  @Override
  public void run() {
    new picocli.CommandLine(this).usage(System.out);
  }

  @Command(
      name = "validate",
      mixinStandardHelpOptions = true,
      description =
          "Check a tools.yaml: every policy and connector setting; prints each problem. Exit 1 when any.")
  static final class Validate implements Callable<Integer> {

    @Parameters(paramLabel = "FILE", description = "the policy file, e.g. config/tools.yaml")
    Path file;

    @Override
    public Integer call() {
      List<String> problems = new ArrayList<>();
      ToolPolicies policies = null;
      try {
        policies = new ToolPolicyLoader().load(file);
      } catch (PolicyException e) {
        problems.addAll(e.problems());
      }
      if (policies != null) {
        problems.addAll(McpConnectors.all().checkAll(policies));
      }
      if (!problems.isEmpty()) {
        System.out.println(file + ": " + problems.size() + " problem(s)");
        problems.forEach(p -> System.out.println("  " + p));
        return 1;
      }
      List<String> warnings = policies.warnings();
      System.out.println(
          file
              + ": "
              + policies.tools().size()
              + " tools, valid"
              + (warnings.isEmpty() ? "" : ", " + warnings.size() + " warning(s)"));
      warnings.forEach(w -> System.out.println("  warning: " + w));
      return 0;
    }
  }
}
