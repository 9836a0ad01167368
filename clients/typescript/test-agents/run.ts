/**
 * Runs the agent-runtime eval for one runtime and mode and prints its table rows as one JSON line
 * on stdout (progress on stderr):
 *
 *   node dist/test-agents/run.js --runtime langgraph --mode ledger --requests 200 --tag r1
 *
 * The gateway, the ledger and the payment API are started by the caller (AgentRuntimesIT, or
 * `bench/run agents`), which passes them in EFFECTLEDGER_GATEWAY_URL, EFFECTLEDGER_TOKEN,
 * EVAL_PAYMENTS_URL and EVAL_POSTGRES_URL.
 */
import { spawnSync } from 'node:child_process';
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
const mode = values.mode as Mode;
if (mode !== 'ledger' && mode !== 'direct') throw new Error('--mode must be ledger or direct');
const e = env();
const ledger = ledgerOf(e);
const tag = `${values.tag}-${runtime}-${mode}`;
const all = requests(tag, Number(values.requests), Number(values.seed), scenarios);
const byInvoice = new Map(all.map((r) => [r.invoice, r]));

if (values['crash-child'] !== undefined) {
  // The agent process that crashes: runs the request until its payment went out, then exits.
  const r = all.find((x) => x.id === values['crash-child']);
  if (!r) throw new Error(`no request ${values['crash-child']}`);
  const graph = await langGraphEval(e, ledger, mode, byInvoice, true);
  await graph.run(r);
} else {
  const errors = new Map<string, string>();
  let finished = 0;
  const graph = runtime === 'langgraph' ? await langGraphEval(e, ledger, mode, byInvoice) : undefined;
  const one = async (r: Request): Promise<void> => {
    if (runtime === 'ai-sdk') return runAiSdk(e, ledger, mode, r, byInvoice);
    if (runtime === 'openai-agents') return runOpenAiAgents(e, ledger, mode, r, byInvoice);
    if (r.scenario === 'crash') {
      const child = spawnSync(
        process.execPath,
        [fileURLToPath(import.meta.url), ...process.argv.slice(2), '--crash-child', r.id],
        { encoding: 'utf8', timeout: 120_000 },
      );
      if (child.status !== 3) {
        throw new Error(`the crashing agent process ended with ${child.status ?? child.signal}, not the crash: ${child.stderr}`);
      }
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
  process.stdout.write(JSON.stringify(await rows(e, runtime, mode, all, errors)) + '\n');
}
