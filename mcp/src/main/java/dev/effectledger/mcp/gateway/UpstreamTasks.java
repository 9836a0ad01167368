package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * An upstream session's transport, with what the MCP Java SDK's client (2.1.0) cannot do: call a
 * tool as a task (MCP 2025-11-25) and read each listed tool's {@code execution.taskSupport}.
 *
 * <p>A tool the upstream runs only as a task ({@code taskSupport: required}) is called with {@code
 * params.task} and its result read with {@code tasks/result}, which waits for the task's end (and
 * over it the upstream sends the requests it queued for the client: the SDK's client answers them,
 * so they reach the agent as any other). These requests go out on the wrapped transport with ids of
 * their own, and their responses are taken off the inbound stream before the SDK's client session
 * sees them (it would not know their ids). The raw {@code tools/list} results are read on the way
 * in for each tool's task support, which the SDK's {@code Tool} has no field for.
 */
final class UpstreamTasks extends ForwardingClientTransport {

  private static final TypeRef<CallToolResult> RESULT = new TypeRef<>() {};
  private static final TypeRef<Map<String, Object>> MAP = new TypeRef<>() {};
  private static final AtomicLong IDS = new AtomicLong();

  private final Consumer<Map<String, String>> taskSupport;
  private final Map<Object, CompletableFuture<McpSchema.JSONRPCResponse>> pending =
      new ConcurrentHashMap<>();

  /**
   * @param taskSupport told, for each {@code tools/list} page the upstream answers, each tool's
   *     {@code execution.taskSupport} (tools without one: none)
   */
  UpstreamTasks(McpClientTransport transport, Consumer<Map<String, String>> taskSupport) {
    super(transport);
    this.taskSupport = taskSupport;
  }

  @Override
  public Mono<Void> connect(
      Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
    return transport.connect(
        inbound -> handler.apply(inbound.doOnNext(this::listed).filter(m -> !answered(m))));
  }

  /** A response to one of this wrapper's own requests: completed here, not passed on. */
  private boolean answered(McpSchema.JSONRPCMessage message) {
    if (message instanceof McpSchema.JSONRPCResponse response) {
      CompletableFuture<McpSchema.JSONRPCResponse> waiting = pending.remove(response.id());
      if (waiting != null) {
        waiting.complete(response);
        return true;
      }
    }
    return false;
  }

  /** A tools/list page: each tool's task support, read off the raw result. */
  private void listed(McpSchema.JSONRPCMessage message) {
    if (!(message instanceof McpSchema.JSONRPCResponse response)
        || !(response.result() instanceof Map<?, ?> result)
        || !(result.get("tools") instanceof List<?> tools)) {
      return;
    }
    Map<String, String> support = new LinkedHashMap<>();
    for (Object tool : tools) {
      if (tool instanceof Map<?, ?> listed && listed.get("name") instanceof String name) {
        Object execution = listed.get("execution");
        Object mode = execution instanceof Map<?, ?> e ? e.get("taskSupport") : null;
        support.put(name, mode instanceof String s ? s : "forbidden");
      }
    }
    taskSupport.accept(support);
  }

  /**
   * {@code request} called as a task on the upstream and its result, waited for up to {@code
   * timeout} in all; the upstream's JSON-RPC error as an {@link McpError}.
   */
  CallToolResult callAsTask(CallToolRequest request, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("name", request.name());
    params.put("arguments", request.arguments() == null ? Map.of() : request.arguments());
    if (request.meta() != null && !request.meta().isEmpty()) {
      params.put("_meta", request.meta());
    }
    params.put("task", Map.of("ttl", timeout.toMillis()));
    Map<String, Object> created =
        transport.unmarshalFrom(send(McpSchema.METHOD_TOOLS_CALL, params, deadline), MAP);
    Object task = created.get("task");
    Object taskId = task instanceof Map<?, ?> t ? t.get("taskId") : null;
    if (taskId == null) {
      throw McpError.builder(McpSchema.ErrorCodes.INTERNAL_ERROR)
          .message("the upstream answered a task-augmented call without a task")
          .build();
    }
    Object result = send("tasks/result", Map.of("taskId", taskId), deadline);
    return transport.unmarshalFrom(result, RESULT);
  }

  /** Sends a request of this wrapper's own and waits for its result until {@code deadline}. */
  private Object send(String method, Object params, long deadline) {
    String id = "effectledger-task-" + IDS.incrementAndGet();
    CompletableFuture<McpSchema.JSONRPCResponse> answer = new CompletableFuture<>();
    pending.put(id, answer);
    try {
      transport
          .sendMessage(new McpSchema.JSONRPCRequest(McpSchema.JSONRPC_VERSION, method, id, params))
          .block(Duration.ofNanos(Math.max(deadline - System.nanoTime(), 1)));
      McpSchema.JSONRPCResponse response =
          answer.get(Math.max(deadline - System.nanoTime(), 1), TimeUnit.NANOSECONDS);
      if (response.error() != null) {
        throw new McpError(response.error());
      }
      return response.result();
    } catch (TimeoutException e) {
      throw new IllegalStateException("the upstream did not answer " + method + " in time", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for " + method, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(method + " failed: " + e.getCause(), e.getCause());
    } finally {
      pending.remove(id);
    }
  }
}
