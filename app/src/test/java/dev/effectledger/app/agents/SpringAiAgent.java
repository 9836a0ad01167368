package dev.effectledger.app.agents;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.app.agents.EvalRequests.Request;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCalls;
import dev.effectledger.springai.LedgerToolContext;
import dev.effectledger.springai.ToolRouting;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.model.ToolContext;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The eval's Spring AI agent: a Spring Boot application (Effect Ledger's auto-configuration on its
 * class path) whose ChatClient, built by Boot, runs a scripted {@link ChatModel} and Spring AI's
 * own tool loop over the application's {@code @Tool} bean. Subagents are ChatClients called from a
 * tool of the main one, given the same tool context (the request's step).
 *
 * <p>Without the ledger, the same application runs with Effect Ledger's auto-configuration off
 * ({@code effectledger.enabled=false}): pay_invoice's own method posts to the payment API under a
 * key of its own per invocation (Spring AI never hands a tool the model's call id), retried on a
 * timeout or 5xx.
 */
public final class SpringAiAgent implements EvalAgent {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** The application's tools. pay_invoice's body runs only without the ledger. */
  public static final class InvoiceTools {
    private final EvalRequests requests;
    private final String paymentsUrl;
    private ChatClient.Builder clients;

    InvoiceTools(EvalRequests requests, String paymentsUrl) {
      this.requests = requests;
      this.paymentsUrl = paymentsUrl;
    }

    @Tool(name = "get_invoice", description = "Reads an invoice")
    public String getInvoice(@ToolParam(description = "the invoice id") String invoice) {
      Request r = requests.of("invoice " + invoice + " ");
      return "{\"invoice\":\"" + invoice + "\",\"amount\":" + r.amount() + ",\"status\":\"open\"}";
    }

    @Tool(name = "pay_invoice", description = "Pays an invoice")
    public String payInvoice(
        @ToolParam(description = "the invoice id") String invoice,
        @ToolParam(description = "the amount") int amount,
        @ToolParam(description = "ISO 4217 code") String currency,
        @ToolParam(description = "a note for the payer") String memo) {
      String args =
          JSON.createObjectNode()
              .put("invoice", invoice)
              .put("amount", amount)
              .put("currency", currency)
              .put("memo", memo)
              .toString();
      return EvalRequests.payDirectly(paymentsUrl, args, "tool-" + UUID.randomUUID());
    }

    @Tool(name = "billing_agent", description = "A subagent that handles the request")
    public String billingAgent(
        @ToolParam(description = "the task") String task, ToolContext context) {
      return subagent(task, context, 1);
    }

    @Tool(name = "collections_agent", description = "A subagent that handles the request")
    public String collectionsAgent(
        @ToolParam(description = "the task") String task, ToolContext context) {
      return subagent(task, context, 2);
    }

    private String subagent(String task, ToolContext context, int rendering) {
      Request r = requests.of(task + " ");
      return clients
          .build()
          .prompt()
          .user(SUBAGENT + rendering + ": " + r.userText())
          .tools(this)
          .toolContext(context.getContext())
          .call()
          .content();
    }
  }

  /** Tool answers the model got that say a call did not succeed, by request id. */
  private final Map<String, List<String>> failures = new ConcurrentHashMap<>();

  private final ConfigurableApplicationContext context;
  private final InvoiceTools tools;
  private final ChatClient.Builder clients;

  /** {@code client} null: without the ledger. */
  public SpringAiAgent(EvalRequests requests, ToolCalls client, String paymentsUrl) {
    tools = new InvoiceTools(requests, paymentsUrl);
    SpringApplicationBuilder app =
        new SpringApplicationBuilder(EvalApplication.class)
            .web(WebApplicationType.NONE)
            .logStartupInfo(false)
            .initializers(
                c -> {
                  c.getBeanFactory().registerSingleton("invoiceTools", tools);
                  c.getBeanFactory()
                      .registerSingleton("scriptedModel", new ScriptedModel(requests, failures));
                  if (client != null) {
                    c.getBeanFactory().registerSingleton("effectLedger", client);
                    c.getBeanFactory()
                        .registerSingleton(
                            "toolRouting",
                            ToolRouting.byPolicy()
                                .scope("pay_invoice", a -> "invoice:" + invoiceOf(a))
                                .direct(java.util.Set.of("billing_agent", "collections_agent")));
                  }
                });
    if (client == null) {
      app.properties("effectledger.enabled=false"); // Spring AI's own ToolCallingManager, unwrapped
    }
    context = app.properties("spring.main.banner-mode=off").run();
    clients = context.getBean(ChatClient.Builder.class);
    tools.clients = clients;
  }

  private static String invoiceOf(String arguments) {
    try {
      return JSON.readTree(arguments).path("invoice").asText();
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  /** Runs one request (a failed tool call reaches the model as text; the scripted one goes on). */
  @Override
  public void run(Request r, String tenant) {
    clients
        .build()
        .prompt()
        .user(r.userText())
        .tools(tools)
        .toolContext(
            LedgerToolContext.step(new StepContext(tenant, "conversation-" + r.id(), r.id(), "")))
        .call()
        .content();
    List<String> failed = failures.remove(r.id());
    if (failed != null) {
      throw new IllegalStateException(String.join("; ", failed));
    }
  }

  @Override
  public void close() {
    context.close();
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class EvalApplication {}

  // --- the scripted model --------------------------------------------------------------------

  private static AssistantMessage main(Request r, int turn) {
    return message(r.mainTurn(turn), "Paid.");
  }

  private static BiFunction<Request, Integer, AssistantMessage> sub(int rendering) {
    return (r, turn) -> message(r.subagentTurn(rendering, turn), "Paid it.");
  }

  private static AssistantMessage message(List<EvalRequests.Call> calls, String text) {
    return calls.isEmpty()
        ? new AssistantMessage(text)
        : calls(calls.stream().map(c -> call(c.tool(), c.arguments())).toList());
  }

  private static AssistantMessage.ToolCall call(String tool, String arguments) {
    return new AssistantMessage.ToolCall("call_" + UUID.randomUUID(), "function", tool, arguments);
  }

  private static AssistantMessage calls(List<AssistantMessage.ToolCall> calls) {
    return AssistantMessage.builder().content("").toolCalls(calls).build();
  }

  /** What the ledger's and Spring AI's answers for a call that did not succeed say. */
  private static final java.util.regex.Pattern FAILED =
      java.util.regex.Pattern.compile(
          "failed|refused|not known|needs the run|not in Effect Ledger|Exception|Error");

  /** What a subagent's user text starts with (then its rendering of the payment). */
  private static final String SUBAGENT = "Subagent ";

  /** A chat model playing the main script, or a subagent's when its user text says so. */
  static final class ScriptedModel implements ChatModel {
    private final EvalRequests requests;
    private final Map<String, List<String>> failures;

    ScriptedModel(EvalRequests requests, Map<String, List<String>> failures) {
      this.requests = requests;
      this.failures = failures;
    }

    @Override
    public ChatResponse call(Prompt prompt) {
      List<Message> messages = prompt.getInstructions();
      int user = messages.size() - 1;
      while (user >= 0 && !(messages.get(user) instanceof UserMessage)) {
        user--;
      }
      String text = ((UserMessage) messages.get(user)).getText();
      Request r = requests.of(text);
      int turn =
          (int)
              messages.subList(user + 1, messages.size()).stream()
                  .filter(m -> m instanceof AssistantMessage)
                  .count();
      if (!messages.isEmpty()
          && messages.get(messages.size() - 1) instanceof ToolResponseMessage answers) {
        for (ToolResponseMessage.ToolResponse answer : answers.getResponses()) {
          if (FAILED.matcher(answer.responseData()).find()) {
            failures
                .computeIfAbsent(r.id(), k -> new CopyOnWriteArrayList<>())
                .add(answer.name() + ": " + answer.responseData());
          }
        }
      }
      BiFunction<Request, Integer, AssistantMessage> script =
          text.startsWith(SUBAGENT)
              ? sub(text.charAt(SUBAGENT.length()) - '0')
              : SpringAiAgent::main;
      return new ChatResponse(List.of(new Generation(script.apply(r, turn))));
    }

    @Override
    public ChatOptions getOptions() {
      return ToolCallingChatOptions.builder().build();
    }
  }
}
