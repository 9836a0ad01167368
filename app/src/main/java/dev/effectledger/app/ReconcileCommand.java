package dev.effectledger.app;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.reconcile.Reconciler;
import dev.effectledger.connectors.reconcile.ToolReport;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code effectledger reconcile}: runs the {@link Reconciler} once (or every {@code --every}) and
 * prints what it did per tool, with an exit code a cron job can act on.
 */
@Command(
    name = "reconcile",
    mixinStandardHelpOptions = true,
    description = {
      "Ask the downstreams about the ledger's keys: settle each key held as UNKNOWN whose effect a"
          + " lookup finds (applied) or rules out (released), confirm completed keys, count effects"
          + " without a ledger entry. Prints one line per tool.",
      "Exit 0: nothing needs a person. 1: the ledger and a downstream disagree (a completed key"
          + " without its effect, or an effect without a key). 3: keys are still held (no lookup,"
          + " lookup failed, or younger than --min-age): an operator decides. 2: it could not run."
    })
final class ReconcileCommand implements Callable<Integer> {

  /** Exit status: keys still held for an operator. */
  static final int STILL_HELD = 3;

  @Option(
      names = "--config",
      required = true,
      description =
          "properties file (config/executor.properties will do); EFFECTLEDGER_* and KAFKA_BOOTSTRAP_SERVERS override it")
  Path config;

  @Option(names = "--tools", description = "tools.yaml; overrides tools.file")
  Path tools;

  @Option(
      names = "--tool",
      split = ",",
      description = "only these tools (default: every write tool of tools.yaml)")
  List<String> only;

  @Option(
      names = "--since",
      description =
          "only keys whose latest change is this recent, e.g. 24h; effects without an entry are then not counted (default: all that tool-audit keeps)")
  String since;

  @Option(
      names = "--min-age",
      defaultValue = "1m",
      description =
          "leave keys held for less than this alone: a request still inside the downstream could yet act (default ${DEFAULT-VALUE})")
  String minAge;

  @Option(
      names = "--every",
      description = "run again this often until stopped, as a service (e.g. 5m)")
  String every;

  @Override
  public Integer call() throws Exception {
    AppConfig cfg = AppConfig.load(config, System.getenv());
    ToolPolicies policies = cfg.policies(tools);
    List<String> selected = new ArrayList<>();
    List<String> lanes = new ArrayList<>();
    for (ToolPolicy policy : policies.tools().values()) {
      if (policy.isLedgered() && (only == null || only.contains(policy.name()))) {
        selected.add(policy.name());
        if (!lanes.contains(policy.lane())) {
          lanes.add(policy.lane());
        }
      }
    }
    if (only != null) {
      List<String> unknown = new ArrayList<>(only);
      unknown.removeAll(selected);
      if (!unknown.isEmpty()) {
        throw new IllegalArgumentException(
            "--tool names no write tool of the policy file: "
                + unknown
                + "; give tools it names with a class other than read");
      }
    }
    Duration minimum = duration("--min-age", minAge);
    Map<String, Connector> connectors = new LinkedHashMap<>();
    McpConnectors.all()
        .create(policies, lanes, Clock.systemUTC())
        .forEach(
            (tool, connector) -> {
              if (selected.contains(tool)) {
                connectors.put(tool, connector);
              } else {
                connector.close();
              }
            });
    try (Reconciler reconciler =
        new Reconciler(
            cfg.kafka(),
            cfg.get(AppConfig.SCHEMA_REGISTRY_URL),
            connectors,
            Reconciler.lanesOf(policies),
            minimum,
            Clock.systemUTC())) {
      if (since != null) {
        reconciler.startingAt(Clock.systemUTC().instant().minus(duration("--since", since)));
      }
      if (every == null) {
        return print(reconciler.reconcileOnce(), selected, System.out);
      }
      Duration interval = duration("--every", every);
      System.out.println(
          "effectledger reconcile: "
              + selected.size()
              + " tools, every "
              + every
              + " (held keys older than "
              + minAge
              + ")");
      while (!Thread.currentThread().isInterrupted()) {
        print(reconciler.reconcileOnce(), selected, System.out);
        Thread.sleep(interval.toMillis());
      }
      return 0;
    } finally {
      connectors.values().forEach(Connector::close);
    }
  }

  /** Prints {@code report}'s lines for {@code tools} and returns the exit status it calls for. */
  static int print(Reconciler.Report report, List<String> tools, PrintStream out) {
    String format = "%-28s %9s %8s %12s %12s %6s %14s%n";
    out.printf(
        format,
        "tool",
        "confirmed",
        "missing",
        "held:applied",
        "held:released",
        "held",
        "no-entry");
    int disagree = 0;
    int held = 0;
    for (String tool : tools) {
      ToolReport r = report.tool(tool);
      out.printf(
          format,
          tool,
          r.confirmed(),
          r.missingEffect(),
          r.heldFoundEffect(),
          r.heldNoEffect(),
          r.heldUnresolved(),
          r.effectWithoutEntry());
      disagree += r.missingEffect() + r.effectWithoutEntry();
      held += r.heldUnresolved();
    }
    if (disagree > 0) {
      out.println(
          disagree
              + " disagreement(s) between the ledger and a downstream: a completed key whose effect"
              + " the downstream does not have (missing), or an effect no key names (no-entry)."
              + " Look the keys up (the warnings above name them) before anything retries.");
      return 1;
    }
    if (held > 0) {
      out.println(
          held
              + " key(s) still held as UNKNOWN: their tool has no lookup, the lookup failed, or"
              + " they are younger than --min-age. Run again later, or settle them by hand.");
      return STILL_HELD;
    }
    return 0;
  }

  private static Duration duration(String option, String value) {
    return Durations.parse(value)
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    option
                        + " '"
                        + value
                        + "' is not a duration; use e.g. 0s, 30s, 15m, 24h, 7d or PT15M"));
  }
}
