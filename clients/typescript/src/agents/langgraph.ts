/**
 * LangGraph.js (`@langchain/langgraph`): tools for `ToolNode` and `createReactAgent` (and
 * `createAgent` of `langchain`) whose effects go through Effect Ledger.
 *
 *   const tools = ledgerTools(ledger, [getInvoice, payInvoice]);
 *   const agent = createReactAgent({ llm, tools, checkpointer });
 *   await agent.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id } });
 *
 * The step is read from the graph, never from the model: the run is the thread
 * (`configurable.thread_id`), the step the id of the latest human message in the graph's state,
 * which `add_messages` gives each message and the checkpointer keeps. Both stay the same when the
 * model re-plans the action under new tool-call ids, when a node re-runs after an interrupt, and
 * when another process resumes the thread after a crash; a subgraph (or an agent used as a node)
 * given the parent's messages has the same thread and the same human message, so its calls belong
 * to the same step. A new request (a new human message) is a new step. Give each human message
 * the id of the user's request (`new HumanMessage({ content, id: requestId })`), so that a request
 * submitted again (after a crash before the thread's first checkpoint) is the same step.
 *
 * A tool the live policy classes `read` runs as it is; every other tool is called through the
 * gateway (its effect runs in the ledger's executor, once; its own function is not called). A
 * call that did not succeed answers an error `ToolMessage` that tells the model what happened and
 * what not to do. A call held as UNKNOWN of a tool whose policy holds ambiguous outcomes
 * (`onAmbiguous: hold`) interrupts the graph for a person (`interrupt()`, which needs a
 * checkpointer); when the graph is resumed the tool asks the ledger again (the same key) and
 * answers what it finds.
 */
import { ToolMessage } from '@langchain/core/messages';
import { type StructuredToolInterface, type ToolRunnableConfig, tool } from '@langchain/core/tools';
import { getCurrentTaskInput, interrupt, isGraphBubbleUp } from '@langchain/langgraph';
import { type AgentStep, type ToolLedger, textForModel } from './ledger.js';

export { ToolLedger } from './ledger.js';

export interface LangGraphLedgerOptions {
  /** Interrupt for a person when a call is held (for tools with `onAmbiguous: hold`); default true. */
  interruptOnHeld?: boolean;
}

/** What `interrupt()` carries when a call is held: shown to the person resuming the graph. */
export interface HeldInterrupt {
  type: 'effectledger/held';
  tool: string;
  key: string;
  message: string;
}

type Message = { id?: string; getType?: () => string; _getType?: () => string; type?: string };

function isHuman(m: Message): boolean {
  const type = m.getType?.() ?? m._getType?.() ?? m.type;
  return type === 'human' || type === 'user';
}

/**
 * The step of a tool call: the thread, and the id of the latest human message in the state the
 * call's node was given. Throws an error saying what is missing.
 */
export function stepOf(config: ToolRunnableConfig, tool: string): AgentStep {
  const runId = config.configurable?.thread_id as string | undefined;
  if (typeof runId !== 'string' || runId === '') {
    throw new Error(
      `${tool} needs the run it belongs to: invoke the graph with { configurable: { thread_id } } and a checkpointer`,
    );
  }
  let state: { messages?: Message[] } | undefined;
  try {
    state = getCurrentTaskInput<{ messages?: Message[] }>(config);
  } catch {
    state = undefined;
  }
  const human = [...(state?.messages ?? [])].reverse().find(isHuman);
  if (!human?.id) {
    throw new Error(
      `${tool} needs the step it belongs to: the graph's state has no human message with an id ` +
        '(keep the messages channel with add_messages, which gives each message one, and pass the parent\'s messages to subgraphs)',
    );
  }
  return { runId, stepId: human.id };
}

/** `tools`, each routed by the ledger's live policy. */
export function ledgerTools(
  ledger: ToolLedger,
  tools: readonly StructuredToolInterface[],
  options: LangGraphLedgerOptions = {},
): StructuredToolInterface[] {
  return tools.map((t) => ledgerTool(ledger, t, options));
}

/** One tool, routed by the ledger's live policy under its own name. */
export function ledgerTool(
  ledger: ToolLedger,
  original: StructuredToolInterface,
  options: LangGraphLedgerOptions = {},
): StructuredToolInterface {
  const name = original.name;
  const error = (content: string, config: ToolRunnableConfig) =>
    new ToolMessage({ content, name, status: 'error', tool_call_id: config.toolCall?.id ?? '' });
  return tool(
    async (input: Record<string, unknown>, config: ToolRunnableConfig) => {
      const route = await ledger.route(name);
      if (route.kind === 'unknown') return error(ledger.unknownToolText(name), config);
      if (route.kind === 'direct') return original.invoke(input, config);
      const step = stepOf(config, name);
      const result = await ledger.call(step, name, input);
      if (result.kind === 'succeeded') return result.result as never;
      const text = textForModel(name, result);
      if (result.kind === 'held' && route.tool.onAmbiguous === 'hold' && options.interruptOnHeld !== false) {
        // On resume this function runs again from its start: the call above asked the ledger again
        // (the same key, no second effect), so a key settled meanwhile was answered already.
        let answer: unknown;
        try {
          answer = interrupt<HeldInterrupt, unknown>({ type: 'effectledger/held', tool: name, key: result.key, message: text });
        } catch (e) {
          if (isGraphBubbleUp(e)) throw e; // the interrupt itself
          return error(text, config); // no checkpointer to interrupt with: the model is told
        }
        return error(`${text} A person was asked and answered: ${JSON.stringify(answer)}`, config);
      }
      return error(text, config);
    },
    { name, description: original.description, schema: original.schema as never },
  ) as unknown as StructuredToolInterface;
}
