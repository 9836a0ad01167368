package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.auth.AuthSettings;
import dev.effectledger.auth.FairShare;
import dev.effectledger.mcp.connector.McpConnectorSettings;
import dev.effectledger.policy.FieldReader;
import dev.effectledger.policy.PolicyException;
import dev.effectledger.policy.ToolClass;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The MCP gateway's configuration, {@code config/mcp.yaml}:
 *
 * <pre>
 * listen: {host: 127.0.0.1, port: 8097, path: /mcp}   # Streamable HTTP (stdio: --stdio)
 * tenant: acme                     # the tenant of every call through this gateway
 * run:
 *   header: X-Agent-Run            # the run id header an agent's MCP client sends (HTTP)
 *   id: ""                         # a fixed run id (a stdio gateway launched per agent run)
 *   fallback: refuse               # no run id: refuse write calls (refuse), or use the MCP session (session)
 * wait: 30s                        # how long a write call waits for the ledger's answer
 * progress: 5s                     # while it waits, a progress notification this often (if the agent asked)
 * tools: tools.yaml                # the ledger's policy file (relative to this file)
 * kafka: {bootstrap.servers: 127.0.0.1:9092}   # Kafka client settings (KAFKA_BOOTSTRAP_SERVERS wins)
 * schemaRegistryUrl: http://127.0.0.1:8081
 * annotations:                     # the class of a tool tools.yaml does not name, by its hints
 *   readOnly: read
 *   idempotent: write-idempotent
 *   destructive: irreversible
 *   none: irreversible
 * defaults: {lane: mcp, pendingTimeout: 10m, onAmbiguous: hold}   # for generated policies
 * upstreams:
 *   payments: {url: http://127.0.0.1:8095/mcp}                # any mcp connector setting
 *   files: {command: [npx, -y, some-mcp-server], env: {}}
 * logging: info                    # upstreams' log messages relayed to agents from this level (off: none)
 * refresh: 5m                      # list the upstreams again this often, besides on their notifications (0s: never)
 * agents:
 *   sessions: own                  # each agent its own session with each upstream (own), or one for all (shared)
 *   idle: 10m                      # an agent's own upstream sessions close after this long unused
 * interactive:                     # write tools that ask the agent (sampling, elicitation) while they run
 *   confirm_transfer: refuse       # refused, nothing done; or pass-through: performed in the agent's session
 * auth:                            # OAuth 2.1 access tokens required over HTTP (none: no check; see docs/operations.md)
 *   issuer: https://idp.example.com            # the identity provider (its keys found from its metadata)
 *   audience: https://mcp.example.com/mcp      # this gateway's URL as agents reach it: tokens must name it
 *   jwksUri: ""                    # the provider's keys, when its metadata does not say
 *   tenantClaim: tenant            # the claim naming the caller's tenant (then tenant: above is not used over HTTP)
 *   rolesClaim: roles
 *   readScope: tools:read          # calls of read tools (and listing)
 *   writeScope: tools:write        # calls of write tools
 *   clockSkew: 60s
 * limits:                          # each tenant's fair share of write calls (0 or unset: no limit)
 *   default: {intentsPerSecond: 200, burst: 400, waiting: 1000, runIntentsPerSecond: 50}
 *   tenants: {acme: {intentsPerSecond: 500}}   # one tenant's, the rest the defaults'
 * </pre>
 */
public record McpGatewayConfig(
    String host,
    int port,
    String path,
    String tenant,
    String runHeader,
    String runId,
    RunFallback runFallback,
    Duration callWait,
    Duration writeProgress,
    Path tools,
    Properties kafka,
    String schemaRegistryUrl,
    Map<Hint, ToolClass> annotations,
    JsonNode defaults,
    Map<String, JsonNode> upstreams,
    McpSchema.LoggingLevel logging,
    Duration refresh,
    AgentSessionMode agentSessions,
    Duration agentIdle,
    Map<String, Interactive> interactive,
    AuthSettings auth,
    FairShare fairShare) {

  /** Whose sessions with the upstreams an agent's pass-through requests go on. */
  public enum AgentSessionMode {
    /**
     * Each agent its own session with each upstream it uses, with the agent's own capabilities: an
     * upstream's requests (sampling, elicitation, roots) reach the agent, and its log messages
     * reach only that agent. The default.
     */
    OWN,
    /**
     * One session with each upstream for every agent: fewer sessions (one process per stdio
     * upstream), no server-to-client requests, and log messages to every agent.
     */
    SHARED
  }

  /** What the gateway does with a call of a write tool that asks the agent while it runs. */
  public enum Interactive {
    /** Refused with {@code AGENT_REQUESTS_UNAVAILABLE}, nothing done. */
    REFUSE,
    /**
     * Performed by the gateway in the agent's own upstream session, its requests relayed to the
     * agent, carrying the key the ledger would give it ({@code _meta} and {@code Idempotency-Key});
     * the ledger does not record it: at most once only if the upstream honours the key.
     */
    PASS_THROUGH
  }

  /** What a write call without a run id does. */
  public enum RunFallback {
    /** Refused with a tool error naming how to send a run id: the safe default. */
    REFUSE,
    /**
     * The MCP session id is the run: a retry in the same session is deduplicated, one after a
     * reconnect (a new session) is not.
     */
    SESSION
  }

  /** The annotation a tool's class is read from, strongest first. */
  public enum Hint {
    READ_ONLY("readOnly"),
    IDEMPOTENT("idempotent"),
    DESTRUCTIVE("destructive"),
    NONE("none");

    final String field;

    Hint(String field) {
      this.field = field;
    }
  }

  /** The documented mapping: read-only passes through; idempotent; everything else the safest. */
  public static Map<Hint, ToolClass> defaultAnnotations() {
    Map<Hint, ToolClass> mapping = new EnumMap<>(Hint.class);
    mapping.put(Hint.READ_ONLY, ToolClass.READ);
    mapping.put(Hint.IDEMPOTENT, ToolClass.WRITE_IDEMPOTENT);
    mapping.put(Hint.DESTRUCTIVE, ToolClass.IRREVERSIBLE);
    mapping.put(Hint.NONE, ToolClass.IRREVERSIBLE);
    return mapping;
  }

  /** Reads and checks the file; the exception lists every problem. */
  public static McpGatewayConfig load(Path file) throws IOException {
    JsonNode root = new YAMLMapper().readTree(Files.readString(file));
    if (root == null || !root.isObject()) {
      throw new PolicyException(file.toString(), List.of("must be a mapping (see docs/mcp.md)"));
    }
    return parse(root, file.toAbsolutePath().getParent());
  }

  /** Parses {@code root}; relative paths are resolved against {@code base}. */
  public static McpGatewayConfig parse(JsonNode root, Path base) {
    FieldReader s = FieldReader.of("mcp", root);
    s.allowOnly(
        List.of(
            "listen",
            "tenant",
            "run",
            "wait",
            "progress",
            "tools",
            "kafka",
            "schemaRegistryUrl",
            "annotations",
            "defaults",
            "upstreams",
            "logging",
            "refresh",
            "agents",
            "interactive",
            "auth",
            "limits"));
    String host = "127.0.0.1";
    int port = 8097;
    String path = "/mcp";
    FieldReader listen = s.mapping("listen", "").orElse(null);
    if (listen != null) {
      listen.allowOnly(List.of("host", "port", "path"));
      host = listen.text("host", host);
      port = listen.atLeast("port", 0, port);
      path = listen.text("path", path);
      if (!path.startsWith("/")) {
        listen.problem("path", "'" + path + "' must start with /");
      }
    }
    AuthSettings auth = auth(s);
    String tenant =
        auth == null
            ? s.requiredText("tenant", "give the tenant of every call through this gateway")
            : s.text("tenant", null);
    String runHeader = null;
    String runId = null;
    RunFallback fallback = RunFallback.REFUSE;
    FieldReader run = s.mapping("run", "").orElse(null);
    if (run != null) {
      run.allowOnly(List.of("header", "id", "fallback"));
      runHeader = run.text("header", null);
      runId = run.text("id", null);
      if (runId != null && runId.isBlank()) {
        runId = null;
      }
      fallback = run.choice("fallback", RunFallback.class, RunFallback.REFUSE);
    }
    Map<Hint, ToolClass> annotations = defaultAnnotations();
    FieldReader hints = s.mapping("annotations", "").orElse(null);
    if (hints != null) {
      hints.allowOnly(List.of("readOnly", "idempotent", "destructive", "none"));
      for (Hint hint : Hint.values()) {
        String value = hints.text(hint.field, null);
        if (value != null) {
          ToolClass chosen = toolClass(value);
          if (chosen == null) {
            hints.problem(
                hint.field,
                "'"
                    + value
                    + "' is not a class; give read, write-idempotent, write-non-idempotent or"
                    + " irreversible");
          } else {
            annotations.put(hint, chosen);
          }
        }
      }
    }
    Properties kafka = new Properties();
    JsonNode kafkaNode = s.object("kafka");
    if (kafkaNode != null) {
      kafkaNode.properties().forEach(e -> kafka.put(e.getKey(), e.getValue().asText()));
    }
    String env = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
    if (env != null && !env.isBlank()) {
      kafka.put("bootstrap.servers", env); // as for every effectledger command: the env wins
    } else if (!kafka.containsKey("bootstrap.servers")) {
      s.problem("kafka", "give kafka.bootstrap.servers (or set KAFKA_BOOTSTRAP_SERVERS)");
    }
    // a call whose broker is unreachable answers LEDGER_UNAVAILABLE within this, not a minute
    kafka.putIfAbsent("max.block.ms", "10000");
    Map<String, JsonNode> upstreams = new LinkedHashMap<>();
    JsonNode upstreamNode = s.object("upstreams");
    if (upstreamNode == null || upstreamNode.isEmpty()) {
      s.problem(
          "upstreams", "name at least one MCP server: {name: {url: ...}} or {command: [...]}");
    } else {
      upstreamNode
          .properties()
          .forEach(
              e -> {
                if (!e.getKey().matches("[A-Za-z0-9_-]{1,64}")) {
                  s.problem(
                      "upstreams." + e.getKey(),
                      "an upstream's name is 1 to 64 letters, digits, _ or -");
                }
                try {
                  McpConnectorSettings.from("upstream " + e.getKey(), withTool(e.getValue()));
                } catch (IllegalArgumentException bad) {
                  for (String line : bad.getMessage().split("\n")) {
                    s.problem("upstreams." + e.getKey(), line);
                  }
                }
                upstreams.put(e.getKey(), e.getValue());
              });
    }
    JsonNode defaults = s.object("defaults");
    McpSchema.LoggingLevel logging = McpSchema.LoggingLevel.INFO;
    String level = s.text("logging", "info");
    if (level.equalsIgnoreCase("off") || level.equals("false")) { // YAML 1.1 reads off as false
      logging = null;
    } else {
      try {
        logging = McpSchema.LoggingLevel.valueOf(level.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        s.problem(
            "logging",
            "'"
                + level
                + "' is not an MCP log level; give off, debug, info, notice, warning, error,"
                + " critical, alert or emergency");
      }
    }
    AgentSessionMode agentSessions = AgentSessionMode.OWN;
    Duration agentIdle = Duration.ofMinutes(10);
    FieldReader agents = s.mapping("agents", "").orElse(null);
    if (agents != null) {
      agents.allowOnly(List.of("sessions", "idle"));
      agentSessions = agents.choice("sessions", AgentSessionMode.class, AgentSessionMode.OWN);
      agentIdle = agents.duration("idle", agentIdle);
    }
    Map<String, Interactive> interactive = new LinkedHashMap<>();
    JsonNode interactiveNode = s.object("interactive");
    if (interactiveNode != null) {
      interactiveNode
          .properties()
          .forEach(
              e -> {
                String value = e.getValue().asText("").toLowerCase(Locale.ROOT);
                switch (value) {
                  case "refuse" -> interactive.put(e.getKey(), Interactive.REFUSE);
                  case "pass-through" -> interactive.put(e.getKey(), Interactive.PASS_THROUGH);
                  default ->
                      s.problem(
                          "interactive." + e.getKey(),
                          "'"
                              + e.getValue().asText()
                              + "' is not a choice; give refuse or pass-through");
                }
              });
    }
    if (!interactive.isEmpty() && agentSessions == AgentSessionMode.SHARED) {
      s.problem(
          "interactive",
          "needs agents.sessions: own (a shared upstream session relays no requests to agents)");
    }
    McpGatewayConfig config =
        new McpGatewayConfig(
            host,
            port,
            path,
            tenant,
            runHeader,
            runId,
            fallback,
            s.duration("wait", Duration.ofSeconds(30)),
            s.duration("progress", Duration.ofSeconds(5)),
            base.resolve(s.text("tools", "tools.yaml")),
            kafka,
            s.text("schemaRegistryUrl", "http://127.0.0.1:8081"),
            annotations,
            defaults == null ? YAMLMapper.builder().build().createObjectNode() : defaults,
            upstreams,
            logging,
            s.duration("refresh", Duration.ofMinutes(5)),
            agentSessions,
            agentIdle,
            Map.copyOf(interactive),
            auth,
            limits(s));
    s.check();
    return config;
  }

  /** The {@code limits} section: no limits when there is none. */
  private static FairShare limits(FieldReader s) {
    FieldReader l = s.mapping("limits", "").orElse(null);
    if (l == null) {
      return FairShare.none();
    }
    l.allowOnly(List.of("default", "tenants"));
    FairShare.Limits defaults = limits(l, "default", FairShare.Limits.NONE);
    Map<String, FairShare.Limits> tenants = new LinkedHashMap<>();
    FieldReader named = l.mapping("tenants", "").orElse(null);
    if (named != null) {
      l.raw("tenants")
          .fieldNames()
          .forEachRemaining(
              tenant -> {
                FairShare.Limits one = limits(named, tenant, defaults);
                if (one != null) {
                  tenants.put(tenant, one);
                }
              });
    }
    return FairShare.of(defaults == null ? FairShare.Limits.NONE : defaults, tenants);
  }

  private static FairShare.Limits limits(FieldReader parent, String field, FairShare.Limits base) {
    FieldReader r = parent.mapping(field, "").orElse(null);
    if (r == null) {
      return base;
    }
    List<String> names = List.of("intentsPerSecond", "burst", "waiting", "runIntentsPerSecond");
    r.allowOnly(names);
    Map<String, String> kebab =
        Map.of(
            "intents-per-second", "intentsPerSecond",
            "burst", "burst",
            "waiting", "waiting",
            "run-intents-per-second", "runIntentsPerSecond");
    try {
      return FairShare.Limits.read(
          name -> {
            JsonNode value = r.raw(kebab.get(name));
            return value == null || value.isNull() ? null : value.asText();
          },
          "",
          base == null ? FairShare.Limits.NONE : base);
    } catch (IllegalArgumentException e) {
      r.problem("", e.getMessage());
      return base;
    }
  }

  /** The {@code auth} section: null when there is none (no tokens asked for). */
  private static AuthSettings auth(FieldReader s) {
    FieldReader a = s.mapping("auth", "").orElse(null);
    if (a == null) {
      return null;
    }
    a.allowOnly(
        List.of(
            "issuer",
            "audience",
            "jwksUri",
            "tenantClaim",
            "rolesClaim",
            "readScope",
            "writeScope",
            "clockSkew"));
    String issuer = a.requiredText("issuer", "give the identity provider's issuer URL");
    String audience =
        a.requiredText(
            "audience", "give this gateway's URL as agents reach it: its tokens must name it");
    String jwks = a.text("jwksUri", "");
    if (issuer == null || audience == null) {
      return null;
    }
    try {
      return new AuthSettings(
          URI.create(issuer),
          audience,
          jwks.isBlank() ? null : URI.create(jwks),
          a.text("tenantClaim", AuthSettings.TENANT_CLAIM),
          a.text("rolesClaim", AuthSettings.ROLES_CLAIM),
          a.text("readScope", AuthSettings.READ_SCOPE),
          a.text("writeScope", AuthSettings.WRITE_SCOPE),
          a.duration("clockSkew", AuthSettings.CLOCK_SKEW));
    } catch (IllegalArgumentException e) {
      a.problem("issuer", e.getMessage());
      return null;
    }
  }

  /** An upstream's settings as the connector reads them (a tool name is filled in per tool). */
  static JsonNode withTool(JsonNode upstream) {
    ObjectNode copy = upstream.isObject() ? ((ObjectNode) upstream).deepCopy() : null;
    if (copy == null) {
      return upstream;
    }
    copy.remove("tool");
    return copy;
  }

  static ToolClass toolClass(String name) {
    for (ToolClass c : ToolClass.values()) {
      if (c.name().equals(name.toUpperCase(Locale.ROOT).replace('-', '_'))) {
        return c;
      }
    }
    return null;
  }
}
