package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.policy.Durations;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.KeyDerivation;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * The models the console's templates render: the overview (per tool figures, executors, double
 * effects), the queue of held keys, a key's page (its entry, findings and audit trail, or the key a
 * step derives) and a bypass approval's. Read from the query API's answers over every instance
 * ({@link LedgerReads}) and from {@link ConsoleActions}.
 */
final class ConsolePages {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final LedgerReads server;
  private final ConsoleActions actions;
  private final List<String> executors;
  private final Supplier<ToolPolicies> policies;
  private final Clock clock;
  private final ExecutorProbe executorProbe = new ExecutorProbe();

  ConsolePages(
      LedgerReads server,
      ConsoleActions actions,
      List<String> executors,
      Supplier<ToolPolicies> policies,
      Clock clock) {
    this.server = server;
    this.actions = actions;
    this.executors = List.copyOf(executors);
    this.policies = policies;
    this.clock = clock;
  }

  /** What every page shows: its title and who is signed in, with the CSRF token forms post. */
  static Map<String, Object> page(ConsoleGuard.Caller caller, String title) {
    Map<String, Object> page = new HashMap<>();
    page.put("title", title);
    page.put("user", caller.who().name());
    page.put("role", caller.who().role().name().toLowerCase(Locale.ROOT));
    page.put("operator", caller.operator());
    page.put("csrf", caller.csrf());
    page.put("signedIn", caller.session() != null);
    return page;
  }

  Map<String, Object> overview(ConsoleGuard.Caller caller) {
    Map<String, Object> page = page(caller, "Overview");
    overviewModel(page, overviewData(caller));
    return page;
  }

  /** The overview page's rows, from {@code data} as {@link #overviewData} gives it. */
  static void overviewModel(Map<String, Object> page, JsonNode data) {
    List<Map<String, Object>> tools = new ArrayList<>();
    data.path("tools")
        .fields()
        .forEachRemaining(
            e -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("tool", e.getKey());
              JsonNode d = e.getValue().path("decisions");
              row.put("firstSights", d.path("dispatched").asLong());
              row.put(
                  "duplicates",
                  d.path("dedup_hit").asLong()
                      + d.path("in_flight").asLong()
                      + d.path("refused_in_flight").asLong());
              row.put("conflicts", d.path("conflict").asLong());
              row.put("failed", d.path("failed").asLong());
              row.put("inFlight", e.getValue().path("inFlight").asLong());
              row.put("held", e.getValue().path("held").asLong());
              row.put("p50", millis(e.getValue().path("p50Ms")));
              row.put("p99", millis(e.getValue().path("p99Ms")));
              tools.add(row);
            });
    page.put("tools", tools);
    page.put("instances", data.path("instances").asInt());
    page.put("counting", data.path("counting").asBoolean());
    page.put("unreachable", texts(data.path("unreachable")));
    List<Map<String, Object>> executorRows = new ArrayList<>();
    data.path("executors")
        .forEach(
            x -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("url", x.path("url").asText());
              row.put("status", x.path("status").asText());
              row.put("ready", x.path("ready").asBoolean());
              row.put("effects", x.path("effects").asLong());
              row.put("inFlight", x.path("inFlight").asLong());
              row.put("retries", x.path("retries").asLong());
              executorRows.add(row);
            });
    page.put("executorRows", executorRows);
    List<Map<String, Object>> doubles = new ArrayList<>();
    data.path("doubleEffects")
        .forEach(
            d -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("tool", d.path("tool").asText());
              row.put("tenant", d.path("tenant").asText());
              row.put("key", d.path("key").asText());
              row.put("first", d.path("firstEffectId").asText());
              row.put("second", d.path("secondEffectId").asText());
              row.put(
                  "href", ConsoleForms.keyHref(d.path("tenant").asText(), d.path("key").asText()));
              doubles.add(row);
            });
    page.put("doubleEffects", doubles);
    page.put("hasDoubleEffects", !doubles.isEmpty());
  }

  private static String millis(JsonNode value) {
    return value.isMissingNode() ? "-" : String.format(Locale.ROOT, "%.0f ms", value.asDouble());
  }

  /** What the overview shows: the ledger's figures on every instance, and each executor's. */
  ObjectNode overviewData(ConsoleGuard.Caller caller) {
    ObjectNode data = server.overview(caller.authorization(), false);
    data.put("at", clock.millis());
    ArrayNode rows = data.putArray("executors");
    for (String url : executors) {
      rows.add(executorProbe.probe(url));
    }
    return data;
  }

  Map<String, Object> held(ConsoleGuard.Caller caller) {
    Map<String, Object> page = page(caller, "Held keys");
    heldModel(page, server.held(caller.authorization(), false), clock.instant(), actions::finding);
    return page;
  }

  /**
   * The held page's rows, from {@code data} as {@code GET /v1/held} gives it: each key's age since
   * its latest dispatch at {@code now}, and its {@code finding} (tenant, key) if any.
   */
  static void heldModel(
      Map<String, Object> page,
      JsonNode data,
      Instant now,
      BiFunction<String, String, String> finding) {
    List<Map<String, Object>> rows = new ArrayList<>();
    data.path("held")
        .forEach(
            entry -> {
              Map<String, Object> row = new LinkedHashMap<>();
              String tenant = entry.path("tenant").asText();
              String key = entry.path("key").asText();
              row.put("tenant", tenant);
              row.put("key", key);
              row.put("href", ConsoleForms.keyHref(tenant, key));
              row.put("tool", entry.path("tool").asText());
              row.put("attempts", entry.path("attempts").asInt());
              row.put(
                  "age",
                  Durations.format(
                      Duration.ofSeconds(
                          Duration.between(
                                  Instant.parse(entry.path("lastDispatchedAt").asText()), now)
                              .toSeconds())));
              row.put("error", entry.path("error").asText(""));
              row.put("errorMessage", entry.path("errorMessage").asText(""));
              row.put("finding", finding.apply(tenant, key));
              rows.add(row);
            });
    page.put("held", rows);
    page.put("count", rows.size());
    page.put("instances", data.path("instances").asInt());
    page.put("counting", data.path("counting").asBoolean());
    page.put("unreachable", texts(data.path("unreachable")));
  }

  /** A key's page for the query {@code tenant} and {@code key}, or a step's call to derive it. */
  Map<String, Object> key(ConsoleGuard.Caller caller, Map<String, String> query) {
    Map<String, Object> page = page(caller, "Keys");
    page.putAll(query);
    page.put("failed", query.containsKey("failed"));
    String tenant = query.getOrDefault("tenant", "").trim();
    String key = query.getOrDefault("key", "").trim();
    if (!tenant.isEmpty() && key.isEmpty() && query.containsKey("tool")) {
      try {
        key = derive(tenant, query);
        page.put("derived", key);
      } catch (IllegalArgumentException e) {
        page.put("error", e.getMessage());
      }
    }
    if (!tenant.isEmpty() && !key.isEmpty()) {
      page.put("key", key);
      try {
        ObjectNode entry = server.entry(tenant, key, caller.authorization());
        if (entry == null) {
          page.put("missing", true);
        } else {
          List<Map<String, String>> fields = new ArrayList<>();
          entry
              .fields()
              .forEachRemaining(
                  f -> fields.add(Map.of("name", f.getKey(), "value", f.getValue().asText())));
          page.put("fields", fields);
          page.put("hasEntry", true);
          page.put("state", entry.path("state").asText());
          boolean heldNow = "UNKNOWN".equals(entry.path("state").asText());
          page.put("held", heldNow);
          ToolPolicy policy = policies.get().tools().get(entry.path("tool").asText());
          boolean settled =
              "SUCCEEDED".equals(entry.path("state").asText())
                  || "FAILED".equals(entry.path("state").asText());
          page.put("bypassable", settled && policy != null && policy.bypassAllowed());
          page.put("finding", actions.finding(tenant, key));
        }
        List<Map<String, String>> audit = actions.auditTrail(tenant, key);
        page.put("audit", audit);
        page.put("hasAudit", !audit.isEmpty());
      } catch (IllegalStateException e) {
        page.put("error", e.getMessage());
      }
    }
    return page;
  }

  /** The key a step's call derives under the tool's current key rules. */
  private String derive(String tenant, Map<String, String> query) {
    String tool = query.getOrDefault("tool", "").trim();
    ToolPolicy policy = policies.get().tools().get(tool);
    if (policy == null) {
      throw new IllegalArgumentException("tool '" + tool + "' is not in the policy");
    }
    JsonNode arguments;
    try {
      arguments = JSON.readTree(query.getOrDefault("arguments", "{}"));
    } catch (IOException e) {
      throw new IllegalArgumentException("arguments are not JSON: " + e.getMessage());
    }
    if (arguments == null || !arguments.isObject()) {
      throw new IllegalArgumentException("arguments must be a JSON object");
    }
    return KeyDerivation.key(
        tenant,
        query.getOrDefault("run", ""),
        query.getOrDefault("step", ""),
        query.getOrDefault("scope", ""),
        tool,
        arguments,
        policy.key().ignore());
  }

  /**
   * The approval page for the form {@code form} posted on {@code tenant}'s {@code key}: the signed
   * approval {@link ConsoleActions#approve} gives, or why there is none.
   */
  Map<String, Object> approval(
      ConsoleGuard.Caller caller, String tenant, String key, Map<String, String> form) {
    String reason = form.getOrDefault("reason", "").trim();
    Optional<Duration> valid = ConsoleForms.approvalValidity(form.getOrDefault("expires", "1h"));
    Map<String, Object> page = page(caller, "Bypass approval");
    page.put("tenant", tenant);
    page.put("key", key);
    page.put("back", ConsoleForms.keyHref(tenant, key));
    if (reason.isEmpty()) {
      page.put("error", "A reason is required: it is audited with the bypass.");
    } else if (valid.isEmpty()) {
      page.put("error", "Expiry must be a duration from 1s to 24h, e.g. 15m or 1h.");
    } else {
      ConsoleActions.Approval approval =
          actions.approve(tenant, key, caller.who().name(), reason, valid.get());
      if (approval.token() == null) {
        page.put("error", approval.problem());
      } else {
        page.put("approval", approval.token());
        page.put("expiresAt", approval.expiresAt().toString());
        page.put("reason", reason);
      }
    }
    return page;
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }
}
