package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tool calls as tasks (MCP 2025-11-25, experimental), served by the gateway itself: a {@code
 * tools/call} with {@code params.task} is answered at once with the task it created, and the call
 * runs on: a read on the agent's own session with its upstream (its requests and progress reach the
 * agent on the stream it keeps open), a write through the ledger, its answer waited for as long as
 * the task lives (not the gateway's {@code wait}), so that its task ends with the ledger's answer
 * however long the effect takes. {@code tasks/get}, {@code tasks/result} (waits for the end),
 * {@code tasks/list} and {@code tasks/cancel} answer for the agent's own tasks (its session's).
 *
 * <p>Why hand-written: the MCP Java SDK 2.1.0 has no tasks (no {@code task} on a call, no {@code
 * tasks/*}, no {@code execution} on a tool), and its server would answer a task-augmented call as a
 * plain one. So these requests are answered before the SDK's server sees them ({@link
 * CallRefusals}), and what the agent is told of tasks is added to what the SDK writes ({@link
 * TaskWire}). The gateway does not call its upstreams with tasks (the SDK's client cannot): a tool
 * an upstream runs only as a task is not served.
 *
 * <p>A task's status: {@code working} ({@code input_required} while an upstream's request of its
 * call waits for the agent), then {@code completed} with the call's result, or {@code failed} with
 * the tool's error result or the JSON-RPC error the call got, or {@code cancelled} (a read, whose
 * call runs on and is not kept; a write cannot be cancelled once published). A task is kept for its
 * {@code ttl} from its creation (asked by the agent, at most 24 h; 1 h if not asked).
 */
final class AgentTasks implements AutoCloseable {

  /** What runs a task's call. */
  interface Calls {
    /**
     * The call's answer on {@code exchange}; for a write, the ledger's answer waited for as long as
     * {@code wait} (the task's life). Throws {@link McpError} as the call would.
     */
    CallToolResult call(
        String tool, McpSyncServerExchange exchange, CallToolRequest request, Duration wait);

    /** Whether {@code tool} is a write (its task cannot be cancelled once published). */
    boolean writes(String tool);
  }

  static final Duration DEFAULT_TTL = Duration.ofHours(1);
  static final Duration MAX_TTL = Duration.ofHours(24);
  static final long POLL_INTERVAL_MS = 1000;

  /** The most tasks running at once on one gateway; over it a task-augmented call is refused. */
  static final int MAX_WORKING = 256;

  /** The most tasks running at once for one agent (its session). */
  static final int MAX_WORKING_PER_AGENT = 64;

  static final String RELATED_TASK = "io.modelcontextprotocol/related-task";

  /** In a task's exchange's transport context: the task's id. */
  static final String TASK_CONTEXT = "effectledger-task";

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {};

  /** One task of one agent. */
  private static final class Task {
    final String id = UUID.randomUUID().toString();
    final String session;
    final String tool;
    final boolean write;
    final Instant created = Instant.now();
    final long ttlMillis;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    // guarded by this
    private String status = "working";
    private String message;
    private Instant updated = created;
    private CallToolResult result;
    private McpSchema.JSONRPCResponse.JSONRPCError error;

    Task(String session, String tool, boolean write, long ttlMillis) {
      this.session = session;
      this.tool = tool;
      this.write = write;
      this.ttlMillis = ttlMillis;
    }

    synchronized boolean end(
        String status,
        String message,
        CallToolResult result,
        McpSchema.JSONRPCResponse.JSONRPCError error) {
      if (terminal()) {
        return false; // cancelled first: what came after is not kept
      }
      this.status = status;
      this.message = message;
      this.result = result;
      this.error = error;
      this.updated = Instant.now();
      done.complete(null);
      return true;
    }

    synchronized ObjectNode json() {
      ObjectNode task = JSON.createObjectNode();
      task.put("taskId", id);
      task.put("status", status);
      if (message != null) {
        task.put("statusMessage", message);
      }
      task.put("createdAt", created.toString());
      task.put("lastUpdatedAt", updated.toString());
      task.put("ttl", ttlMillis);
      task.put("pollInterval", POLL_INTERVAL_MS);
      return task;
    }

    synchronized boolean terminal() {
      return !"working".equals(status) && !"input_required".equals(status);
    }

    /** While an upstream's request of this task's call waits for the agent: input_required. */
    synchronized void waitingForInput(boolean waiting) {
      if (!terminal()) {
        status = waiting ? "input_required" : "working";
        updated = Instant.now();
      }
    }

    synchronized String status() {
      return status;
    }

    synchronized CallToolResult result() {
      return result;
    }

    synchronized McpSchema.JSONRPCResponse.JSONRPCError error() {
      return error;
    }

    boolean expired(Instant now) {
      return now.isAfter(created.plusMillis(ttlMillis));
    }
  }

  private final AgentSessions agents;
  private final Calls calls;
  private final Map<String, Task> byId = new ConcurrentHashMap<>();
  private final ExecutorService workers =
      Executors.newCachedThreadPool(GatewayThreads.daemons("mcp-gateway-task"));
  private final ScheduledExecutorService sweeper =
      Executors.newSingleThreadScheduledExecutor(GatewayThreads.daemons("mcp-gateway-task-expiry"));

  AgentTasks(AgentSessions agents, Calls calls) {
    this.agents = agents;
    this.calls = calls;
    sweeper.scheduleWithFixedDelay(
        () -> {
          try {
            forgetExpired();
          } catch (RuntimeException e) { // a sweep that threw must not end the sweeps
            log.warn("Forgetting expired tasks", e);
          }
        },
        1,
        1,
        TimeUnit.MINUTES);
  }

  /** An upstream's request made during task {@code taskId}'s call waits for the agent, or not. */
  void waitingForInput(String taskId, boolean waiting) {
    Task task = byId.get(taskId);
    if (task != null) {
      task.waitingForInput(waiting);
    }
  }

  /** Whether the gateway answers {@code request} here: a task-augmented call, or tasks/*. */
  static boolean handles(JsonNode request) {
    String method = request.path("method").asText();
    return request.has("id")
        && (method.startsWith("tasks/")
            || ("tools/call".equals(method) && request.path("params").has("task")));
  }

  /**
   * The JSON-RPC response to {@code request} (one {@link #handles} took) of the agent of {@code
   * session} (null: the stdio session), sent with {@code context} (its run id header, which a
   * task's write call reads as a plain call does); {@code tasks/result} waits for its task to end.
   */
  CompletableFuture<String> answer(JsonNode request, String session, McpTransportContext context) {
    JsonNode id = request.get("id");
    JsonNode params = request.path("params");
    String method = request.path("method").asText();
    String owner = session == null ? "stdio" : session;
    try {
      if ("tasks/result".equals(method)) {
        return taskResult(id, task(params, owner));
      }
      return CompletableFuture.completedFuture(
          switch (method) {
            case "tools/call" -> start(id, params, session, owner, context);
            case "tasks/get" -> result(id, task(params, owner).json());
            case "tasks/list" -> list(id, owner);
            case "tasks/cancel" -> cancel(id, task(params, owner));
            default ->
                error(id, McpSchema.ErrorCodes.METHOD_NOT_FOUND, "Method not found: " + method);
          });
    } catch (McpError e) {
      McpSchema.JSONRPCResponse.JSONRPCError error = e.getJsonRpcError();
      return CompletableFuture.completedFuture(error(id, error.code(), error.message()));
    }
  }

  private String start(
      JsonNode id, JsonNode params, String session, String owner, McpTransportContext context) {
    String tool = params.path("name").asText();
    if (agents.exchange(session, context) == null) {
      throw McpError.builder(McpSchema.ErrorCodes.INVALID_REQUEST)
          .message("the gateway does not know this session: initialize first")
          .build();
    }
    JsonNode asked = params.path("task").path("ttl");
    long ttl =
        asked.canConvertToLong() && asked.asLong() > 0
            ? Math.min(asked.asLong(), MAX_TTL.toMillis())
            : DEFAULT_TTL.toMillis();
    Map<String, Object> arguments =
        params.path("arguments").isObject()
            ? JSON.convertValue(params.get("arguments"), MAP)
            : Map.of();
    Map<String, Object> meta =
        params.path("_meta").isObject() ? JSON.convertValue(params.get("_meta"), MAP) : Map.of();
    CallToolRequest call = new CallToolRequest(tool, arguments, meta);
    Task task = new Task(owner, tool, calls.writes(tool), ttl);
    synchronized (this) { // counted and added at once: no two calls take one free place
      long working = byId.values().stream().filter(t -> !t.terminal()).count();
      long mine =
          byId.values().stream().filter(t -> !t.terminal() && t.session.equals(owner)).count();
      if (working >= MAX_WORKING || mine >= MAX_WORKING_PER_AGENT) {
        throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
            .message(
                (mine >= MAX_WORKING_PER_AGENT
                        ? "this agent runs " + MAX_WORKING_PER_AGENT + " tasks already"
                        : "the gateway runs " + MAX_WORKING + " tasks already")
                    + "; call again once one has ended, or without params.task")
            .build();
      }
      byId.put(task.id, task);
    }
    // the task's exchange: the agent's session, the request's run header, and the task's id (for
    // the requests its call makes of the agent)
    Map<String, Object> taskContext = new LinkedHashMap<>();
    for (String carried : List.of(WriteCalls.RUN_HEADER, WriteCalls.TENANT)) {
      Object value = context.get(carried);
      if (value != null) {
        taskContext.put(carried, value);
      }
    }
    taskContext.put(TASK_CONTEXT, task.id);
    McpSyncServerExchange exchange =
        agents.exchange(session, McpTransportContext.create(taskContext));
    workers.execute(
        () -> {
          try {
            CallToolResult result = calls.call(tool, exchange, call, Duration.ofMillis(ttl));
            // a tool error is a failed task, its result (the tool's own error) kept
            boolean failed = Boolean.TRUE.equals(result.isError());
            task.end(
                failed ? "failed" : "completed",
                failed ? "the tool answered an error: tasks/result gives it" : null,
                related(result, task.id),
                null);
          } catch (McpError e) {
            task.end("failed", e.getJsonRpcError().message(), null, e.getJsonRpcError());
          } catch (RuntimeException e) {
            log.warn("A task's call of {} failed", tool, e);
            task.end(
                "failed",
                String.valueOf(e.getMessage()),
                null,
                new McpSchema.JSONRPCResponse.JSONRPCError(
                    McpSchema.ErrorCodes.INTERNAL_ERROR, String.valueOf(e.getMessage()), null));
          }
        });
    ObjectNode created = JSON.createObjectNode();
    created.set("task", task.json());
    return result(id, created);
  }

  /** {@code result}, its {@code _meta} naming the task it is the result of. */
  private static CallToolResult related(CallToolResult result, String taskId) {
    Map<String, Object> meta =
        new LinkedHashMap<>(result.meta() == null ? Map.of() : result.meta());
    meta.put(RELATED_TASK, Map.of("taskId", taskId));
    return new CallToolResult(result.content(), result.isError(), result.structuredContent(), meta);
  }

  private Task task(JsonNode params, String owner) {
    String taskId = params.path("taskId").asText();
    Task task = byId.get(taskId);
    if (task == null || !task.session.equals(owner)) { // another agent's task is none of its own
      throw McpError.builder(McpSchema.ErrorCodes.INVALID_PARAMS)
          .message("Failed to retrieve task: Task not found (" + taskId + ")")
          .build();
    }
    return task;
  }

  /**
   * The answer to {@code tasks/result}: once the task ends (no thread waits meanwhile), or an error
   * when it outlives its ttl working.
   */
  private CompletableFuture<String> taskResult(JsonNode id, Task task) {
    long left = task.created.plusMillis(task.ttlMillis).toEpochMilli() - System.currentTimeMillis();
    return task.done
        .copy()
        .orTimeout(Math.max(left, 0), TimeUnit.MILLISECONDS)
        .handle(
            (done, failure) ->
                failure != null
                    ? error(
                        id,
                        McpSchema.ErrorCodes.INTERNAL_ERROR,
                        "task " + task.id + " outlived its ttl working")
                    : ended(id, task));
  }

  private String ended(JsonNode id, Task task) {
    CallToolResult result = task.result();
    if (result != null) {
      return result(id, JSON.valueToTree(result));
    }
    McpSchema.JSONRPCResponse.JSONRPCError error = task.error();
    if (error != null) {
      return error(id, error.code(), error.message());
    }
    return error(
        id, McpSchema.ErrorCodes.INVALID_PARAMS, "task " + task.id + " was " + task.status());
  }

  private String list(JsonNode id, String owner) {
    List<Task> mine = new ArrayList<>();
    byId.values().stream()
        .filter(t -> t.session.equals(owner))
        .sorted(Comparator.comparing((Task t) -> t.created))
        .forEach(mine::add);
    ObjectNode listed = JSON.createObjectNode();
    mine.forEach(t -> listed.withArray("tasks").add(t.json()));
    if (mine.isEmpty()) {
      listed.putArray("tasks");
    }
    return result(id, listed);
  }

  private String cancel(JsonNode id, Task task) {
    if (task.terminal()) {
      return error(
          id,
          McpSchema.ErrorCodes.INVALID_PARAMS,
          "Cannot cancel task " + task.id + ": it is already " + task.status());
    }
    if (task.write) {
      return error(
          id,
          McpSchema.ErrorCodes.INVALID_PARAMS,
          "Cannot cancel task "
              + task.id
              + ": a write through the ledger cannot be taken back once published (it takes"
              + " effect at most once); wait for its result with tasks/result");
    }
    // The call is not interrupted: that would break the agent's session with the upstream under
    // its other calls. It runs to its end, and what it answers is not kept.
    if (!task.end("cancelled", "cancelled by the agent", null, null)) {
      return error(
          id,
          McpSchema.ErrorCodes.INVALID_PARAMS,
          "Cannot cancel task " + task.id + ": it is already " + task.status());
    }
    return result(id, task.json());
  }

  private void forgetExpired() {
    Instant now = Instant.now();
    byId.values().removeIf(t -> t.terminal() && t.expired(now));
  }

  private static String result(JsonNode id, JsonNode result) {
    ObjectNode response = JSON.createObjectNode().put("jsonrpc", "2.0");
    response.set("id", id);
    response.set("result", result);
    return response.toString();
  }

  static String error(JsonNode id, int code, String message) {
    ObjectNode response = JSON.createObjectNode().put("jsonrpc", "2.0");
    response.set("id", id);
    response.putObject("error").put("code", code).put("message", message);
    return response.toString();
  }

  @Override
  public void close() {
    sweeper.shutdownNow();
    workers.shutdownNow();
  }
}
