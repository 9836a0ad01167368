package dev.effectledger.mcp.connector;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.DownstreamSpan;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.mcp.McpMeta;
import dev.effectledger.schema.Traces;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpTransportSessionNotFoundException;
import io.opentelemetry.api.common.AttributeKey;
import java.net.ConnectException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/**
 * Performs a tool's effect as a {@code tools/call} on an upstream MCP server, over Streamable HTTP
 * or stdio, with the effect key in the request's {@code _meta} ({@value McpMeta#IDEMPOTENCY_KEY})
 * and, over HTTP, in an {@code Idempotency-Key} header; in a trace, the call is a CLIENT span
 * {@code tools/call {tool}} whose {@code traceparent} goes in {@code _meta} too (as OpenTelemetry's
 * MCP conventions carry it). One MCP session per connector, opened at the first call and opened
 * again after a transport failure (over stdio: the process started again).
 *
 * <p>Outcomes: no session (connection refused, the server not starting, initialization failing or
 * timing out, a session the server no longer knows) means the call was never sent: retryable. A
 * timeout or a lost connection after the call was sent: ambiguous (the effect may have happened). A
 * result with {@code isError: true}: failed, with the tool's content as the message. A JSON-RPC
 * error: failed (the server refused the request; sending it again gets the same answer). Anything
 * else: succeeded, with the whole {@code CallToolResult} as the result (what the MCP gateway
 * replays) and the effect id at {@code effectIdPointer} in its structured content.
 */
public final class McpConnector implements Connector {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, Object>> OBJECT = new TypeReference<>() {};
  private static final ObjectWriter CONTENT =
      JSON.writerFor(new TypeReference<List<McpSchema.Content>>() {});

  private final McpConnectorSettings settings;
  private final McpSession session;

  public McpConnector(String tool, McpConnectorSettings settings) {
    this.settings = settings;
    this.session = new McpSession(tool, settings);
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(settings.honoursKeys(), false, settings.lookupTool() != null);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    Map<String, Object> arguments;
    try {
      arguments = JSON.readValue(request.arguments(), OBJECT);
    } catch (JsonProcessingException e) {
      return new EffectOutcome.Failed(
          "ARGUMENTS_NOT_OBJECT", "an MCP tool takes a JSON object as its arguments");
    }
    McpSyncClient client;
    try {
      client = session();
    } catch (RuntimeException e) {
      return new EffectOutcome.Retryable(
          causedBy(e, ConnectException.class) ? "CONNECTION_REFUSED" : "MCP_UNAVAILABLE",
          "no session with the MCP server " + where() + " (" + reason(e) + "); nothing was sent");
    }
    // the upstream call as OpenTelemetry's MCP conventions name it; its traceparent goes in the
    // request's _meta, where MCP servers read it
    try (DownstreamSpan upstream = DownstreamSpan.start("tools/call", settings.tool(), request)) {
      if (upstream.span().isRecording()) {
        upstream
            .span()
            .setAttribute(MCP_METHOD, "tools/call")
            .setAttribute(Traces.OPERATION, "execute_tool")
            .setAttribute(Traces.TOOL, settings.tool());
      }
      Map<String, Object> meta = new HashMap<>();
      meta.put(McpMeta.IDEMPOTENCY_KEY, request.effectKey());
      String traceparent = upstream.traceparent();
      if (traceparent != null) {
        meta.put(Traces.TRACEPARENT, traceparent);
      }
      return upstream.ended(
          call(
              client,
              CallToolRequest.builder()
                  .name(settings.tool())
                  .arguments(arguments)
                  .meta(meta)
                  .build()));
    }
  }

  private static final AttributeKey<String> MCP_METHOD = AttributeKey.stringKey("mcp.method.name");

  private EffectOutcome call(McpSyncClient client, CallToolRequest call) {
    try {
      CallToolResult result = client.callTool(call);
      String resultJson = JSON.writeValueAsString(result);
      if (Boolean.TRUE.equals(result.isError())) {
        // written as List<Content>, so that each item keeps its "type"
        return new EffectOutcome.Failed("TOOL_ERROR", CONTENT.writeValueAsString(result.content()));
      }
      return new EffectOutcome.Succeeded(resultJson, effectId(result));
    } catch (McpError e) {
      if (e.getJsonRpcError() != null) {
        return new EffectOutcome.Failed(
            "MCP_PROTOCOL_ERROR",
            "the MCP server refused tools/call "
                + settings.tool()
                + ": JSON-RPC error "
                + e.getJsonRpcError().code()
                + " "
                + e.getJsonRpcError().message());
      }
      return lost(client, e);
    } catch (JsonProcessingException e) {
      return new EffectOutcome.Ambiguous(
          "RESULT_NOT_JSON", "the tool answered, but its result could not be kept: " + e);
    } catch (RuntimeException e) {
      return lost(client, e);
    }
  }

  private EffectOutcome lost(McpSyncClient client, RuntimeException e) {
    discard(client);
    if (causedBy(e, ConnectException.class)) {
      return new EffectOutcome.Retryable(
          "CONNECTION_REFUSED",
          "the MCP server " + where() + " refused the connection; nothing was sent");
    }
    if (causedBy(e, McpTransportSessionNotFoundException.class)) {
      return new EffectOutcome.Retryable(
          "SESSION_EXPIRED",
          "the MCP server " + where() + " no longer knows the session; the call was not run");
    }
    if (causedBy(e, TimeoutException.class)) {
      return new EffectOutcome.Ambiguous(
          "TIMEOUT",
          "no answer from the MCP server "
              + where()
              + " within "
              + settings.timeout()
              + " after sending the call");
    }
    return new EffectOutcome.Ambiguous(
        "CONNECTION_LOST",
        "lost the MCP server " + where() + " after sending the call (" + reason(e) + ")");
  }

  @Override
  public Lookup lookup(String effectKey) {
    if (settings.lookupTool() == null) {
      return Lookup.unsupported();
    }
    McpSyncClient client;
    try {
      client = session();
    } catch (RuntimeException e) {
      return Lookup.unavailable();
    }
    try {
      CallToolResult result =
          client.callTool(
              CallToolRequest.builder()
                  .name(settings.lookupTool())
                  .arguments(Map.of("key", effectKey))
                  .build());
      if (Boolean.TRUE.equals(result.isError()) || result.structuredContent() == null) {
        return Lookup.unavailable();
      }
      JsonNode found = JSON.valueToTree(result.structuredContent());
      if (!found.path("found").asBoolean(false)) {
        return Lookup.notFound();
      }
      String id =
          settings.effectIdPointer() == null
              ? found.path("id").asText(null)
              : found.at(settings.effectIdPointer()).asText(null);
      // kept as a CallToolResult, as an effect performed through execute is
      return Lookup.found(
          id,
          JSON.writeValueAsString(
              CallToolResult.builder()
                  .addTextContent(found.toString())
                  .structuredContent(result.structuredContent())
                  .isError(false)
                  .build()));
    } catch (JsonProcessingException e) {
      return Lookup.unavailable();
    } catch (McpError e) {
      return Lookup.unavailable();
    } catch (RuntimeException e) {
      discard(client);
      return Lookup.unavailable();
    }
  }

  private String effectId(CallToolResult result) {
    if (settings.effectIdPointer() == null || result.structuredContent() == null) {
      return null;
    }
    JsonNode id = JSON.valueToTree(result.structuredContent()).at(settings.effectIdPointer());
    return id.isMissingNode() || id.isNull() ? null : id.asText();
  }

  private String where() {
    return session.where();
  }

  private McpSyncClient session() {
    return session.client();
  }

  private void discard(McpSyncClient broken) {
    session.discard(broken);
  }

  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  private static String reason(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getClass().getSimpleName()
        + (root.getMessage() == null ? "" : ": " + root.getMessage());
  }

  @Override
  public void close() {
    session.close();
  }
}
