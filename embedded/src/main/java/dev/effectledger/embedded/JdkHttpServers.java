package dev.effectledger.embedded;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.effectledger.schema.Problem;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * The one way this project creates a JDK {@link HttpServer}, with {@code TCP_NODELAY} on its
 * connections, and answers on it.
 *
 * <p>Two HTTP toolkits, for a stated reason: the processor's query API and console, the executor's
 * health endpoint and the development servers (downstream, Schema Registry) run on the JDK's
 * server, because they are a few read-mostly routes inside processes that must start with nothing
 * more than the JDK and Kafka; the gateways, which callers reach over networks with HTTP/2, TLS and
 * thousands of waiting calls, run on Jetty ({@code gateway.GatewayServer}). What the two share is
 * not the server but the wire: every error is a {@link Problem} and every query is read by {@code
 * QueryString}.
 *
 * <p>The JDK server writes a response's headers and its body in two writes. Without {@code
 * TCP_NODELAY}, Nagle's algorithm holds the second until the client acknowledges the first, and the
 * client delays that acknowledgement (40 ms on Linux): every request on a kept-alive connection
 * waits for it. On this project's machine a GET and a POST to {@link CountingDownstream} took a
 * median of 3.0 ms with the option and 88.1 ms without.
 *
 * <p>The JDK reads the option from the system property {@value #NODELAY} <em>once per JVM</em>,
 * when its first server of any kind is created; setting the property later changes nothing. So this
 * sets it before creating a server, which covers a JVM whose first server is ours (every process of
 * the application); a JVM that may create another JDK server first (a test suite, an application
 * embedding these classes) must set {@code -Dsun.net.httpserver.nodelay=true} at launch, as this
 * project's build does for every test JVM. Found as "one test class making the next six times
 * slower": a test's bare server, created first, left every later server in the JVM without the
 * option (docs/testing.md).
 */
public final class JdkHttpServers {

  /** The JDK's system property for {@code TCP_NODELAY} on its HTTP server's connections. */
  public static final String NODELAY = "sun.net.httpserver.nodelay";

  private JdkHttpServers() {}

  /** An unstarted server bound to {@code address}, as {@link HttpServer#create}. */
  public static HttpServer create(InetSocketAddress address, int backlog) throws IOException {
    System.setProperty(NODELAY, "true");
    return HttpServer.create(address, backlog);
  }

  /** Answers {@code body} with {@code status} and {@code contentType}, and ends the exchange. */
  public static void answer(HttpExchange exchange, int status, String contentType, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** Answers {@code problem} as {@code application/problem+json} with its status. */
  public static void answer(HttpExchange exchange, Problem problem) throws IOException {
    answer(exchange, problem.status(), Problem.MEDIA_TYPE, problem.json());
  }
}
