package dev.effectledger.gateway;

import dev.effectledger.schema.Problem;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.eclipse.jetty.alpn.server.ALPNServerConnectionFactory;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.http2.HTTP2Cipher;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.http2.server.HTTP2ServerConnectionFactory;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The gateway's Jetty server: HTTP/1.1 and HTTP/2 on one port (h2c by prior knowledge or upgrade
 * when plain; h2 or http/1.1 by ALPN with TLS), idle timeouts longer than any wait, a deep accept
 * queue, and errors Jetty answers itself (a request it cannot parse) as RFC 9457 problems.
 */
record GatewayServer(Server server, ServerConnector connector) {

  /**
   * Calls one HTTP/2 connection may have waiting at once (Jetty's default is 128); a client opens
   * another connection past it.
   */
  static final int MAX_STREAMS_PER_CONNECTION = 1024;

  /** A server for {@code config}'s address and TLS, routing to {@code routes}; not started. */
  static GatewayServer of(GatewayConfig config, Handler routes) {
    QueuedThreadPool threads = new QueuedThreadPool(64, 4);
    threads.setName("gateway-http");
    threads.setDaemon(true);
    Server server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendXPoweredBy(false);
    // A key in GET /v1/calls/{key} may contain an encoded '/' (%2F) or '%' (%25).
    http.setUriCompliance(
        UriCompliance.DEFAULT.with(
            "effectledger-keys",
            UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR,
            UriCompliance.Violation.AMBIGUOUS_PATH_ENCODING));
    // HTTP/2 beside HTTP/1.1: an HTTP/1.1 call that waits for its answer holds a connection, so a
    // caller with hundreds of calls waiting needs hundreds of connections; over HTTP/2 they are
    // streams on a few.
    HTTP2ServerConnectionFactory h2 =
        config.tls() == null
            ? new HTTP2CServerConnectionFactory(http)
            : new HTTP2ServerConnectionFactory(http);
    h2.setMaxConcurrentStreams(MAX_STREAMS_PER_CONNECTION);
    h2.setStreamIdleTimeout(config.maxWait().plusSeconds(30).toMillis());
    ServerConnector connector;
    if (config.tls() == null) {
      connector = new ServerConnector(server, new HttpConnectionFactory(http), h2);
    } else {
      SslContextFactory.Server tls = new SslContextFactory.Server();
      tls.setKeyStorePath(config.tls().keyStore().toString());
      tls.setKeyStorePassword(config.tls().password());
      tls.setKeyStoreType(config.tls().type());
      tls.setCipherComparator(HTTP2Cipher.COMPARATOR);
      ALPNServerConnectionFactory alpn =
          new ALPNServerConnectionFactory(h2.getProtocol(), HttpVersion.HTTP_1_1.asString());
      alpn.setDefaultProtocol(HttpVersion.HTTP_1_1.asString());
      connector =
          new ServerConnector(
              server,
              new SslConnectionFactory(tls, alpn.getProtocol()),
              alpn,
              h2,
              new HttpConnectionFactory(http));
    }
    // A burst of new connections (agents reconnecting after a deploy) outruns the acceptor; the
    // JDK's default backlog of 50 drops them (measured: 184 of 10,000 connections opened in bursts
    // of 500 were cut). The kernel caps it at net.core.somaxconn.
    connector.setAcceptQueueSize(1024);
    connector.setHost(config.host());
    connector.setPort(config.port());
    // Longer than any wait, so a waiting call is never cut by the connection's idle timeout.
    connector.setIdleTimeout(config.maxWait().plusSeconds(30).toMillis());
    server.addConnector(connector);
    server.setHandler(routes);
    server.setErrorHandler(new ProblemErrors());
    return new GatewayServer(server, connector);
  }

  /** What Jetty answers itself (a request it cannot parse), as an RFC 9457 problem. */
  private static final class ProblemErrors extends ErrorHandler {
    @Override
    protected void generateResponse(
        Request request,
        Response response,
        int code,
        String message,
        Throwable cause,
        Callback callback) {
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, Problem.MEDIA_TYPE);
      Problem p =
          Problem.of(
              code,
              code == 400 ? "bad-request" : "http-" + code,
              code == 400 ? "Bad request" : "HTTP " + code,
              message == null ? "the request could not be read" : message);
      response.write(true, ByteBuffer.wrap(p.json().getBytes(StandardCharsets.UTF_8)), callback);
    }
  }
}
