package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.HttpHeaders;
import io.modelcontextprotocol.spec.McpSchema;
import jakarta.servlet.AsyncContext;
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
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers, before the MCP Java SDK's server sees them, the requests the gateway answers itself: a
 * call of a tool the gateway does not serve, refused with a JSON-RPC error ({@code -32602}) naming
 * it (the SDK's server answers that with a fixed "Unknown tool: invalid_tool_name"), and tasks (MCP
 * 2025-11-25: {@code tools/call} with {@code params.task}, {@code tasks/*}), answered by {@link
 * AgentTasks}. Over stdio it also reads what the agent says on {@code initialize} (its
 * capabilities, for the exchanges of its tasks) before passing it on.
 *
 * <p>Why here: the SDK (2.1.0) has no tasks. Its server reads a call's params into a {@code
 * CallToolRequest} that has no {@code task}, so it would answer a plain result, which a client
 * waiting for a task cannot read (the TypeScript SDK's client fails with "expected object, received
 * undefined" at {@code task}). Over Streamable HTTP a servlet filter answers the POST; over stdio
 * the request's line is answered on the output and not passed on.
 */
final class CallRefusals {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  static final int INVALID_PARAMS = -32602;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper SDK_JSON = new JacksonMcpJsonMapper(JSON);
  private static final List<byte[]> OURS =
      Stream.of("tools/call", "tasks/", "initialize")
          .map(w -> w.getBytes(StandardCharsets.UTF_8))
          .toList();

  private final Predicate<String> served;
  private final AgentTasks tasks;
  private final AgentSessions agents;

  /**
   * @param served whether the gateway serves a tool of that name now
   * @param tasks what answers tasks
   * @param agents told what the agent says on initialize over stdio
   */
  CallRefusals(Predicate<String> served, AgentTasks tasks, AgentSessions agents) {
    this.served = served;
    this.tasks = tasks;
    this.agents = agents;
  }

  /**
   * {@code message} read as a JSON-RPC request if it may be one answered here (it names a method of
   * those), else null: the rest is parsed by the SDK's server only (and what is not JSON is
   * answered there).
   */
  static JsonNode request(byte[] message) {
    if (OURS.stream().noneMatch(word -> mentions(message, word))) {
      return null;
    }
    try {
      JsonNode request = JSON.readTree(message);
      return request != null && request.isObject() && request.has("id") ? request : null;
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * The answer to {@code request} (see {@link #request}) when the gateway gives it here, of the
   * agent of {@code session} (null: stdio's); null when the SDK's server answers it. A task's
   * {@code tasks/result} waits for the task to end.
   */
  CompletableFuture<String> answer(JsonNode request, String session, McpTransportContext context) {
    String refused = refusal(request);
    if (refused != null) {
      return CompletableFuture.completedFuture(refused);
    }
    return AgentTasks.handles(request) ? tasks.answer(request, session, context) : null;
  }

  /** What an answer that could not be made says: an internal error naming why. */
  private static String failed(JsonNode request, Throwable why) {
    return AgentTasks.error(
        request.get("id"), McpSchema.ErrorCodes.INTERNAL_ERROR, "the gateway failed: " + why);
  }

  /** The JSON-RPC error answering {@code request} when it is a tool call to refuse, else null. */
  String refusal(JsonNode request) {
    if (request == null || !"tools/call".equals(request.path("method").asText())) {
      return null;
    }
    JsonNode params = request.path("params");
    String tool = params.path("name").asText();
    String why;
    if (params.path("name").isTextual() && !served.test(tool)) {
      why =
          "Unknown tool: "
              + tool
              + " (this gateway serves no tool of that name; tools/list lists those it serves)";
    } else {
      return null;
    }
    ObjectNode error = JSON.createObjectNode().put("jsonrpc", "2.0");
    error.set("id", request.get("id"));
    error
        .putObject("error")
        .put("code", INVALID_PARAMS)
        .put("message", why)
        .putObject("data")
        .put("tool", tool);
    return error.toString();
  }

  /** Whether {@code bytes} hold {@code word} anywhere. */
  static boolean mentions(byte[] bytes, byte[] word) {
    outer:
    for (int i = 0; i + word.length <= bytes.length; i++) {
      for (int j = 0; j < word.length; j++) {
        if (bytes[i + j] != word[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /**
   * The filter for the Streamable HTTP endpoint: answers the POSTs it answers, passes the rest on;
   * {@code context}: what a request tells a call (as the SDK's server is told it).
   */
  Filter servletFilter(Function<HttpServletRequest, McpTransportContext> context) {
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
        JsonNode parsed = request(body);
        CompletableFuture<String> answered =
            parsed == null
                ? null
                : answer(parsed, http.getHeader(HttpHeaders.MCP_SESSION_ID), context.apply(http));
        if (answered == null) {
          chain.doFilter(new Replayed(http, body), response);
        } else if (answered.isDone()) {
          write(out, answered.handle((text, e) -> e == null ? text : failed(parsed, e)).join());
        } else { // tasks/result: answered when the task ends, no thread held meanwhile
          AsyncContext async = http.startAsync();
          async.setTimeout(0);
          answered.whenComplete(
              (text, e) -> {
                try {
                  write(
                      (HttpServletResponse) async.getResponse(),
                      e == null ? text : failed(parsed, e));
                } catch (IOException | RuntimeException lost) {
                  log.debug("Could not answer a tasks/result (the agent left?)", lost);
                } finally {
                  async.complete();
                }
              });
        }
      }
    };
  }

  private static void write(HttpServletResponse out, String answer) throws IOException {
    out.setStatus(200);
    out.setContentType("application/json");
    out.setCharacterEncoding("UTF-8");
    out.getOutputStream().write(answer.getBytes(StandardCharsets.UTF_8));
  }

  /** A request whose body was read: served again from the bytes. */
  static final class Replayed extends HttpServletRequestWrapper {
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
   * Stdio: what the SDK's server reads ({@code in}) and writes ({@code out}). A refused request's
   * line is not passed on; its answer is written to the output as a whole line, never inside a line
   * the server is writing.
   */
  Stdio stdio(InputStream agentIn, OutputStream agentOut) {
    return new Stdio(agentIn, agentOut, this);
  }

  /** See {@link #stdio}. */
  static final class Stdio {
    final InputStream in;
    final OutputStream out;

    private Stdio(InputStream agentIn, OutputStream agentOut, CallRefusals refusals) {
      LineOutput output = new LineOutput(agentOut);
      this.out = output;
      this.in = new FilteredInput(new BufferedInputStream(agentIn), output, refusals);
    }
  }

  /** Lines from the agent, those answered here answered and left out. */
  private static final class FilteredInput extends InputStream {

    private final InputStream from;
    private final LineOutput answers;
    private final CallRefusals refusals;
    private byte[] line = new byte[0];
    private int at;

    FilteredInput(InputStream from, LineOutput answers, CallRefusals refusals) {
      this.from = from;
      this.answers = answers;
      this.refusals = refusals;
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
        JsonNode request = request(content);
        if (request != null && "initialize".equals(request.path("method").asText())) {
          try {
            refusals.agents.initializedStdio(
                SDK_JSON.convertValue(request.get("params"), McpSchema.InitializeRequest.class));
          } catch (RuntimeException e) { // the SDK's server answers what it cannot read
            log.debug("Could not read an agent's initialize", e);
          }
        } else if (request != null && refusals.refusal(request) != null) {
          answers.line(refusals.refusal(request).getBytes(StandardCharsets.UTF_8));
          continue;
        } else if (request != null && AgentTasks.handles(request)) {
          // answered when ready, not on the reading thread: tasks/result waits for its task
          CompletableFuture<String> answer;
          try {
            answer = refusals.tasks.answer(request, null, McpTransportContext.EMPTY);
          } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
          }
          answer.whenComplete(
              (text, e) -> {
                try {
                  answers.line(
                      (e == null ? text : failed(request, e)).getBytes(StandardCharsets.UTF_8));
                } catch (IOException lost) {
                  log.debug("Could not answer the agent over stdio", lost);
                }
              });
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
      int from = off;
      for (int i = off; i < off + len; i++) {
        if (b[i] == '\n') { // a line ends: out with what came before it, whole
          pending.write(b, from, i + 1 - from);
          pending.writeTo(to);
          pending.reset();
          from = i + 1;
        }
      }
      pending.write(b, from, off + len - from);
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
