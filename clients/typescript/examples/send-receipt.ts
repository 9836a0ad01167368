// Sends one receipt e-mail exactly once through a local gateway, three times over. Start the
// broker, the processor, an executor for the messaging lane and the gateway first
// (docs/integrating.md, "HTTP (any language)"), then, from clients/typescript:
//   npm ci && npm run build && node dist/examples/send-receipt.js
import { exactlyOnce, GatewayClient, withStep } from '../src/index.js';

const client = new GatewayClient({
  url: process.env.EFFECTLEDGER_GATEWAY_URL ?? 'http://127.0.0.1:8088',
  token: process.env.EFFECTLEDGER_TOKEN ?? 'dev-token',
  wait: 10,
});

// As a tool definition's execute (OpenAI Agents JS, Vercel AI SDK, Mastra): performed by the
// ledger's executor, once.
const sendEmail = exactlyOnce<{ to: string; subject: string; body: string }>(client, { name: 'send_email' });

const runId = process.argv[2] ?? 'example-run-ts-1';
await withStep({ tenant: 'acme', runId, stepId: 'send-receipt' }, async () => {
  for (let attempt = 1; attempt <= 3; attempt++) {
    // a retrying agent: one e-mail, three answers
    console.log(`attempt ${attempt}:`, await sendEmail({ to: 'ada@example.com', subject: 'Your receipt', body: 'Thanks!' }));
  }
});

const answer = await client.call({ tenant: 'acme', runId, stepId: 'send-receipt' }, 'send_email',
  { body: 'Thanks!', subject: 'Your receipt', to: 'ada@example.com' }); // other member order
if (answer.kind !== 'succeeded' || !answer.replayed) throw new Error(`expected a replay, got ${JSON.stringify(answer)}`);
console.log(`key ${answer.key}: replayed=${answer.replayed}`);
