/**
 * The native Kafka mode: calls without the gateway, exactly as the Java `ToolCallClient` makes them.
 * A `ToolIntent` goes to `tool-intents` in the Schema Registry wire format (magic byte, schema id,
 * Avro), keyed by the idempotency key, through Kafka's Java default partitioner (murmur2: the
 * ledger refuses an intent in another partition than its key's); the reply is read read_committed
 * from the reply topic, positioned at its end before the intent is published so that no reply is
 * missed; an in-flight notice (or a `refuse` tool's DUPLICATE_IN_FLIGHT) keeps the call waiting for the
 * final reply of the key's first call, and a key's release answers only a call whose intent the
 * ledger had read before it (`PendingReply` in pending.ts).
 *
 * Kafka is `kafkajs` (pure JavaScript; it has no manual partition assignment, so the reply
 * consumer is a group of its own, and never commits offsets). Encoding and decoding are
 * `@kafkajs/confluent-schema-registry`; registering the intent schema is one direct
 * `POST /subjects/tool-intents-value/versions`, as the Java serde does, because that library's
 * register also reads and writes the subject's compatibility config, which the ledger leaves to
 * operators.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kafka, Partitioners, logLevel, type Consumer, type KafkaConfig, type Producer, type Admin } from 'kafkajs';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { type CallError, EffectLedgerError, KeyDerivationError, Unavailable } from './errors.js';
import type { CallResult } from './gateway.js';
import { derive, type KeyRules, type StepContext, stepContext } from './keys.js';
import { PendingReply, throughOf } from './pending.js';
import { traceHeaders } from './trace.js';

export interface RegistryOptions {
  /** `http(s)://host:port` of the Schema Registry. */
  url: string;
  /** HTTP Basic, as managed registries' API keys (`basic.auth.user.info`). */
  basic?: { username: string; password: string };
  /** A bearer token (`bearer.auth.token`). */
  bearerToken?: string;
}

export interface NativeClientOptions {
  /** `bootstrap.servers`, as host:port strings. */
  brokers: string[];
  schemaRegistry: RegistryOptions;
  /** Extra kafkajs settings: `ssl`, `sasl`, `clientId`, ... */
  kafka?: Omit<KafkaConfig, 'brokers'>;
  /** The tool's key rules, the same pointers as its `key:` in the ledger's tools.yaml. */
  keyRules?: Record<string, KeyRules>;
  /** Where replies come; default `tool-results` (the ledger must allow the name). */
  replyTopic?: string;
  intentsTopic?: string;
  /** How long a call waits for its final reply; default 30 s. */
  timeoutMs?: number;
  /**
   * Follow the applied tool policy on `tool-policy` (`effectledger tools apply`): each tool it names
   * is derived with its key rules, which win over `keyRules`, and a change reaches the client
   * without a restart. Default true.
   */
  followPolicy?: boolean;
}

const POLICY_TOPIC = 'tool-policy';

type Middlewares = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>;

/** `requestId` rides on the call's intent (header `effectledger.request.id`). */
type Waiter = { tenant: string; reply: PendingReply<CallResult>; requestId: string };

/**
 * A call's own id on its intent. A final answer names the id of the intent that started the key's
 * life, so a call whose id it is not joined that action in flight: for it, the answer is a replay.
 */
const REQUEST_ID_HEADER = 'effectledger.request.id';

interface ReplyRecord {
  idempotencyKey: string;
  tenant: string;
  status: 'SUCCEEDED' | 'FAILED' | 'IN_FLIGHT' | 'UNKNOWN' | 'REJECTED';
  resultJson: string | null;
  error: { code: string; message: string; retriable: boolean; correctiveAction: string } | null;
  replayed: boolean;
  attempts: number;
  effectId: string | null;
}

export class NativeToolCallClient {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private closed = false;
  private appliedRules = new Map<string, KeyRules>();
  private appliedVersion = 0;
  private policyConsumer: Consumer | undefined;

  private constructor(
    private readonly options: Required<Pick<NativeClientOptions, 'replyTopic' | 'intentsTopic' | 'timeoutMs'>> &
      NativeClientOptions,
    private readonly producer: Producer,
    private readonly consumer: Consumer,
    private readonly registry: SchemaRegistry,
    private readonly intentSchemaId: number,
  ) {}

  /** Connects, registers the intent schema and positions the reply consumer at the end. */
  static async connect(options: NativeClientOptions): Promise<NativeToolCallClient> {
    const o = {
      replyTopic: 'tool-results',
      intentsTopic: 'tool-intents',
      timeoutMs: 30_000,
      ...options,
    };
    const kafka = new Kafka({ logLevel: logLevel.ERROR, clientId: 'effectledger-ts', ...o.kafka, brokers: o.brokers });
    const registry = new SchemaRegistry({
      host: o.schemaRegistry.url,
      auth: o.schemaRegistry.basic,
      middlewares: (o.schemaRegistry.bearerToken ? [bearer(o.schemaRegistry.bearerToken)] : []) as unknown as Middlewares,
    });
    const schemaId = await registerIntentSchema(o.schemaRegistry, o.intentsTopic);
    const producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner, // murmur2, as Kafka's Java client
      idempotent: true,
      maxInFlightRequests: 1,
    });
    const consumer = kafka.consumer({ groupId: `effectledger-ts-replies-${randomUUID()}`, readUncommitted: false });
    const admin = kafka.admin();
    try {
      await Promise.all([producer.connect(), consumer.connect(), admin.connect()]);
      const client = new NativeToolCallClient(o, producer, consumer, registry, schemaId);
      await client.positionReplies(admin);
      if (o.followPolicy !== false) await client.followPolicy(kafka, admin);
      return client;
    } catch (e) {
      await Promise.allSettled([producer.disconnect(), consumer.disconnect()]);
      throw new Unavailable(`could not reach Kafka at ${o.brokers.join(',')}: ${(e as Error).message}`);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private async positionReplies(admin: Admin): Promise<void> {
    const joined = new Promise<void>((resolve) => {
      const off = this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    await this.consumer.subscribe({ topic: this.options.replyTopic, fromBeginning: false });
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => this.onReply(message.value, message.headers),
    });
    await joined;
    // Every partition from its end now, before any intent is published: no reply can precede it.
    for (const p of await admin.fetchTopicOffsets(this.options.replyTopic)) {
      this.consumer.seek({ topic: this.options.replyTopic, partition: p.partition, offset: p.high });
    }
  }

  /** The applied policy version keys are derived with; 0 when none was read. */
  get policyVersion(): number {
    return this.appliedVersion;
  }

  /** The rules `tool`'s keys are derived with: the applied policy's, else `keyRules`', else none. */
  keyRulesOf(tool: string): KeyRules {
    return this.appliedRules.get(tool) ?? this.options.keyRules?.[tool] ?? {};
  }

  /**
   * Reads `tool-policy` from its start (waiting up to 10 s for the first document when it has
   * any) and follows it. No topic: the rules given in code.
   */
  private async followPolicy(kafka: Kafka, admin: Admin): Promise<void> {
    if (!(await admin.listTopics()).includes(POLICY_TOPIC)) return;
    const offsets = await admin.fetchTopicOffsets(POLICY_TOPIC);
    const written = offsets.some((p) => Number(p.high) > 0);
    const consumer = kafka.consumer({
      groupId: `effectledger-ts-policy-${randomUUID()}`,
      readUncommitted: false,
      allowAutoTopicCreation: false, // it needs one partition per tool-intents partition
    });
    this.policyConsumer = consumer;
    await consumer.connect();
    let firstRead: () => void = () => undefined;
    const read = new Promise<void>((resolve) => (firstRead = resolve));
    await consumer.subscribe({ topic: POLICY_TOPIC, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        if (message.value && this.applyPolicy(message.value)) firstRead();
      },
    });
    if (written) await Promise.race([read, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  }

  private applyPolicy(document: Buffer): boolean {
    try {
      const policy = JSON.parse(document.toString('utf8')) as {
        version?: number;
        keys?: Record<string, { ignore?: string[]; require?: string[] }[]>;
      };
      const version = Number(policy.version ?? 0);
      if (version <= this.appliedVersion) return this.appliedVersion > 0;
      const rules = new Map<string, KeyRules>();
      for (const [tool, versions] of Object.entries(policy.keys ?? {})) {
        const current = versions[0] ?? {};
        rules.set(tool, { ignore: current.ignore ?? [], require: current.require ?? [] });
      }
      this.appliedRules = rules;
      this.appliedVersion = version;
      return true;
    } catch {
      return false; // not a policy document this client reads: keep the rules it has
    }
  }

  private async onReply(value: Buffer | null, headers: Record<string, unknown> | undefined): Promise<void> {
    if (!value) return;
    let reply: ReplyRecord;
    try {
      reply = (await this.registry.decode(value)) as ReplyRecord;
    } catch {
      return; // not a reply this client can read; the Java client skips it too
    }
    const waiting = this.waiters.get(reply.idempotencyKey);
    if (!waiting || isInFlightNotice(reply)) return; // in flight: wait on for the result
    const through = throughOf(headers);
    const raw = headers?.[REQUEST_ID_HEADER];
    const last = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    const forRequest = last == null ? undefined : Buffer.isBuffer(last) ? last.toString('utf8') : String(last);
    for (const w of waiting) {
      if (w.tenant === reply.tenant) w.reply.offer(toResult(reply, joined(reply, forRequest, w.requestId)), through);
    }
  }

  /** Derives the key (with the tool's key rules), publishes the intent and waits for the reply. */
  async call(step: StepContext, tool: string, args: Record<string, unknown> | string, options: { timeoutMs?: number } = {}): Promise<CallResult> {
    if (this.closed) throw new EffectLedgerError('the client is closed');
    const s = stepContext(step);
    const derived = derive(s, tool, args, this.keyRulesOf(tool));
    const trace = traceHeaders(); // the agent's span, so the ledger's decision joins its trace
    const argumentsJson = typeof args === 'string' ? args : JSON.stringify(args);
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    let settle!: (r: CallResult) => void;
    const answered = new Promise<CallResult>((resolve) => (settle = resolve));
    const waiter: Waiter = { tenant: s.tenant, reply: new PendingReply<CallResult>((r) => settle(r)), requestId: randomUUID() };
    const set = this.waiters.get(derived.key) ?? new Set<Waiter>();
    set.add(waiter);
    this.waiters.set(derived.key, set);
    const timer = setTimeout(() => settle({ kind: 'running', key: derived.key }), timeoutMs);
    try {
      const value = await this.registry.encode(this.intentSchemaId, {
        idempotencyKey: derived.key,
        tenant: s.tenant,
        runId: s.runId,
        stepId: s.stepId,
        tool,
        arguments: argumentsJson,
        argumentsHash: derived.argumentsHash,
        businessScope: s.scope,
        requestedAt: Date.now(),
        replyTopic: this.options.replyTopic,
        bypassApproval: null,
        traceId: null,
      });
      const [sent] = await this.producer.send({ topic: this.options.intentsTopic, acks: -1, messages: [{ key: derived.key, value, headers: { ...trace, [REQUEST_ID_HEADER]: waiter.requestId } }] });
      waiter.reply.published(Number(sent?.baseOffset ?? sent?.offset ?? -1));
      return await answered;
    } catch (e) {
      if (e instanceof KeyDerivationError) throw e;
      // Closed while publishing: whether the intent went out is not known; the step, called
      // again, finds out (as a closed Java client answers StillRunning).
      if (this.closed) return { kind: 'running', key: derived.key };
      throw new Unavailable(
        `could not publish the intent for key ${derived.key} (${(e as Error).message}); call again with the same step`,
      );
    } finally {
      clearTimeout(timer);
      set.delete(waiter);
      if (set.size === 0) this.waiters.delete(derived.key);
    }
  }

  /** Stops; calls still waiting are answered `running` at once (their keys stay valid). */
  async close(): Promise<void> {
    this.closed = true;
    for (const [key, set] of this.waiters) {
      for (const w of set) w.reply.offer({ kind: 'running', key }, undefined);
    }
    await Promise.allSettled([
      this.producer.disconnect(),
      this.consumer.disconnect(),
      ...(this.policyConsumer ? [this.policyConsumer.disconnect()] : []),
    ]);
  }
}

/**
 * IN_FLIGHT (a duplicate attached on a `coalesce` tool) and the `refuse` tool's DUPLICATE_IN_FLIGHT
 * refusal both say the first call of the key is still running: the call waits for that call's final
 * reply, as the Java client's does (and the gateway client attaches on its 409).
 */
function isInFlightNotice(r: Pick<ReplyRecord, 'status' | 'error'>): boolean {
  return r.status === 'IN_FLIGHT' || (r.status === 'REJECTED' && r.error?.code === 'DUPLICATE_IN_FLIGHT');
}

/**
 * Whether a settled answer names another call's request id: the call joined the action in flight,
 * and the answer is, for it, a replay (as the Java client's `PendingReply.asSeenBy`).
 */
function joined(r: Pick<ReplyRecord, 'status'>, forRequest: string | undefined, mine: string): boolean {
  return (r.status === 'SUCCEEDED' || r.status === 'FAILED') && forRequest !== undefined && forRequest !== mine;
}

/** `joined`: the call came while the same action was in flight, so its answer is a replay. */
function toResult(r: ReplyRecord, joinedAction = false): CallResult {
  const error: CallError | undefined = r.error ?? undefined;
  const replayed = r.replayed || joinedAction;
  switch (r.status) {
    case 'SUCCEEDED':
      return {
        kind: 'succeeded',
        key: r.idempotencyKey,
        result: r.resultJson == null ? null : JSON.parse(r.resultJson),
        effectId: r.effectId ?? undefined,
        replayed,
        attempts: r.attempts,
      };
    case 'FAILED':
      return { kind: 'failed', key: r.idempotencyKey, error, replayed };
    case 'UNKNOWN':
      return { kind: 'held', key: r.idempotencyKey, error, replayed };
    default:
      return { kind: 'rejected', key: r.idempotencyKey, error };
  }
}

function authorization(registry: RegistryOptions): string | undefined {
  if (registry.basic && registry.bearerToken) {
    throw new TypeError('give the Schema Registry basic credentials or a bearer token, not both');
  }
  if (registry.basic) {
    return 'Basic ' + Buffer.from(`${registry.basic.username}:${registry.basic.password}`).toString('base64');
  }
  return registry.bearerToken ? `Bearer ${registry.bearerToken}` : undefined;
}

function bearer(token: string) {
  return () => ({
    request(request: { enhance(o: { headers: Record<string, string> }): unknown }) {
      return request.enhance({ headers: { Authorization: `Bearer ${token}` } });
    },
  });
}

async function registerIntentSchema(registry: RegistryOptions, intentsTopic: string): Promise<number> {
  const schema = readFileSync(new URL('../schemas/ToolIntent.avsc', import.meta.url), 'utf8');
  const auth = authorization(registry);
  const url = `${registry.url.replace(/\/+$/, '')}/subjects/${encodeURIComponent(intentsTopic + '-value')}/versions`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/vnd.schemaregistry.v1+json',
        ...(auth ? { Authorization: auth } : {}),
      },
      body: JSON.stringify({ schema: JSON.stringify(JSON.parse(schema)) }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    throw new Unavailable(`the Schema Registry at ${registry.url} is unreachable (${(e as Error).message})`);
  }
  const body = (await response.json().catch(() => ({}))) as { id?: number; message?: string };
  if (response.status === 401 || response.status === 403) {
    throw new EffectLedgerError(
      `the Schema Registry at ${registry.url} refused ${auth ? 'the credentials' : 'a request without credentials'} (HTTP ${response.status}); give schemaRegistry.basic or schemaRegistry.bearerToken`,
    );
  }
  if (!response.ok || typeof body.id !== 'number') {
    throw new EffectLedgerError(`the Schema Registry at ${registry.url} answered HTTP ${response.status}: ${body.message ?? ''}`);
  }
  return body.id;
}
