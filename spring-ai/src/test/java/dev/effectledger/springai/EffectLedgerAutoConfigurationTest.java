package dev.effectledger.springai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.client.CallError;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.ScriptedToolCalls;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.method.MethodToolCallbackProvider;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The auto-configuration in a real Spring Boot application: Boot's ChatClient, Spring AI's own tool
 * loop over a scripted model and the application's {@code @Tool} methods, with a {@link ToolCalls}
 * that records what it is asked (the real ledger is in the app module's agent-runtime eval).
 */
class EffectLedgerAutoConfigurationTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Application {}

  static final class Billing {
    int looked;

    @Tool(name = "look", description = "Reads an invoice")
    public String look(String invoice) {
      looked++;
      return "open";
    }

    @Tool(name = "pay", description = "Pays an invoice")
    public String pay(String invoice) {
      throw new AssertionError("a write tool's own method must not run");
    }

    @Tool(name = "refund", description = "Refunds")
    public String refund(String invoice) {
      throw new AssertionError("a tool the policy does not name must not run");
    }
  }

  /** The policy classes the tests' client knows: look is read, pay irreversible. */
  private static final Map<String, String> CLASSES = Map.of("look", "read", "pay", "irreversible");

  /** Plays its turns, then "done"; keeps the tool answers it was sent. */
  static final class Scripted implements ChatModel {
    final Deque<AssistantMessage> turns;
    final List<String> answers = new ArrayList<>();

    Scripted(AssistantMessage... turns) {
      this.turns = new ArrayDeque<>(List.of(turns));
    }

    @Override
    public ChatResponse call(Prompt prompt) {
      List<Message> messages = prompt.getInstructions();
      if (messages.get(messages.size() - 1) instanceof ToolResponseMessage last) {
        last.getResponses().forEach(r -> answers.add(r.name() + ": " + r.responseData()));
      }
      AssistantMessage next = turns.isEmpty() ? new AssistantMessage("done") : turns.poll();
      return new ChatResponse(List.of(new Generation(next)));
    }

    @Override
    public ChatOptions getOptions() {
      return ToolCallingChatOptions.builder().build();
    }
  }

  private static AssistantMessage calls(String... tools) {
    List<AssistantMessage.ToolCall> calls = new ArrayList<>();
    for (String tool : tools) {
      calls.add(
          new AssistantMessage.ToolCall(
              "call_" + UUID.randomUUID(), "function", tool, "{\"invoice\":\"i-1\"}"));
    }
    return AssistantMessage.builder().content("").toolCalls(calls).build();
  }

  private static ConfigurableApplicationContext start(ToolCalls client, Scripted model) {
    return new SpringApplicationBuilder(Application.class)
        .web(WebApplicationType.NONE)
        .logStartupInfo(false)
        .properties("spring.main.banner-mode=off")
        .initializers(
            c -> {
              c.getBeanFactory().registerSingleton("model", model);
              if (client != null) {
                c.getBeanFactory().registerSingleton("ledgerClient", client);
              }
            })
        .run();
  }

  private static final Map<String, Object> STEP =
      LedgerToolContext.step(new StepContext("acme", "conv-1", "req-1", ""));

  @Test
  void shouldRunReadToolsThemselvesAndCallWriteToolsThroughTheLedgerWithTheStep() {
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES, new CallResult.Succeeded("k1", "{\"id\":\"ch_1\"}", "ch_1", false, 1));
    Scripted model = new Scripted(calls("look"), calls("pay", "pay"));
    Billing billing = new Billing();
    try (ConfigurableApplicationContext app = start(client, model)) {
      String answer =
          app.getBean(ChatClient.Builder.class)
              .build()
              .prompt()
              .user("pay i-1")
              .tools(billing)
              .toolContext(STEP)
              .call()
              .content();

      assertThat(answer).isEqualTo("done");
    }
    assertThat(billing.looked).isEqualTo(1);
    assertThat(client.calls())
        .hasSize(2)
        .allSatisfy(
            c -> {
              assertThat(c.tool()).isEqualTo("pay");
              assertThat(c.step()).isEqualTo(new StepContext("acme", "conv-1", "req-1", ""));
              assertThat(c.argumentsJson()).isEqualTo("{\"invoice\":\"i-1\"}");
            });
    assertThat(model.answers)
        .containsExactly("look: \"open\"", "pay: {\"id\":\"ch_1\"}", "pay: {\"id\":\"ch_1\"}");
  }

  @Test
  void shouldTellTheModelWhatAHeldCallMeansAndNotRunAToolThePolicyDoesNotName() {
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES,
            new CallResult.HeldUnknown(
                "k1", new CallError("UNKNOWN_OUTCOME", "no answer", false, ""), false, null));
    Scripted model = new Scripted(calls("pay", "refund"));
    try (ConfigurableApplicationContext app = start(client, model)) {
      app.getBean(ChatClient.Builder.class)
          .build()
          .prompt()
          .user("pay i-1")
          .tools(new Billing())
          .toolContext(STEP)
          .call()
          .content();
    }
    assertThat(client.calls()).extracting(ToolCall::tool).containsExactly("pay");
    assertThat(model.answers)
        .anySatisfy(a -> assertThat(a).startsWith("pay: ").contains("held for reconciliation"))
        .anySatisfy(
            a -> assertThat(a).contains("refund is not in Effect Ledger's applied tool policy"));
  }

  @Test
  void shouldFailTheChatCallWithoutTheStepAndCallNothing() {
    ScriptedToolCalls client =
        new ScriptedToolCalls(CLASSES, new CallResult.Succeeded("k1", "{}", "ch_1", false, 1));
    try (ConfigurableApplicationContext app = start(client, new Scripted(calls("pay")))) {
      ChatClient chat = app.getBean(ChatClient.Builder.class).build();
      assertThatThrownBy(() -> chat.prompt().user("pay i-1").tools(new Billing()).call().content())
          .hasMessageContaining("pay needs the run and step it belongs to")
          .hasMessageContaining("LedgerToolContext.step");
    }
    assertThat(client.calls()).isEmpty();
  }

  @Test
  void shouldRouteToolsFoundByNameWhenResolutionFallsBackToTheApplicationsBeans() {
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES, new CallResult.Succeeded("k1", "{\"id\":\"ch_1\"}", "ch_1", false, 1));
    Scripted model = new Scripted(calls("pay"));
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(Application.class)
            .web(WebApplicationType.NONE)
            .logStartupInfo(false)
            .properties(
                "spring.main.banner-mode=off", "spring.ai.tools.resolution.fallback.enabled=true")
            .initializers(
                c -> {
                  c.getBeanFactory().registerSingleton("model", model);
                  c.getBeanFactory().registerSingleton("ledgerClient", client);
                  c.getBeanFactory()
                      .registerSingleton(
                          "billingTools",
                          MethodToolCallbackProvider.builder().toolObjects(new Billing()).build());
                })
            .run()) {
      // no .tools(...) on the call: Spring AI finds "pay" among the application's tool beans
      app.getBean(ChatClient.Builder.class)
          .build()
          .prompt()
          .user("pay i-1")
          .toolContext(STEP)
          .call()
          .content();
    }
    assertThat(client.calls()).extracting(ToolCall::tool).containsExactly("pay");
    assertThat(model.answers).containsExactly("pay: {\"id\":\"ch_1\"}");
  }

  @Test
  void shouldNotStartWithoutTheLedgersClient() {
    assertThatThrownBy(() -> start(null, new Scripted()).close())
        .hasStackTraceContaining("Effect Ledger's auto-configuration needs the ledger's client")
        .hasStackTraceContaining("effectledger.enabled=false");
  }
}
