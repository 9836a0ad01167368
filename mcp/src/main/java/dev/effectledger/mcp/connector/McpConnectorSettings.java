package dev.effectledger.mcp.connector;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.FieldReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One tool's {@code mcp} connector settings.
 *
 * <pre>
 * settings:
 *   url: http://127.0.0.1:8095/mcp     # the upstream over Streamable HTTP, or:
 *   command: [npx, -y, some-mcp-server] # the upstream over stdio: the command and its arguments
 *   env: {API_KEY: "..."}               # the stdio command's environment, added to the executor's
 *   headers: {Authorization: "Bearer ..."} # sent with every Streamable HTTP request
 *   tool: create_charge                 # the upstream's tool name; the policy's name when absent
 *   timeout: 30s                        # tools/call timeout; past it the outcome is ambiguous
 *   connectTimeout: 5s                  # connecting and initializing; past it, retryable
 *                                       # (default 5s over HTTP, 60s over stdio: see below)
 *   honoursKeys: false                  # true only if the upstream dedups on the key it is sent
 *   effectIdPointer: /id                # the effect id in the result's structuredContent
 *   lookupTool: find_charge             # called with {"key": effect key}: {"found": bool, "id"?}
 * </pre>
 *
 * <p>A stdio upstream's {@code connectTimeout} counts the start of its process: a JVM with a large
 * classpath, or {@code npx -y} fetching a package on its first run, takes seconds on an idle
 * machine and several times that on a busy one. With one 5 s default for both transports, a stdio
 * upstream that answered {@code initialize} after 5 s made the MCP gateway exit at startup (code 2,
 * "Could not list what upstream ... serves"); a CI run on a busy machine met exactly that (issue
 * 53). Hence 60 s over stdio, the same wait MCP hosts and the SDKs give a local server's
 * initialization; over HTTP the server is already running and 5 s stays.
 */
public record McpConnectorSettings(
    String url,
    List<String> command,
    Map<String, String> env,
    Map<String, String> headers,
    String tool,
    Duration timeout,
    Duration connectTimeout,
    boolean honoursKeys,
    String effectIdPointer,
    String lookupTool) {

  private static final List<String> FIELDS =
      List.of(
          "url",
          "command",
          "env",
          "headers",
          "tool",
          "timeout",
          "connectTimeout",
          "honoursKeys",
          "effectIdPointer",
          "lookupTool");

  /** The default {@code connectTimeout} of an upstream over Streamable HTTP. */
  public static final Duration HTTP_CONNECT = Duration.ofSeconds(5);

  /** The default {@code connectTimeout} of an upstream run over stdio: its process starts too. */
  public static final Duration STDIO_CONNECT = Duration.ofSeconds(60);

  public McpConnectorSettings {
    command = command == null ? null : List.copyOf(command);
    env = Map.copyOf(env);
    headers = Map.copyOf(headers);
  }

  /** Whether the upstream is a command run over stdio (else a Streamable HTTP URL). */
  public boolean stdio() {
    return command != null;
  }

  /** Reads and validates {@code node}; the exception lists every problem. */
  public static McpConnectorSettings from(String tool, JsonNode node) {
    FieldReader s = FieldReader.of("tools." + tool + ".settings", node);
    s.allowOnly(FIELDS);
    String url = s.text("url", null);
    List<String> command = null;
    JsonNode commandNode = s.raw("command");
    if (commandNode != null) {
      command = new ArrayList<>();
      if (commandNode.isTextual()) {
        command.add(commandNode.asText());
      } else if (commandNode.isArray() && !commandNode.isEmpty()) {
        for (JsonNode part : commandNode) {
          command.add(part.asText());
        }
      } else {
        s.problem("command", "give the command and its arguments, e.g. [npx, -y, my-mcp-server]");
      }
    }
    if ((url == null) == (commandNode == null)) {
      s.problem(
          "url",
          "give either url (an MCP server over Streamable HTTP) or command (one over stdio), not "
              + (url == null ? "neither" : "both"));
    }
    if (url != null && !url.startsWith("http://") && !url.startsWith("https://")) {
      s.problem("url", "'" + url + "' must start with http:// or https://");
    }
    String pointer = s.text("effectIdPointer", null);
    if (pointer != null && !pointer.startsWith("/")) {
      s.problem("effectIdPointer", "'" + pointer + "' is not a JSON pointer; start it with /");
    }
    McpConnectorSettings settings =
        new McpConnectorSettings(
            url,
            command,
            strings(s, "env"),
            strings(s, "headers"),
            s.text("tool", tool),
            s.duration("timeout", Duration.ofSeconds(30)),
            s.duration("connectTimeout", command != null ? STDIO_CONNECT : HTTP_CONNECT),
            s.bool("honoursKeys", false),
            pointer,
            s.text("lookupTool", null));
    s.check();
    return settings;
  }

  private static Map<String, String> strings(FieldReader s, String field) {
    Map<String, String> values = new LinkedHashMap<>();
    JsonNode node = s.object(field);
    if (node != null) {
      node.properties().forEach(e -> values.put(e.getKey(), e.getValue().asText()));
    }
    return values;
  }
}
