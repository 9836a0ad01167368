package dev.effectledger.app.agents;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.app.agents.EvalRequests.Request;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.langchain4j.LedgerTools;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.agent.tool.ToolSpecifications;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.invocation.InvocationContext;
import dev.langchain4j.invocation.InvocationParameters;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.Result;
import dev.langchain4j.service.tool.ToolExecutionResult;
import dev.langchain4j.service.tool.ToolExecutor;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BiFunction;

/**
 * The eval's LangChain4j agent: an AiService over a scripted {@link ChatModel}, LangChain4j's own
 * tool loop, tools run concurrently when one turn holds several. Subagents are AiServices called
 * from a tool of the main one, given the same invocation parameters (the request's step).
 */
public final class LangChain4jAgent implements EvalAgent {

  /** The agent, as an application declares it. */
  public interface Assistant {
    Result<String> chat(
        @dev.langchain4j.service.UserMessage String text, InvocationParameters step);
  }

  /** The application's tools: pay_invoice's effect runs in the ledger's executor, not here. */
  public static final class InvoiceTools {
    private final EvalRequests requests;

    InvoiceTools(EvalRequests requests) {
      this.requests = requests;
    }

    @Tool(name = "get_invoice", value = "Reads an invoice")
    public String getInvoice(@P(name = "invoice", value = "the invoice id") String invoice) {
      Request r = requests.of("invoice " + invoice + " ");
      return "{\"invoice\":\"" + invoice + "\",\"amount\":" + r.amount() + ",\"status\":\"open\"}";
    }

    @Tool(name = "pay_invoice", value = "Pays an invoice")
    public String payInvoice(
        @P(name = "invoice", value = "the invoice id") String invoice,
        @P(name = "amount", value = "the amount, in the currency's smallest unit") int amount,
        @P(name = "currency", value = "ISO 4217 code") String currency,
        @P(name = "memo", value = "a note for the payer") String memo) {
      throw new IllegalStateException("pay_invoice is the ledger's: its executor pays");
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final EvalRequests requests;
  private final Map<ToolSpecification, ToolExecutor> tools = new HashMap<>();

  /**
   * {@code client} null: without the ledger, pay_invoice posts to {@code paymentsUrl} itself, keyed
   * by the model's tool-call id.
   */
  public LangChain4jAgent(EvalRequests requests, ToolCalls client, String paymentsUrl) {
    this.requests = requests;
    InvoiceTools own = new InvoiceTools(requests);
    if (client != null) {
      tools.putAll(
          LedgerTools.builder(client)
              .tools(own)
              .scope("pay_invoice", args -> "invoice:" + readInvoice(args))
              .build()
              .tools());
    } else {
      for (ToolSpecification spec : ToolSpecifications.toolSpecificationsFrom(own)) {
        tools.put(
            spec,
            spec.name().equals("pay_invoice")
                ? new ToolExecutor() {
                  @Override
                  public String execute(ToolExecutionRequest request, Object memoryId) {
                    return EvalRequests.payDirectly(paymentsUrl, request.arguments(), request.id());
                  }
                }
                : (request, memoryId) -> own.getInvoice(readInvoice(request.arguments())));
      }
    }
    tools.put(agentSpec("billing_agent"), subagent(1));
    tools.put(agentSpec("collections_agent"), subagent(2));
  }

  private static String readInvoice(String arguments) {
    try {
      return JSON.readTree(arguments).path("invoice").asText();
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static ToolSpecification agentSpec(String name) {
    return ToolSpecification.builder()
        .name(name)
        .description("A subagent that handles the request")
        .parameters(
            dev.langchain4j.model.chat.request.json.JsonObjectSchema.builder()
                .addStringProperty("task")
                .required("task")
                .build())
        .build();
  }

  /** A subagent: its own AiService, given the invocation's parameters (the request's step). */
  private ToolExecutor subagent(int rendering) {
    return new ToolExecutor() {
      @Override
      public ToolExecutionResult executeWithContext(
          ToolExecutionRequest request, InvocationContext context) {
        Assistant sub =
            assistant((r, turn) -> message(r.subagentTurn(rendering, turn), "Paid it."));
        Request r = requests.of(readTask(request.arguments()));
        Result<String> done = sub.chat(r.userText(), context.invocationParameters());
        return ToolExecutionResult.builder().resultText(done.content()).build();
      }

      @Override
      public String execute(ToolExecutionRequest request, Object memoryId) {
        throw new UnsupportedOperationException("called with its invocation context");
      }
    };
  }

  private static String readTask(String arguments) {
    try {
      return JSON.readTree(arguments).path("task").asText() + " ";
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private Assistant assistant(BiFunction<Request, Integer, AiMessage> script) {
    return AiServices.builder(Assistant.class)
        .chatModel(new Scripted(requests, script))
        .tools(tools)
        .executeToolsConcurrently()
        .build();
  }

  /** Runs one request; throws with the tools' error texts when any call did not succeed. */
  @Override
  public void run(Request r, String tenant) {
    Result<String> result =
        assistant(LangChain4jAgent::main)
            .chat(
                r.userText(),
                LedgerTools.step(new StepContext(tenant, "conversation-" + r.id(), r.id(), "")));
    List<String> failed =
        result.toolExecutions().stream().filter(e -> e.hasFailed()).map(e -> e.result()).toList();
    if (!failed.isEmpty()) {
      throw new IllegalStateException(String.join("; ", failed));
    }
  }

  private static AiMessage main(Request r, int turn) {
    return message(r.mainTurn(turn), "Paid.");
  }

  private static AiMessage message(List<EvalRequests.Call> calls, String text) {
    return calls.isEmpty()
        ? AiMessage.from(text)
        : AiMessage.from(calls.stream().map(c -> request(c.tool(), c.arguments())).toList());
  }

  private static ToolExecutionRequest request(String tool, String arguments) {
    return ToolExecutionRequest.builder()
        .id("call_" + UUID.randomUUID())
        .name(tool)
        .arguments(arguments)
        .build();
  }

  /** A chat model playing a script for the request of the latest user message, by turn since. */
  static final class Scripted implements ChatModel {
    private final EvalRequests requests;
    private final BiFunction<Request, Integer, AiMessage> script;

    Scripted(EvalRequests requests, BiFunction<Request, Integer, AiMessage> script) {
      this.requests = requests;
      this.script = script;
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
      List<ChatMessage> messages = request.messages();
      int user = messages.size() - 1;
      while (user >= 0 && !(messages.get(user) instanceof UserMessage)) {
        user--;
      }
      Request r = requests.of(((UserMessage) messages.get(user)).singleText());
      int turn =
          (int)
              messages.subList(user + 1, messages.size()).stream()
                  .filter(m -> m instanceof AiMessage)
                  .count();
      return ChatResponse.builder().aiMessage(script.apply(r, turn)).build();
    }
  }
}
