package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.PolicyDiff;
import dev.effectledger.policy.PolicyException;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code effectledger tools validate FILE} and {@code effectledger tools diff OLD NEW}. */
@Command(
    name = "tools",
    mixinStandardHelpOptions = true,
    description = "Work with tool policy files.",
    subcommands = {ToolsCommand.Validate.class, ToolsCommand.Diff.class})
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

  @Command(
      name = "diff",
      mixinStandardHelpOptions = true,
      description = {
        "What replacing the policy file OLD with NEW would do, tool by tool: windows, classes,"
            + " lanes, key rules; with --processor, how many stored entries a shrunk window would"
            + " expire at once (counted on every processor).",
        "Exit 0: nothing weakens the ledger's promise (or --allow-shrink accepts it). 1: a change"
            + " can turn a retry into a second effect. 2: a file is not valid."
      })
  static final class Diff implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "OLD", description = "the policy file in use")
    Path before;

    @Parameters(index = "1", paramLabel = "NEW", description = "the policy file to roll out")
    Path after;

    @Option(
        names = "--processor",
        description = "a processor's HTTP endpoint, e.g. http://127.0.0.1:8080, to count entries")
    URI processor;

    @Option(
        names = "--token",
        description =
            "a token of the processors' http.auth.<name> (default: EFFECTLEDGER_TOKEN), when their API wants one")
    String token;

    @Option(
        names = "--allow-shrink",
        description = "accept changes that weaken the promise (exit 0); they are still printed")
    boolean allowShrink;

    @Override
    public Integer call() {
      ToolPolicies old = load(before);
      ToolPolicies now = load(after);
      if (old == null || now == null) {
        return 2;
      }
      PolicyDiff diff = PolicyDiff.of(old, now);
      if (diff.changes().isEmpty()) {
        System.out.println(before + " -> " + after + ": no changes");
        return 0;
      }
      System.out.println(before + " -> " + after + ":");
      for (PolicyDiff.Change change : diff.changes()) {
        String line = "  " + change.tool() + ": " + change.what();
        if (change.shrunkTo() != null) {
          line += "; " + count(change.tool(), change.shrunkTo());
        }
        if (change.risk() == PolicyDiff.Risk.WEAKENS) {
          line += " [weakens]";
        } else if (change.risk() == PolicyDiff.Risk.CAUTION) {
          line += " [caution]";
        }
        System.out.println(line);
      }
      now.warnings().forEach(w -> System.out.println("  warning: " + w));
      if (!diff.weakens()) {
        return 0;
      }
      if (allowShrink) {
        System.out.println("Changes marked [weakens] accepted (--allow-shrink).");
        return 0;
      }
      System.out.println(
          "Changes marked [weakens] can turn a retry into a second effect. Roll them out only on"
              + " purpose: run again with --allow-shrink to accept them.");
      return 1;
    }

    private static ToolPolicies load(Path file) {
      try {
        return new ToolPolicyLoader().load(file);
      } catch (PolicyException e) {
        System.out.println(file + ": " + e.problems().size() + " problem(s)");
        e.problems().forEach(p -> System.out.println("  " + p));
        return null;
      }
    }

    /** The processors' count of what a window of {@code window} would expire at once. */
    private String count(String tool, Duration window) {
      if (processor == null) {
        return "give --processor to count the entries that would expire";
      }
      URI uri =
          processor.resolve(
              "/v1/tools/"
                  + URLEncoder.encode(tool, StandardCharsets.UTF_8)
                  + "/expiry?window="
                  + Durations.format(window));
      try {
        HttpResponse<String> response =
            HttpClient.newHttpClient()
                .send(
                    HttpAuth.bearer(
                            HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)), token)
                        .GET()
                        .build(),
                    HttpResponse.BodyHandlers.ofString());
        JsonNode counted = new ObjectMapper().readTree(response.body());
        if (response.statusCode() != 200) {
          return "could not count (" + uri + " answered " + response.statusCode() + ")";
        }
        String text =
            counted.path("expiringAtOnce").asLong()
                + " of "
                + counted.path("settled").asLong()
                + " settled entries expire at once ("
                + counted.path("instances").asInt()
                + " processor(s)";
        return text
            + (counted.path("unreachable").isEmpty()
                ? ")"
                : ", not counted: " + counted.path("unreachable") + ")");
      } catch (IOException e) {
        return "could not count (" + uri + ": " + e.getMessage() + ")";
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return "could not count (interrupted)";
      }
    }
  }
}
