package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Refuses a task-augmented tool call (MCP 2025-11-25 tasks: {@code tools/call} with {@code
 * params.task}) with a JSON-RPC error that says why, before the MCP Java SDK's server sees it.
 *
 * <p>Why here: the SDK (2.1.0) has no tasks. Its server reads a call's params into a {@code
 * CallToolRequest} that has no {@code task}, so the gateway never learns a task was asked for and
 * answers a plain result, which a client waiting for a task cannot read (the TypeScript SDK's
 * client fails with "expected object, received undefined" at {@code task}). The gateway does not
 * declare the {@code tasks} capability, so a client should not ask; one that does gets {@code
 * -32602} naming the reason. Over Streamable HTTP a servlet filter answers the POST; over stdio the
 * request's line is answered on the output and not passed on.
 */
final class TaskRefusal {

  static final int INVALID_PARAMS = -32602;
  static final String MESSAGE =
      "task-augmented tool calls are not supported: this gateway does not declare the tasks"
          + " capability (MCP 2025-11-25); call the tool without params.task";

  private static final ObjectMapper JSON = new ObjectMapper();

  private TaskRefusal() {}

  /**
   * The JSON-RPC error answering {@code message} when it is a task-augmented {@code tools/call}
   * request; null for anything else (and for what is not JSON: the SDK answers that).
   */
  static String refusal(byte[] message) {
    JsonNode request;
    try {
      request = JSON.readTree(message);
    } catch (IOException e) {
      return null;
    }
    if (request == null
        || !request.isObject()
        || !"tools/call".equals(request.path("method").asText())
        || !request.has("id")
        || !request.path("params").has("task")) {
      return null;
    }
    ObjectNode error = JSON.createObjectNode().put("jsonrpc", "2.0");
    error.set("id", request.get("id"));
    error
        .putObject("error")
        .put("code", INVALID_PARAMS)
        .put("message", MESSAGE)
        .putObject("data")
        .put("tool", request.path("params").path("name").asText());
    return error.toString();
  }

  /** The filter for the Streamable HTTP endpoint: answers a refused POST, passes the rest on. */
  static Filter servletFilter() {
    return new Filter() {
      @Override
      public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
          throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest http)
            || !"POST".equals(http.getMethod())
            || !(response instanceof HttpServletResponse out)) {
          chain.doFilter(request, response);
          return;
        }
        byte[] body = http.getInputStream().readAllBytes();
        String refused = refusal(body);
        if (refused != null) {
          out.setStatus(200);
          out.setContentType("application/json");
          out.setCharacterEncoding("UTF-8");
          out.getOutputStream().write(refused.getBytes(StandardCharsets.UTF_8));
          return;
        }
        chain.doFilter(new Replayed(http, body), response);
      }
    };
  }

  /** A request whose body was read: served again from the bytes. */
  private static final class Replayed extends HttpServletRequestWrapper {
    private final byte[] body;

    Replayed(HttpServletRequest request, byte[] body) {
      super(request);
      this.body = body;
    }

    @Override
    public ServletInputStream getInputStream() {
      ByteArrayInputStream in = new ByteArrayInputStream(body);
      return new ServletInputStream() {
        @Override
        public int read() {
          return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) {
          return in.read(b, off, len);
        }

        @Override
        public boolean isFinished() {
          return in.available() == 0;
        }

        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setReadListener(ReadListener listener) {
          throw new UnsupportedOperationException("the body was read already");
        }
      };
    }

    @Override
    public BufferedReader getReader() {
      return new BufferedReader(
          new InputStreamReader(new ByteArrayInputStream(body), StandardCharsets.UTF_8));
    }
  }

  /**
   * Stdio: what the SDK's server reads ({@link #in}) and writes ({@link #out}). A refused request's
   * line is not passed on; its answer is written to the output as a whole line, never inside a line
   * the server is writing.
   */
  static final class Stdio {
    private final LineOutput output;
    final InputStream in;
    final OutputStream out;

    Stdio(InputStream agentIn, OutputStream agentOut) {
      this.output = new LineOutput(agentOut);
      this.out = output;
      this.in = new FilteredInput(agentIn, output);
    }
  }

  /** Lines from the agent, the refused ones answered and left out. */
  private static final class FilteredInput extends InputStream {
    private final InputStream from;
    private final LineOutput answers;
    private byte[] line = new byte[0];
    private int at;

    FilteredInput(InputStream from, LineOutput answers) {
      this.from = from;
      this.answers = answers;
    }

    /** Reads the next line to pass on; false at the end of input. */
    private boolean next() throws IOException {
      while (true) {
        ByteArrayOutputStream read = new ByteArrayOutputStream();
        int b;
        while ((b = from.read()) != -1 && b != '\n') {
          read.write(b);
        }
        if (b == -1 && read.size() == 0) {
          return false;
        }
        byte[] content = read.toByteArray();
        String refused = refusal(content);
        if (refused != null) {
          answers.line(refused.getBytes(StandardCharsets.UTF_8));
          continue;
        }
        read.write('\n');
        line = read.toByteArray();
        at = 0;
        return true;
      }
    }

    @Override
    public int read() throws IOException {
      if (at >= line.length && !next()) {
        return -1;
      }
      return line[at++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (at >= line.length && !next()) {
        return -1;
      }
      int n = Math.min(len, line.length - at);
      System.arraycopy(line, at, b, off, n);
      at += n;
      return n;
    }

    @Override
    public void close() throws IOException {
      from.close();
    }
  }

  /** Writes whole lines only: the server's, gathered up to their newline, and refusals. */
  private static final class LineOutput extends OutputStream {
    private final OutputStream to;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    LineOutput(OutputStream to) {
      this.to = to;
    }

    synchronized void line(byte[] content) throws IOException {
      to.write(content);
      to.write('\n');
      to.flush();
    }

    @Override
    public synchronized void write(int b) throws IOException {
      pending.write(b);
      if (b == '\n') {
        pending.writeTo(to);
        pending.reset();
      }
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      for (int i = off; i < off + len; i++) {
        write(b[i]);
      }
    }

    @Override
    public synchronized void flush() throws IOException {
      to.flush();
    }

    @Override
    public synchronized void close() throws IOException {
      pending.writeTo(to);
      pending.reset();
      to.close();
    }
  }
}
