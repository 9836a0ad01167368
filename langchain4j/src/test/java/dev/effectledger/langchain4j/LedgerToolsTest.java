package dev.effectledger.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.client.CallError;
import dev.effectledger.client.CallResult;
import dev.effectledger.client.ScriptedToolCalls;
import dev.effectledger.client.StepContext;
import dev.effectledger.client.ToolCall;
import dev.effectledger.client.ToolCalls;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.invocation.InvocationParameters;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * LedgerTools in LangChain4j's own tool loop (AiServices over a scripted model), with a {@link
 * ToolCalls} that records what it is asked and answers what the test says; the real ledger is in
 * the app module's agent-runtime eval.
 */
class LedgerToolsTest {

  interface Assistant {
    String chat(@dev.langchain4j.service.UserMessage String text, InvocationParameters step);
  }

  interface WithoutStep {
    String chat(String text);
  }

  static final class Billing {
    int looked;

    @Tool(name = "look", value = "Reads an invoice")
    public String look(@P(name = "invoice", value = "id") String invoice) {
      looked++;
      return "open";
    }

    @Tool(name = "pay", value = "Pays an invoice")
    public String pay(@P(name = "invoice", value = "id") String invoice) {
      throw new AssertionError("a write tool's own method must not run");
    }

    @Tool(name = "refund", value = "Refunds")
    public String refund(@P(name = "invoice", value = "id") String invoice) {
      throw new AssertionError("a tool the policy does not name must not run");
    }
  }

  /** The policy classes the tests' client knows: look is read, pay irreversible. */
  private static final Map<String, String> CLASSES = Map.of("look", "read", "pay", "irreversible");

  /** Plays {@code turns}, then "done"; keeps what it was sent. */
  static final class Scripted implements ChatModel {
    final Deque<AiMessage> turns;
    final List<List<ChatMessage>> seen = new ArrayList<>();

    Scripted(AiMessage... turns) {
      this.turns = new ArrayDeque<>(List.of(turns));
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
      seen.add(request.messages());
      AiMessage next = turns.isEmpty() ? AiMessage.from("done") : turns.poll();
      return ChatResponse.builder().aiMessage(next).build();
    }

    /** The tool results of the last request. */
    List<ToolExecutionResultMessage> results() {
      return seen.get(seen.size() - 1).stream()
          .filter(m -> m instanceof ToolExecutionResultMessage)
          .map(m -> (ToolExecutionResultMessage) m)
          .toList();
    }
  }

  private static AiMessage calls(String... toolAndArguments) {
    List<ToolExecutionRequest> requests = new ArrayList<>();
    for (int i = 0; i < toolAndArguments.length; i += 2) {
      requests.add(
          ToolExecutionRequest.builder()
              .id("call_" + requests.size() + "_" + System.nanoTime())
              .name(toolAndArguments[i])
              .arguments(toolAndArguments[i + 1])
              .build());
    }
    return AiMessage.from(requests);
  }

  private static final StepContext STEP = new StepContext("acme", "conv-1", "req-1", "");
  private static final CallResult SUCCEEDED =
      new CallResult.Succeeded("k1", "{\"id\":\"ch_1\"}", "ch_1", false, 1);

  private static Assistant assistant(Scripted model, ToolCalls client, Billing billing) {
    return AiServices.builder(Assistant.class)
        .chatModel(model)
        .tools(
            LedgerTools.builder(client)
                .tools(billing)
                .scope(
                    "pay",
                    args -> "invoice:" + args.replaceAll(".*\"invoice\":\"([^\"]*)\".*", "$1"))
                .build()
                .tools())
        .executeToolsConcurrently()
        .build();
  }

  @Test
  void shouldRunReadToolsThemselvesAndCallWriteToolsThroughTheLedgerWithTheInvocationsStep() {
    ScriptedToolCalls client = new ScriptedToolCalls(CLASSES, SUCCEEDED);
    Billing billing = new Billing();
    Scripted model =
        new Scripted(
            calls("look", "{\"invoice\":\"i-1\"}"),
            calls("pay", "{\"invoice\":\"i-1\"}", "pay", "{\"invoice\":\"i-1\"}"));

    String answer = assistant(model, client, billing).chat("pay i-1", LedgerTools.step(STEP));

    assertThat(answer).isEqualTo("done");
    assertThat(billing.looked).isEqualTo(1);
    assertThat(client.calls())
        .hasSize(2)
        .allSatisfy(
            call -> {
              assertThat(call.tool()).isEqualTo("pay");
              assertThat(call.step())
                  .isEqualTo(new StepContext("acme", "conv-1", "req-1", "invoice:i-1"));
            });
    assertThat(model.results())
        .extracting(ToolExecutionResultMessage::text)
        .containsExactly("open", "{\"id\":\"ch_1\"}", "{\"id\":\"ch_1\"}");
  }

  @Test
  void shouldTellTheModelWhatAHeldCallMeansAndNotRunAToolThePolicyDoesNotName() {
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES,
            new CallResult.HeldUnknown(
                "k1", new CallError("UNKNOWN_OUTCOME", "no answer", false, ""), false, null));
    Scripted model =
        new Scripted(calls("pay", "{\"invoice\":\"i-1\"}", "refund", "{\"invoice\":\"i-1\"}"));

    assistant(model, client, new Billing()).chat("pay i-1", LedgerTools.step(STEP));

    assertThat(client.calls()).extracting(ToolCall::tool).containsExactly("pay");
    assertThat(model.results())
        .extracting(ToolExecutionResultMessage::text)
        .anySatisfy(
            t -> assertThat(t).contains("held for reconciliation", "not with other arguments"))
        .anySatisfy(
            t -> assertThat(t).contains("refund is not in Effect Ledger's applied tool policy"));
  }

  @Test
  void shouldWaitOnACallStillRunningUntilItsResult() {
    ToolCall running = ToolCall.of(STEP, "pay", "{\"invoice\":\"i-1\"}");
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES,
            new CallResult.StillRunning("k1", running, CallResult.StillRunning.Reason.TIMED_OUT),
            new CallResult.StillRunning("k1", running, CallResult.StillRunning.Reason.TIMED_OUT),
            SUCCEEDED);
    Scripted model = new Scripted(calls("pay", "{\"invoice\":\"i-1\"}"));

    assistant(model, client, new Billing()).chat("pay i-1", LedgerTools.step(STEP));

    assertThat(client.calls()).hasSize(3).extracting(ToolCall::tool).containsOnly("pay");
    assertThat(model.results())
        .extracting(ToolExecutionResultMessage::text)
        .containsExactly("{\"id\":\"ch_1\"}");
  }

  @Test
  void shouldNotSpinOnAClientClosedWhileTheCallWaited() {
    ToolCall running = ToolCall.of(STEP, "pay", "{\"invoice\":\"i-1\"}");
    ScriptedToolCalls client =
        new ScriptedToolCalls(
            CLASSES,
            new CallResult.StillRunning(
                "k1", running, CallResult.StillRunning.Reason.CLIENT_CLOSED));
    Scripted model = new Scripted(calls("pay", "{\"invoice\":\"i-1\"}"));
    Assistant assistant =
        AiServices.builder(Assistant.class)
            .chatModel(model)
            .tools(
                LedgerTools.builder(client)
                    .tools(new Billing())
                    .attach(Duration.ofSeconds(2))
                    .build()
                    .tools())
            .build();

    assistant.chat("pay i-1", LedgerTools.step(STEP));

    assertThat(client.calls())
        .as("asked once: a closed client answers at once, every time")
        .hasSize(1);
    assertThat(model.results())
        .singleElement()
        .satisfies(r -> assertThat(r.text()).contains("pay is still running"));
  }

  @Test
  void shouldNotCallTheLedgerWithoutTheStepAndSayWhatToPass() {
    ScriptedToolCalls client = new ScriptedToolCalls(CLASSES, SUCCEEDED);
    Scripted model = new Scripted(calls("pay", "{\"invoice\":\"i-1\"}"));
    WithoutStep assistant =
        AiServices.builder(WithoutStep.class)
            .chatModel(model)
            .tools(LedgerTools.builder(client).tools(new Billing()).build().tools())
            .build();

    assistant.chat("pay i-1");

    assertThat(client.calls()).isEmpty();
    assertThat(model.results())
        .singleElement()
        .satisfies(
            r ->
                assertThat(r.text())
                    .contains("needs the run and step it belongs to", "InvocationParameters"));
  }
}
