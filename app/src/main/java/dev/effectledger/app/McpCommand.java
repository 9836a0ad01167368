package dev.effectledger.app;

import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.effectledger.mcp.EndOfInput;
import dev.effectledger.mcp.embedded.CountingMcpServer;
import dev.effectledger.mcp.gateway.McpGateway;
import dev.effectledger.mcp.gateway.McpGatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code effectledger mcp}: the MCP gateway, and its helpers. */
@Command(
    name = "mcp",
    mixinStandardHelpOptions = true,
    description =
        "Serve the tools of MCP servers with the ledger in front of their write tools: over Streamable HTTP,"
            + " or over stdio with --stdio (docs/mcp.md).",
    subcommands = {McpCommand.Policies.class, McpCommand.Upstream.class})
final class McpCommand implements Callable<Integer> {

  @Option(names = "--config", description = "mcp.yaml (see config/mcp.yaml)")
  Path config;

  @Option(names = "--tools", description = "the ledger's tools.yaml; overrides the file's tools")
  Path tools;

  @Option(
      names = "--stdio",
      description =
          "serve over this process's stdin and stdout, as a desktop or CLI agent launches a local server")
  boolean stdio;

  @Override
  public Integer call() throws Exception {
    if (config == null) {
      throw new IllegalArgumentException(
          "give the gateway's configuration: effectledger mcp --config config/mcp.yaml");
    }
    McpGatewayConfig cfg = McpGatewayConfig.load(config);
    ToolPolicies policies = policies(cfg, tools);
    if (stdio) {
      // stdout carries the protocol: everything else the process prints goes to stderr
      PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true);
      System.setOut(System.err);
      // the agent closing stdin ends the session and this process, as local MCP servers do
      EndOfInput in = new EndOfInput(new FileInputStream(FileDescriptor.in));
      McpGateway gateway = McpGateway.startStdio(cfg, policies, in, protocol);
      new Lifecycle("mcp", gateway);
      System.err.println(
          "effectledger mcp: "
              + gateway.catalog().entries().size()
              + " tools over stdio (tenant "
              + cfg.tenant()
              + ")");
      in.await();
      System.exit(0); // the lifecycle's shutdown hook closes the gateway
      return 0;
    }
    McpGateway gateway = McpGateway.startHttp(cfg, policies);
    Lifecycle lifecycle = new Lifecycle("mcp", gateway);
    System.out.println(
        "effectledger mcp: "
            + gateway.catalog().entries().size()
            + " tools at "
            + gateway.url()
            + " (tenant "
            + cfg.tenant()
            + ")");
    lifecycle.awaitStop();
    return 0;
  }

  static ToolPolicies policies(McpGatewayConfig cfg, Path override) throws Exception {
    Path file = override != null ? override : cfg.tools();
    if (!Files.exists(file)) {
      throw new IllegalArgumentException(
          "No tools file at "
              + file
              + ": give the ledger's tools.yaml in mcp.yaml's tools: or with --tools");
    }
    return new ToolPolicyLoader().load(file);
  }

  /** {@code effectledger mcp policies}: policies for the write tools tools.yaml lacks. */
  @Command(
      name = "policies",
      mixinStandardHelpOptions = true,
      description =
          "Print tools.yaml policies for the upstreams' write tools the ledger's tools.yaml does not name,"
              + " each with the class its annotations give; review them and add them to tools.yaml.")
  static final class Policies implements Callable<Integer> {

    @Option(names = "--config", required = true, description = "mcp.yaml")
    Path config;

    @Option(names = "--tools", description = "the ledger's tools.yaml; overrides the file's tools")
    Path tools;

    @Override
    public Integer call() throws Exception {
      McpGatewayConfig cfg = McpGatewayConfig.load(config);
      try (McpGateway gateway = McpGateway.inspect(cfg, policies(cfg, tools))) {
        List<String> needLookup = new ArrayList<>();
        gateway
            .missingPolicies()
            .path("tools")
            .properties()
            .forEach(
                e -> {
                  if ("irreversible".equals(e.getValue().path("class").asText())) {
                    needLookup.add(e.getKey());
                  }
                });
        if (!needLookup.isEmpty()) {
          System.err.println(
              "effectledger mcp policies: "
                  + needLookup
                  + " are irreversible: give each settings.lookupTool (a tool of its server that"
                  + " finds an effect by key) or honoursKeys: true if the server dedups on the key,"
                  + " or an executor refuses to start with them (an effect that may have happened"
                  + " could never be resolved).");
        }
        System.out.print(
            YAMLMapper.builder()
                .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
                .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
                .build()
                .writeValueAsString(gateway.missingPolicies()));
      }
      return 0;
    }
  }

  /** {@code effectledger mcp upstream}: the counting MCP server, for trials and the demo. */
  @Command(
      name = "upstream",
      mixinStandardHelpOptions = true,
      description =
          "Run a sample MCP server (create_charge, find_charge, get_balance) that counts effects per key,"
              + " over Streamable HTTP at http://127.0.0.1:<port>/mcp, or over stdio with --stdio.")
  static final class Upstream implements Callable<Integer> {

    @Option(
        names = "--port",
        defaultValue = "8095",
        description = "port (default: ${DEFAULT-VALUE})")
    int port;

    @Option(names = "--honours-keys", description = "dedup create_charge on the key it is sent")
    boolean honoursKeys;

    @Option(names = "--stdio", description = "serve over stdin and stdout instead")
    boolean stdio;

    @Override
    public Integer call() throws Exception {
      if (stdio) {
        CountingMcpServer.main(honoursKeys ? new String[] {"--honours-keys"} : new String[0]);
        return 0;
      }
      CountingMcpServer server = CountingMcpServer.startHttp(port).honoursKeys(honoursKeys);
      Lifecycle lifecycle = new Lifecycle("mcp upstream", server);
      System.out.println("effectledger mcp upstream: " + server.url());
      lifecycle.awaitStop();
      return 0;
    }
  }
}
