/**
 * The agent's current span, carried with its call as W3C trace context: the ledger's decision, the
 * executor's attempt and the downstream request then join the agent's trace (docs/operations.md,
 * "Traces").
 *
 * The span is the one active in `@opentelemetry/api`'s context where `call` is called, the API
 * being an optional peer dependency: without it, or with no active span, a call carries nothing and
 * the ledger starts the trace. It is the application's copy of the API, so the application's
 * registered context manager and tracer are the ones read.
 *
 * The header is written from the span's context in W3C's format, not by the application's
 * registered propagator: the ledger reads `traceparent` and `tracestate` only, whatever else the
 * application propagates (B3, Jaeger, ...), as the Java client does.
 */
type Api = typeof import('@opentelemetry/api');

let api: Api | undefined;
try {
  api = await import('@opentelemetry/api');
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
