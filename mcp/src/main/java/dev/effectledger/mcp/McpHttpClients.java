package dev.effectledger.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;

/**
 * An agent's side, for the demo and the tests: an MCP client session over Streamable HTTP, opened
 * and initialized, sending {@code headers} with every request.
 */
public final class McpHttpClients {

  private McpHttpClients() {}

  /** A session with the MCP server at {@code url} (e.g. {@code http://127.0.0.1:8097/mcp}). */
  public static McpSyncClient open(String url, Map<String, String> headers, Duration timeout) {
    return open(url, headers, timeout, spec -> {});
  }

  /** As {@link #open(String, Map, Duration)}, {@code customizer} adding notification consumers. */
  public static McpSyncClient open(
      String url,
      Map<String, String> headers,
      Duration timeout,
      Consumer<McpClient.SyncSpec> customizer) {
    return open(
        url,
        transport ->
            transport.httpRequestCustomizer(
                (builder, method, endpoint, body, context) -> headers.forEach(builder::setHeader)),
        timeout,
        customizer);
  }

  /**
   * A session with the MCP server at {@code url}, {@code transport} setting what the requests carry
   * (headers that change, an authorization error handler) and {@code customizer} the client.
   */
  public static McpSyncClient open(
      String url,
      Consumer<HttpClientStreamableHttpTransport.Builder> transport,
      Duration timeout,
      Consumer<McpClient.SyncSpec> customizer) {
    URI uri = URI.create(url);
    HttpClientStreamableHttpTransport.Builder builder =
        HttpClientStreamableHttpTransport.builder(uri.getScheme() + "://" + uri.getRawAuthority())
            .endpoint(uri.getRawPath())
            .jsonMapper(new JacksonMcpJsonMapper(new ObjectMapper()));
    transport.accept(builder);
    McpClient.SyncSpec spec = McpClient.sync(builder.build()).requestTimeout(timeout);
    customizer.accept(spec);
    McpSyncClient client = spec.build();
    try {
      client.initialize();
    } catch (RuntimeException e) {
      client.close();
      throw e;
    }
    return client;
  }
}
