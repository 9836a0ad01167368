package dev.effectledger.langchain4j;

import dev.effectledger.client.AgentToolRouting;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.agent.tool.ToolSpecifications;
import dev.langchain4j.invocation.InvocationContext;
import dev.langchain4j.invocation.InvocationParameters;
import dev.langchain4j.service.tool.DefaultToolExecutor;
import dev.langchain4j.service.tool.ToolExecutionResult;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.langchain4j.service.tool.ToolProvider;
import dev.langchain4j.service.tool.ToolProviderResult;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * LangChain4j tools whose effects go through Effect Ledger: give {@code AiServices} the map (or the
 * {@link ToolProvider}) this builds, and every service method an {@link InvocationParameters} made
 * by {@link #step}:
 *
 * <pre>{@code
 * interface Assistant { String chat(@UserMessage String text, InvocationParameters step); }
 * Assistant assistant = AiServices.builder(Assistant.class).chatModel(model)
 *     .tools(LedgerTools.builder(client).tools(new Billing()).build().tools()).build();
 * assistant.chat(text, LedgerTools.step(new StepContext("acme", conversationId, requestId, "")));
 * }</pre>
 *
 * <p>The step travels in the invocation's parameters, which LangChain4j hands to every tool
 * execution of that call (on every round trip, on the pool's threads when tools run concurrently)
 * and never to the model; the model's tool-call id is not used, so the same action re-planned under
 * a new id, or the same call twice in one turn, is one key. A tool the applied policy classes
 * {@code read} runs its own method; every other tool is called through the ledger (its effect runs
 * in the ledger's executor, once; its method here is not called). A call that did not succeed
 * answers the model an error result saying what happened and what not to do.
 */
public final class LedgerTools {

  /** The {@link InvocationParameters} entry holding the step. */
  public static final String STEP = "effectledger.step";

  private final ToolCalls client;
  private final Map<ToolSpecification, ToolExecutor> tools;

  private LedgerTools(ToolCalls client, Map<ToolSpecification, ToolExecutor> tools) {
    this.client = client;
    this.tools = tools;
  }

  /** Invocation parameters holding {@code step}: pass them to every AiService method call. */
  public static InvocationParameters step(StepContext step) {
    return InvocationParameters.from(STEP, step);
  }

  /** The step of an invocation, or an error a developer can act on. */
  static StepContext stepOf(InvocationContext context, String tool) {
    Object step =
        context == null || context.invocationParameters() == null
            ? null
            : context.invocationParameters().get(STEP);
    if (step instanceof StepContext s) {
      return s;
    }
    throw new IllegalStateException(
        tool
            + " needs the run and step it belongs to: declare an InvocationParameters parameter on"
            + " the AiService method and pass LedgerTools.step(new StepContext(tenant, runId,"
            + " stepId, scope)), from your own state, never from the model");
  }

  public static Builder builder(ToolCalls client) {
    return new Builder(client);
  }

  /** For {@code AiServices.builder(...).tools(Map)}. */
  public Map<ToolSpecification, ToolExecutor> tools() {
    return tools;
  }

  /** For {@code AiServices.builder(...).toolProvider(...)}. */
  public ToolProvider toolProvider() {
    return request -> new ToolProviderResult(tools);
  }

  ToolCalls client() {
    return client;
  }

  public static final class Builder {
    private final ToolCalls client;
    private final Map<ToolSpecification, ToolExecutor> own = new LinkedHashMap<>();
    private final Map<String, Function<String, String>> scopes = new HashMap<>();
    private final Set<String> ledgered = new HashSet<>();
    private final Set<String> direct = new HashSet<>();
    private Duration attach = Duration.ofMinutes(2);
    private AgentToolRouting routing;

    private Builder(ToolCalls client) {
      this.client = client;
    }

    /** The {@link Tool} methods of {@code objects}, each under its tool name. */
    public Builder tools(Object... objects) {
      for (Object object : objects) {
        for (Method method : object.getClass().getDeclaredMethods()) {
          if (method.isAnnotationPresent(Tool.class)) {
            own.put(
                ToolSpecifications.toolSpecificationFrom(method),
                DefaultToolExecutor.builder()
                    .object(object)
                    .originalMethod(method)
                    .methodToInvoke(method)
                    .wrapToolArgumentsExceptions(true)
                    .propagateToolExecutionExceptions(true)
                    .build());
          }
        }
      }
      return this;
    }

    /** A tool given as its specification and executor (a read tool's, or null for a write's). */
    public Builder tool(ToolSpecification specification, ToolExecutor executor) {
      own.put(specification, executor);
      return this;
    }

    /** The business scope of {@code tool}'s calls, from their arguments' JSON. */
    public Builder scope(String tool, Function<String, String> fromArguments) {
      scopes.put(tool, fromArguments);
      return this;
    }

    /**
     * Tools that go through the ledger while no applied policy names them (as key rules given to
     * the client in code): the applied policy's class wins once one is applied. Without either, a
     * tool is not run: the Java client reads the classes from the applied policy ({@code
     * effectledger tools apply}); {@code client.awaitKeyRules(...)} waits until it has.
     */
    public Builder ledgered(String... tools) {
      ledgered.addAll(Set.of(tools));
      return this;
    }

    /**
     * Tools that are not the ledger's (an agent used as a tool): they run their own method while
     * the applied policy does not name them; once it does, its class decides.
     */
    public Builder direct(String... tools) {
      direct.addAll(Set.of(tools));
      return this;
    }

    /** How long a call still running is waited on before the model is told so; default 2 min. */
    public Builder attach(Duration wait) {
      this.attach = wait;
      return this;
    }

    public LedgerTools build() {
      routing = new AgentToolRouting(ledgered, direct, attach);
      Map<ToolSpecification, ToolExecutor> routed = new LinkedHashMap<>();
      own.forEach((spec, executor) -> routed.put(spec, new Routed(spec.name(), executor)));
      return new LedgerTools(client, Map.copyOf(routed));
    }

    /** One tool's executor: its own for read tools, the ledger for every other class. */
    private final class Routed implements ToolExecutor {
      private final String name;
      private final ToolExecutor own;

      Routed(String name, ToolExecutor own) {
        this.name = name;
        this.own = own;
      }

      @Override
      public ToolExecutionResult executeWithContext(
          ToolExecutionRequest request, InvocationContext context) {
        AgentToolRouting.Route route = routing.route(client, name);
        if (route == AgentToolRouting.Route.DIRECT) {
          if (own == null) {
            return error(name + " is a read tool without an executor of its own");
          }
          return own.executeWithContext(request, context);
        }
        if (route == AgentToolRouting.Route.UNKNOWN) {
          return error(
              AgentToolRouting.unknownText(
                  name, "LedgerTools.builder().ledgered(...) or .direct(...)"));
        }
        StepContext step = stepOf(context, name);
        Function<String, String> scope = scopes.get(name);
        if (scope != null) {
          step =
              new StepContext(
                  step.tenant(), step.runId(), step.stepId(), scope.apply(request.arguments()));
        }
        return answer(name, routing.call(client, ToolCall.of(step, name, request.arguments())));
      }

      @Override
      public String execute(ToolExecutionRequest request, Object memoryId) {
        throw new UnsupportedOperationException(
            name + " runs through AiServices, which passes the invocation's parameters");
      }
    }
  }

  /** What the model gets for a call's result. */
  static ToolExecutionResult answer(String tool, CallResult result) {
    if (result instanceof CallResult.Succeeded s) {
      return ToolExecutionResult.builder().resultText(s.resultJson()).build();
    }
    return error(dev.effectledger.client.ModelText.of(tool, result));
  }

  private static ToolExecutionResult error(String text) {
    return ToolExecutionResult.builder().isError(true).resultText(text).build();
  }
}
