package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.PolicyDiff;
import dev.effectledger.policy.PolicyException;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.CoPartitioning;
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
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code effectledger tools validate FILE}, {@code effectledger tools diff OLD NEW} and {@code
 * effectledger tools apply FILE}.
 */
@Command(
    name = "tools",
    mixinStandardHelpOptions = true,
    description = "Work with tool policy files.",
    subcommands = {ToolsCommand.Validate.class, ToolsCommand.Diff.class, ToolsCommand.Apply.class})
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
        // the connector settings of the tools whose policies are fine: every problem at once
        e.wellFormed().ifPresent(p -> problems.addAll(McpConnectors.all().checkAll(p)));
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
      return review(
          before + " -> " + after, PolicyDiff.of(old, now), now, processor, token, allowShrink);
    }

    static ToolPolicies load(Path file) {
      try {
        return new ToolPolicyLoader().load(file);
      } catch (PolicyException e) {
        System.out.println(file + ": " + e.problems().size() + " problem(s)");
        e.problems().forEach(p -> System.out.println("  " + p));
        return null;
      }
    }

    /** The processors' count of what a window of {@code window} would expire at once. */
    private static String count(URI processor, String token, String tool, Duration window) {
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
                    StatusCommand.bearer(
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

  @Command(
      name = "apply",
      mixinStandardHelpOptions = true,
      description = {
        "Validate FILE and publish it to tool-policy as the cluster's next policy version: every"
            + " processor task switches to it at one point of its own processing, and clients and"
            + " gateways derive keys with its key rules, without a restart. Prints what changes"
            + " against the policy applied now; a change of a tool's key rules keeps the old rules"
            + " honoured through the tool's retry horizon.",
        "Exit 0: applied (or nothing to apply). 1: a change weakens the promise and"
            + " --allow-shrink was not given; nothing is published. 2: the file is not valid or"
            + " Kafka could not be reached."
      })
  static final class Apply implements Callable<Integer> {

    @Parameters(paramLabel = "FILE", description = "the policy file, e.g. config/tools.yaml")
    Path file;

    @Option(
        names = "--config",
        required = true,
        description =
            "properties file with the Kafka settings (config/processor.properties will do); EFFECTLEDGER_* and KAFKA_BOOTSTRAP_SERVERS override it")
    Path config;

    @Option(
        names = "--processor",
        description = "a processor's HTTP endpoint, to count what a shrunk window expires at once")
    URI processor;

    @Option(
        names = "--token",
        description = "a token of the processors' http.auth.<name> (default: EFFECTLEDGER_TOKEN)")
    String token;

    @Option(
        names = "--allow-shrink",
        description = "accept changes that weaken the promise; they are still printed")
    boolean allowShrink;

    @Override
    public Integer call() throws Exception {
      ToolPolicies next = Diff.load(file);
      if (next == null) {
        return 2;
      }
      List<String> problems = McpConnectors.all().checkAll(next);
      if (!problems.isEmpty()) {
        System.out.println(file + ": " + problems.size() + " problem(s)");
        problems.forEach(p -> System.out.println("  " + p));
        return 2;
      }
      String source = java.nio.file.Files.readString(file);
      AppConfig cfg = AppConfig.load(config, System.getenv());
      Properties kafka = cfg.kafka();
      int partitions;
      try (Admin admin = Admin.create(kafka)) {
        partitions = CoPartitioning.verify(admin);
        TopicProvisioner topics = new TopicProvisioner(admin);
        List<String> needed = new ArrayList<>(TopicProvisioner.topics(next));
        if (cfg.getBoolean(AppConfig.TOPICS_CREATE, false)) {
          topics.create(
              needed,
              partitions,
              (short) cfg.getInt(AppConfig.TOPICS_REPLICATION, 3),
              cfg.getInt(AppConfig.TOPICS_MIN_ISR, 0));
        }
        // A new lane's dispatch topic must exist before a processor forwards to it.
        topics.check(needed, kafka.getProperty("application.id", "effectledger"));
        CoPartitioning.verifyPolicy(admin, partitions);
      } catch (IllegalStateException e) {
        System.out.println("effectledger tools apply: " + e.getMessage());
        return 2;
      }
      Optional<AppliedPolicy> current = PolicyTopic.current(kafka);
      AppliedPolicy before = current.orElse(AppliedPolicy.seed(next, source));
      if (current.isPresent()
          && current.get().sha256().equals(AppliedPolicy.seed(next, source).sha256())) {
        System.out.println(file + " is applied already (version " + current.get().version() + ")");
        return 0;
      }
      if (current.isEmpty()) {
        System.out.println(
            "No policy applied to this cluster yet: each processor uses its own tools.yaml until"
                + " this one. Compare with it first: effectledger tools diff <its file> "
                + file);
        next.warnings().forEach(w -> System.out.println("  warning: " + w));
      } else {
        int verdict =
            review(
                "version " + current.get().version() + " -> " + file,
                PolicyDiff.applied(current.get().policies(), next),
                next,
                processor,
                token,
                allowShrink);
        if (verdict != 0) {
          return verdict;
        }
      }
      AppliedPolicy applied =
          before.next(next, source, java.time.Instant.now(), System.getProperty("user.name", ""));
      PolicyTopic.publish(kafka, applied, partitions);
      for (String tool : next.tools().keySet()) {
        if (applied.keyVersion(tool) > before.keyVersion(tool)) {
          System.out.println(
              "  "
                  + tool
                  + ": key rules version "
                  + applied.keyVersion(tool)
                  + "; keys derived under version "
                  + before.keyVersion(tool)
                  + " are honoured until "
                  + applied.keys().get(tool).get(1).honouredUntil());
        }
      }
      System.out.println(
          "Applied "
              + file
              + " as policy version "
              + applied.version()
              + " to "
              + Topics.POLICY
              + " ("
              + partitions
              + " partitions). Processors and executors switch at their next record; check"
              + " GET /v1/policy on a processor.");
      return 0;
    }
  }

  /**
   * Prints what replacing {@code old} with {@code now} does per tool (as {@code tools diff}), with
   * the processors' counts when {@code processor} is given.
   *
   * @return 0 when nothing weakens the promise or {@code allowShrink} accepts it, 1 otherwise
   */
  static int review(
      String title,
      PolicyDiff diff,
      ToolPolicies now,
      URI processor,
      String token,
      boolean allowShrink) {
    if (diff.changes().isEmpty()) {
      System.out.println(title + ": no changes");
      return 0;
    }
    System.out.println(title + ":");
    for (PolicyDiff.Change change : diff.changes()) {
      String line = "  " + change.tool() + ": " + change.what();
      if (change.shrunkTo() != null) {
        line += "; " + Diff.count(processor, token, change.tool(), change.shrunkTo());
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
}
