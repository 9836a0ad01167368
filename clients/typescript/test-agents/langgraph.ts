/**
 * The eval's LangGraph.js agent: `createReactAgent` (its own agent and ToolNode loop) with a
 * scripted chat model, and for subagents a parent graph running two agents as subgraph nodes.
 * `interrupt`: the model asks a person for approval in the same turn as the payment; the graph
 * stops at the approval, is resumed with a `Command`, re-runs the tools node (the payment with it,
 * as LangGraph does) and the model, told it is approved, emits the payment again. `crash`: the
 * agent's process exits right after the payment went out; a new process resumes the thread from
 * LangGraph's PostgreSQL checkpointer (or, when the crash came before the thread's first checkpoint
 * was written, submits the request again), and the model emits the payment again.
 */
import { randomUUID } from 'node:crypto';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { type StructuredToolInterface, tool } from '@langchain/core/tools';
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { ledgerTools } from '../src/agents/langgraph.js';
import type { ToolLedger } from '../src/agents/ledger.js';
import { type Env, type Mode, type PayArgs, type Request, invoiceOf, parseUserText, payArgs, payDirectly, userText } from './harness.js';

type Script = (r: Request, turn: number) => AIMessage;

const calls = (...list: Array<[string, Record<string, unknown>]>) =>
  new AIMessage({
    content: '',
    tool_calls: list.map(([name, args]) => ({ name, args, id: `call_${randomUUID()}`, type: 'tool_call' as const })),
  });
const say = (text: string) => new AIMessage(text);

/** A chat model playing `script` for the request of the latest human message, by its turn since. */
class ScriptedChat extends BaseChatModel {
  constructor(
    private readonly all: Map<string, Request>,
    private readonly script: Script,
  ) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    let human = messages.length - 1;
    while (human >= 0 && messages[human].getType() !== 'human') human--;
    if (human < 0) throw new Error('scripted model: no human message');
    const r = parseUserText(String(messages[human].content), this.all);
    const turn = messages.slice(human + 1).filter((m) => m.getType() === 'ai').length;
    const message = this.script(r, turn);
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] };
  }
}

function main(r: Request, t: number): AIMessage {
  switch (r.scenario) {
    case 'replan':
      if (t === 0) return calls(['get_invoice', { invoice: r.invoice }]);
      return t <= 1 + r.replans ? calls(['pay_invoice', payArgs(r, t - 1)]) : say('Paid.');
    case 'parallel':
      return t === 0 ? calls(['pay_invoice', payArgs(r, 0)], ['pay_invoice', payArgs(r, 0)]) : say('Paid.');
    case 'interrupt':
      if (t === 0) return calls(['pay_invoice', payArgs(r, 0)], ['ask_approval', { question: `pay ${r.invoice}?` }]);
      return t === 1 ? calls(['pay_invoice', payArgs(r, 1)]) : say('Paid, as approved.');
    case 'crash':
      return t <= 1 ? calls(['pay_invoice', payArgs(r, t)]) : say('Paid.');
    default:
      throw new Error(`no ${r.scenario} script for the main agent`);
  }
}

const subagent =
  (n: number): Script =>
  (r, t) =>
    t === 0 ? calls(['pay_invoice', payArgs(r, n)]) : say('Paid it.');

export interface LangGraphEval {
  run(r: Request): Promise<void>;
  close(): Promise<void>;
}

/** The tools as each mode has them; `crashAfterPay` exits the process once a payment went out. */
function toolsFor(e: Env, ledger: ToolLedger, mode: Mode, all: Map<string, Request>, crashAfterPay: boolean): StructuredToolInterface[] {
  const getInvoice = tool(async ({ invoice }: { invoice: string }) => invoiceOf(invoice, all), {
    name: 'get_invoice',
    description: 'Reads an invoice',
    schema: z.object({ invoice: z.string() }),
  });
  const askApproval = tool(async ({ question }: { question: string }) => String(interrupt({ question })), {
    name: 'ask_approval',
    description: 'Asks a person to approve',
    schema: z.object({ question: z.string() }),
  });
  const payInvoice = tool(
    async (input: PayArgs, config) => payDirectly(e, input, config.toolCall?.id ?? 'no-call-id'),
    {
      name: 'pay_invoice',
      description: 'Pays an invoice',
      schema: z.object({ invoice: z.string(), amount: z.number(), currency: z.string(), memo: z.string() }),
    },
  );
  const routed: StructuredToolInterface[] = mode === 'ledger' ? ledgerTools(ledger, [getInvoice, askApproval, payInvoice]) : [getInvoice, askApproval, payInvoice];
  if (!crashAfterPay) return routed;
  return routed.map((t) =>
    t.name !== 'pay_invoice'
      ? t
      : (tool(
          async (input: Record<string, unknown>, config) => {
            await t.invoke(input, config);
            process.exit(3); // the crash: the payment went out, nothing after it was checkpointed
          },
          { name: t.name, description: t.description, schema: t.schema as never },
        ) as unknown as StructuredToolInterface),
  );
}

export async function langGraphEval(e: Env, ledger: ToolLedger, mode: Mode, all: Map<string, Request>, crashing = false): Promise<LangGraphEval> {
  const postgres = e.postgresUrl ? PostgresSaver.fromConnString(e.postgresUrl) : undefined;
  if (postgres) await postgres.setup();
  const memory = new MemorySaver();
  const tools = toolsFor(e, ledger, mode, all, crashing);
  const agent = (checkpointer: MemorySaver | PostgresSaver, script: Script) =>
    createReactAgent({ llm: new ScriptedChat(all, script), tools, checkpointer });
  const inMemory = agent(memory, main);
  const durable = postgres ? agent(postgres, main) : undefined;
  const parent = new StateGraph(MessagesAnnotation)
    .addNode('billing', createReactAgent({ llm: new ScriptedChat(all, subagent(1)), tools }))
    .addNode('collections', createReactAgent({ llm: new ScriptedChat(all, subagent(2)), tools }))
    .addEdge(START, 'billing')
    .addEdge(START, 'collections')
    .addEdge('billing', END)
    .addEdge('collections', END)
    .compile({ checkpointer: memory });
  const thread = (r: Request) => ({ configurable: { thread_id: `${mode}-${r.id}` } });
  return {
    async run(r: Request): Promise<void> {
      // The human message carries the request's own id, as the adapter's docs ask: a request
      // re-submitted after a crash that lost its first checkpoint is then the same step.
      const input = { messages: [new HumanMessage({ content: userText(r), id: r.id })] };
      switch (r.scenario) {
        case 'subagents':
          await parent.invoke(input, thread(r));
          return;
        case 'interrupt': {
          const first = await inMemory.invoke(input, thread(r));
          if (!('__interrupt__' in first)) throw new Error('the approval did not interrupt the graph');
          await inMemory.invoke(new Command({ resume: 'approved' }), thread(r));
          return;
        }
        case 'crash':
          if (!durable) throw new Error('the crash scenario needs EVAL_POSTGRES_URL');
          if (crashing) {
            await durable.invoke(input, thread(r)); // exits the process in the payment
            throw new Error('the crashing run did not crash');
          }
          // The crashed process's run is in the checkpointer: resume the thread where it stopped.
          // With LangGraph's default durability ("async") the crash can come before any checkpoint
          // of the thread was written; the orchestrator then submits the request again.
          try {
            await durable.invoke(null, thread(r));
          } catch (error) {
            if (!/no input writes/i.test(String((error as Error).message))) throw error;
            await durable.invoke(input, thread(r));
          }
          return;
        default:
          await inMemory.invoke(input, thread(r));
      }
    },
    async close(): Promise<void> {
      await postgres?.end();
    },
  };
}
