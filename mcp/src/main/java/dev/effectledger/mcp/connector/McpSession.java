package dev.effectledger.mcp.connector;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.mcp.McpMeta;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import java.net.URI;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One MCP client session with an upstream server, opened when first needed and opened again after a
 * transport failure ({@link #discard}; over stdio the process is started again). Thread-safe: the
 * SDK's client takes concurrent requests on one session.
 */
public final class McpSession implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(McpSession.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  static final McpJsonMapper MAPPER = new JacksonMcpJsonMapper(JSON);

  private final String name;
  private final McpConnectorSettings settings;
  private final Consumer<McpClient.SyncSpec> customizer;
  private final UnaryOperator<McpClientTransport> transports;
  private final Consumer<McpSyncClient> opened;
  private final Object lock = new Object();
  private McpSyncClient client; // guarded by lock
  private boolean closed; // guarded by lock

  /**
   * @param name what logs call the upstream
   * @param customizer adds to the client (notification consumers); called once per session
   * @param transports wraps each session's transport (to see what arrives in the order it arrives,
   *     before the SDK's client hands it on); called once per session
   * @param opened told of each session once it is initialized, on the thread that opened it and
   *     before that thread uses it: it must not block
   */
  public McpSession(
      String name,
      McpConnectorSettings settings,
      Consumer<McpClient.SyncSpec> customizer,
      UnaryOperator<McpClientTransport> transports,
      Consumer<McpSyncClient> opened) {
    this.name = name;
    this.settings = settings;
    this.customizer = customizer;
    this.transports = transports;
    this.opened = opened;
  }

  public McpSession(String name, McpConnectorSettings settings) {
    this(name, settings, spec -> {}, UnaryOperator.identity(), client -> {});
  }

  /**
   * The session, opened (connected and initialized) if there is none; throws when it cannot, and
   * once this is closed.
   */
  public McpSyncClient client() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("the MCP session with " + name + " is closed");
      }
      if (client == null) {
        McpClient.SyncSpec spec =
            McpClient.sync(transports.apply(transport()))
                .clientInfo(new McpSchema.Implementation("effectledger", "1"))
                .requestTimeout(settings.timeout())
                .initializationTimeout(settings.connectTimeout());
        customizer.accept(spec);
        McpSyncClient opened = spec.build();
        try {
          opened.initialize();
        } catch (RuntimeException e) {
          opened.close();
          throw e;
        }
        client = opened;
        this.opened.accept(opened);
      }
      return client;
    }
  }

  /** The session if one is open now, else null (none is opened). */
  public McpSyncClient current() {
    synchronized (lock) {
      return client;
    }
  }

  /**
   * Drops {@code broken} (if it is still the session): the next {@link #client} opens a new one.
   */
  public void discard(McpSyncClient broken) {
    synchronized (lock) {
      if (client != broken) {
        return;
      }
      client = null;
    }
    try {
      broken.close();
    } catch (RuntimeException e) {
      log.debug("Closing a broken MCP session with {}", name, e);
    }
  }

  /** The upstream as people name it: its URL or its command. */
  public String where() {
    return settings.stdio() ? "'" + String.join(" ", settings.command()) + "'" : settings.url();
  }

  private McpClientTransport transport() {
    if (settings.stdio()) {
      ServerParameters.Builder process =
          ServerParameters.builder(settings.command().get(0))
              .args(settings.command().subList(1, settings.command().size()));
      if (!settings.env().isEmpty()) {
        process.env(settings.env());
      }
      StdioClientTransport stdio = new StdioClientTransport(process.build(), MAPPER);
      stdio.setStdErrorHandler(line -> log.debug("{} (MCP server): {}", name, line));
      return stdio;
    }
    URI url = URI.create(settings.url());
    String base = url.getScheme() + "://" + url.getRawAuthority();
    return HttpClientStreamableHttpTransport.builder(base)
        .endpoint(url.getRawPath().isEmpty() ? "/" : url.getRawPath())
        .jsonMapper(MAPPER)
        .connectTimeout(settings.connectTimeout())
        .httpRequestCustomizer(
            (builder, method, endpoint, body, context) -> {
              settings.headers().forEach(builder::setHeader);
              String key = keyIn(body);
              if (key != null) {
                builder.setHeader(McpMeta.IDEMPOTENCY_KEY_HEADER, key);
              }
            })
        .build();
  }

  /** The effect key of a {@code tools/call} request body, for its Idempotency-Key header. */
  static String keyIn(String body) {
    if (body == null || !body.contains(McpMeta.IDEMPOTENCY_KEY)) {
      return null;
    }
    try {
      JsonNode message = JSON.readTree(body);
      if (!McpSchema.METHOD_TOOLS_CALL.equals(message.path("method").asText())) {
        return null;
      }
      JsonNode key = message.path("params").path("_meta").path(McpMeta.IDEMPOTENCY_KEY);
      return key.isTextual() ? key.asText() : null;
    } catch (JsonProcessingException e) {
      return null;
    }
  }

  /** Closes the session; it is not opened again. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      if (client != null) {
        client.close();
        client = null;
      }
    }
  }
}
