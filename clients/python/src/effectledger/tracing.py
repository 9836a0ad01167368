"""The agent's trace, carried with a call as W3C trace context (``traceparent``, ``tracestate``): the
ledger's decision, the executor's attempt and the downstream request then join it (the ledger's
docs/operations.md, "Traces").

A call carries the ``traceparent`` it is given, else the current OpenTelemetry span's when
``opentelemetry-api`` is installed (it is not a dependency), else nothing: the ledger then starts
the trace. The header is written in W3C's format from the span's context, not by the application's
registered propagator, because the ledger reads ``traceparent`` and ``tracestate`` only, whatever
else the application propagates; the Java and TypeScript clients do the same.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

try:  # the application's OpenTelemetry, when it has one
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - depends on what is installed
    _otel_trace = None


def trace_headers(traceparent: Optional[str] = None, tracestate: Optional[str] = None) -> Dict[str, str]:
    """The trace context headers of a call: ``traceparent`` (and ``tracestate``) as given, else the
    current OpenTelemetry span's, else none. Raises ValueError for a ``traceparent`` that is not
    W3C's (``00-<32 hex>-<16 hex>-<2 hex>``, ids not all zero), or a ``tracestate`` without one or
    with what a header cannot hold (a line break, a control character, over 512 characters)."""
    tracestate = tracestate.strip() if tracestate is not None else None
    if tracestate is not None and (len(tracestate) > 512 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in tracestate)):
        raise ValueError(f"tracestate {tracestate[:40]!r}... is not W3C trace context: at most 512 printable characters")
    if traceparent is not None:
        match = _TRACEPARENT.match(traceparent.strip())
        if match is None or match.group(1) == "ff" or set(match.group(2)) == {"0"} or set(match.group(3)) == {"0"}:
            raise ValueError(
                f"traceparent {traceparent!r} is not W3C trace context: "
                "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case, ids not all zero"
            )
        headers = {"traceparent": traceparent.strip()}
        if tracestate:
            headers["tracestate"] = tracestate
        return headers
    if tracestate:
        raise ValueError("tracestate goes with a traceparent: give both, or neither")
    return _current_span()


def _current_span() -> Dict[str, str]:
    if _otel_trace is None:
        return {}
    try:
        context = _otel_trace.get_current_span().get_span_context()
        if not context.is_valid:
            return {}
        headers = {
            "traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
        }
        state = context.trace_state.to_header() if context.trace_state else ""
        if state:
            headers["tracestate"] = state
        return headers
    except Exception:  # pragma: no cover - a call never fails for its trace
        return {}
