/**
 * The agent's current span, carried with its call as W3C trace context: the ledger's decision, the
 * executor's attempt and the downstream request then join the agent's trace (docs/operations.md,
 * "Traces").
 *
 * The span is the one active in `@opentelemetry/api`'s context where `call` is called, the API
 * being an optional peer dependency: without it, or with no active span, a call carries nothing and
 * the ledger starts the trace.
 *
 * The header is written from the span's context in W3C's format, not by the application's
 * registered propagator: the ledger reads `traceparent` and `tracestate` only, whatever else the
 * application propagates (B3, Jaeger, ...), as the Java client does.
 */
import { createRequire } from 'node:module';

type Api = typeof import('@opentelemetry/api');

// Loaded with require, not a top-level await import: the package stays loadable where top-level
// await is not (a bundle to CommonJS), and a missing API is one caught error. Its state is global
// (registered by version), so this copy sees the application's context manager and tracer.
let api: Api | undefined;
try {
  api = createRequire(import.meta.url)('@opentelemetry/api') as Api;
} catch {
  api = undefined; // not installed: nothing to carry
}

/** `traceparent` (and `tracestate`) of the active span; empty when there is none. */
export function traceHeaders(): Record<string, string> {
  if (api === undefined) return {};
  const span = api.trace.getSpanContext(api.context.active());
  if (span === undefined || !api.isSpanContextValid(span)) return {};
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const headers: Record<string, string> = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}
