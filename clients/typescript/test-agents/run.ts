/**
 * Runs the agent-runtime eval for one runtime, in each mode asked, and prints the table rows as one JSON line
 * on stdout (progress on stderr):
 *
 *   node dist/test-agents/run.js --runtime langgraph --mode ledger,direct --requests 200 --tag r1
 *
 * The gateway, the ledger and the payment API are started by the caller (AgentRuntimesIT, or
 * `bench/run agents`), which passes them in EFFECTLEDGER_GATEWAY_URL, EFFECTLEDGER_TOKEN,
 * EVAL_PAYMENTS_URL and EVAL_POSTGRES_URL.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runAiSdk } from './ai-sdk.js';
import { type Mode, type Request, type Scenario, env, inParallel, ledgerOf, requests, rows } from './harness.js';
import { langGraphEval } from './langgraph.js';
import { runOpenAiAgents } from './openai-agents.js';

const SCENARIOS: Record<string, Scenario[]> = {
  'ai-sdk': ['replan', 'parallel', 'subagents'],
  'openai-agents': ['replan', 'parallel', 'subagents'],
  langgraph: ['replan', 'parallel', 'subagents', 'interrupt', 'crash'],
};

const { values } = parseArgs({
  options: {
    runtime: { type: 'string' },
    mode: { type: 'string', default: 'ledger' },
    requests: { type: 'string', default: '20' },
    seed: { type: 'string', default: '7' },
    tag: { type: 'string', default: 'eval' },
    parallel: { type: 'string', default: '4' },
    'crash-child': { type: 'string' },
  },
});

const runtime = String(values.runtime);
const scenarios = SCENARIOS[runtime];
if (!scenarios) throw new Error(`--runtime must be one of ${Object.keys(SCENARIOS).join(', ')}`);
const modes = String(values.mode).split(',') as Mode[];
if (modes.some((m) => m !== 'ledger' && m !== 'direct')) throw new Error('--mode must be ledger, direct or ledger,direct');
const e = env();
const ledger = ledgerOf(e);
const requestsOf = (mode: Mode) =>
  requests(`${values.tag}-${runtime}-${mode}`, Number(values.requests), Number(values.seed), scenarios);

/** The agent's process that crashes in the payment (a child, so the others go on meanwhile). */
function crashingProcess(mode: Mode, id: string): Promise<{ code: number | string; stderr: string }> {
  return new Promise((resolve) => {
    const args = [fileURLToPath(import.meta.url), ...process.argv.slice(2), '--mode', mode, '--crash-child', id];
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 120_000,
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code, signal) => resolve({ code: code ?? String(signal), stderr }));
  });
}

if (values['crash-child'] !== undefined) {
  // The agent process that crashes: runs the request until its payment went out, then exits.
  const mode = modes[modes.length - 1];
  const all = requestsOf(mode);
  const r = all.find((x) => x.id === values['crash-child']);
  if (!r) throw new Error(`no request ${values['crash-child']}`);
  const graph = await langGraphEval(e, ledger, mode, new Map(all.map((x) => [x.invoice, x])), true);
  await graph.run(r);
} else {
  const table = [];
  for (const mode of modes) {
    const all = requestsOf(mode);
    const byInvoice = new Map(all.map((r) => [r.invoice, r]));
    const errors = new Map<string, string>();
    let finished = 0;
    const graph = runtime === 'langgraph' ? await langGraphEval(e, ledger, mode, byInvoice) : undefined;
    const one = async (r: Request): Promise<void> => {
      if (runtime === 'ai-sdk') return runAiSdk(e, ledger, mode, r, byInvoice);
      if (runtime === 'openai-agents') return runOpenAiAgents(e, ledger, mode, r, byInvoice);
      if (r.scenario === 'crash') {
        const exit = await crashingProcess(mode, r.id);
        if (exit.code !== 3) throw new Error(`the crashing agent process ended with ${exit.code}, not the crash: ${exit.stderr}`);
      }
      return graph!.run(r);
    };
    await inParallel(all, Number(values.parallel), async (r) => {
      try {
        await one(r);
      } catch (error) {
        errors.set(r.id, String((error as Error).message ?? error).slice(0, 500));
      }
      finished++;
      if (finished % 10 === 0 || finished === all.length) {
        process.stderr.write(`${runtime} ${mode}: ${finished}/${all.length} requests\n`);
      }
    });
    await graph?.close();
    table.push(...(await rows(e, runtime, mode, all, errors)));
  }
  process.stdout.write(JSON.stringify(table) + '\n');
}
