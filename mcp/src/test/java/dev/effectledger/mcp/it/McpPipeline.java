package dev.effectledger.mcp.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.connectors.executor.EffectExecutor;
import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.gateway.McpGatewayConfig;
import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * An MCP upstream behind the ledger, in one JVM on a test's cluster: the counting MCP server over
 * Streamable HTTP, whose {@code create_charge} tools.yaml names (irreversible, ambiguous outcomes
 * held, {@code find_charge} the lookup tool), the ledger and an executor for lane {@code mcp}.
 */
public final class McpPipeline implements AutoCloseable {

  private static final ObjectMapper JSON_MAPPER = new ObjectMapper();

  public final CountingMcpServer upstream;
  public final ToolPolicies policies;
  public final String toolsYaml;
  public final String registry;
  private final SchemaRegistryServer registryServer;
  private final String bootstrap;
  private final KafkaStreams ledger;
  private final EffectExecutor executor;
  private final Path state;

  public McpPipeline(String bootstrap, String name) throws Exception {
    this.bootstrap = bootstrap;
    // a registry over HTTP, not mock://, so that a gateway in another process shares it
    this.registryServer = SchemaRegistryServer.start();
    this.registry = registryServer.url();
    upstream = CountingMcpServer.startHttp(0);
    toolsYaml =
        """
        tools:
          create_charge:
            class: irreversible
            pendingTimeout: 10m
            onInFlight: coalesce
            onAmbiguous: hold
            lane: mcp
            connector: mcp
            settings: {url: "%1$s", timeout: 10s, effectIdPointer: /id, lookupTool: find_charge}
          payments_create_charge:      # the same tool, as a gateway with two upstreams lists it
            class: irreversible
            pendingTimeout: 10m
            onAmbiguous: hold
            lane: mcp
            connector: mcp
            settings: {url: "%1$s", tool: create_charge, timeout: 10s, effectIdPointer: /id, lookupTool: find_charge}
        """
            .formatted(upstream.url());
    policies = new ToolPolicyLoader().parse(toolsYaml, name + ".yaml");
    createTopics(bootstrap, policies);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    state = Files.createTempDirectory(name);
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    ledger =
        LedgerTopology.streams(LedgerConfig.of(policies, registry).withIntentPartitions(2), props);
    ledger.start();
    executor =
        EffectExecutor.start(
            ExecutorConfig.of(kafka(), List.of("mcp"), registry),
            McpConnectors.all().create(policies, List.of("mcp"), Clock.systemUTC()),
            policies);
  }

  /**
   * The command that runs the counting MCP server as a process of its own over stdio (this JVM's
   * java and class path), appending each effect to {@code effects}.
   */
  public static List<String> countingServerCommand(Path effects) {
    return List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp",
        System.getProperty("java.class.path"),
        CountingMcpServer.class.getName(),
        "--effects",
        effects.toString());
  }

  /** The counting server's {@code create_charge} of {@code amount} to {@code to}. */
  public static CallToolResult charge(McpSyncClient agent, int amount, String to) {
    return agent.callTool(new CallToolRequest("create_charge", Map.of("amount", amount, "to", to)));
  }

  /** {@code create_charge} with {@code arguments} and {@code _meta}. */
  public static CallToolResult charge(
      McpSyncClient agent, Map<String, Object> arguments, Map<String, Object> meta) {
    return agent.callTool(new CallToolRequest("create_charge", arguments, meta));
  }

  /** The key of tenant acme's {@code create_charge} with {@code arguments} at {@code step}. */
  public static String key(String run, String step, Map<String, Object> arguments)
      throws Exception {
    return key("acme", run, step, arguments);
  }

  /** The key of {@code tenant}'s {@code create_charge} with {@code arguments} at {@code step}. */
  public static String key(String tenant, String run, String step, Map<String, Object> arguments)
      throws Exception {
    return IdempotencyKeys.derive(
            new StepContext(tenant, run, step, ""),
            "create_charge",
            JSON_MAPPER.writeValueAsString(arguments),
            KeyRules.NONE)
        .key();
  }

  public static JsonNode structured(CallToolResult result) {
    return JSON_MAPPER.valueToTree(result.structuredContent());
  }

  /** The text of a result's first content. */
  public static String text(CallToolResult result) {
    return ((TextContent) result.content().get(0)).text();
  }

  /**
   * Every topic the ledger reads or writes for {@code policies}, two partitions each, as {@code
   * effectledger processor} creates them (its TopicProvisioner, in app, which this module cannot
   * use).
   */
  public static void createTopics(String bootstrap, ToolPolicies policies) throws Exception {
    Set<String> topics = new LinkedHashSet<>(Topics.fixed());
    policies.tools().values().forEach(p -> topics.add(Topics.dispatch(p.lane())));
    policies.unknownTool().ifPresent(p -> topics.add(Topics.dispatch(p.lane())));
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      Set<String> existing = admin.listTopics().names().get();
      admin
          .createTopics(
              topics.stream()
                  .filter(t -> !existing.contains(t))
                  .map(t -> new NewTopic(t, 2, (short) 1))
                  .toList())
          .all()
          .get();
    }
  }

  /**
   * Publishes {@code applied} to every partition of tool-policy in one transaction, as {@code
   * effectledger tools apply} does (its PolicyTopic, in app).
   */
  public void publishPolicy(AppliedPolicy applied) {
    Properties props = kafka();
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "mcp-pipeline-policy");
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      for (int p = 0; p < 2; p++) {
        producer.send(new ProducerRecord<>(Topics.POLICY, p, "policy", applied.toJson()));
      }
      producer.commitTransaction();
    }
  }

  public Properties kafka() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return p;
  }

  /** An MCP gateway's configuration in front of the upstream, on a free port. */
  public McpGatewayConfig gatewayConfig(String extraYaml) throws Exception {
    return gatewayConfig(extraYaml, Map.of("payments", upstream.url()));
  }

  /** An MCP gateway's configuration in front of {@code upstreams} (name to URL, in order). */
  public McpGatewayConfig gatewayConfig(String extraYaml, Map<String, String> upstreams)
      throws Exception {
    return gatewayConfig(extraYaml, upstreams, 0);
  }

  /** As {@link #gatewayConfig(String, Map)}, listening on {@code port} (0: a free one). */
  public McpGatewayConfig gatewayConfig(String extraYaml, Map<String, String> upstreams, int port)
      throws Exception {
    StringBuilder listed = new StringBuilder();
    upstreams.forEach(
        (name, url) ->
            listed
                .append("  ")
                .append(name)
                .append(": {url: \"")
                .append(url)
                .append("\", timeout: 10s}\n"));
    ObjectNode root =
        (ObjectNode)
            new YAMLMapper()
                .readTree(
                    """
        listen: {host: 127.0.0.1, port: %d}
        tenant: acme
        run: {header: X-Agent-Run}
        wait: 30s
        kafka: {bootstrap.servers: "%s"}
        schemaRegistryUrl: "%s"
        %s
        upstreams:
        %s"""
                        .formatted(port, bootstrap, registry, extraYaml, listed));
    return McpGatewayConfig.parse(root, Path.of("."));
  }

  @Override
  public void close() {
    executor.close();
    ledger.close(Duration.ofSeconds(30));
    upstream.close();
    registryServer.close();
    try {
      Utils.delete(state.toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
