"""Calls through Effect Ledger's HTTP gateway (``effectledger gateway``), standard library only.

A call is ``POST /v1/tools/{tool}/calls`` with the step and the arguments; the gateway derives the
key from them (with the tool's key rules from the ledger's policy) and the caller's tenant, so a
retry of the same call, from this process or another, is the same key. This client retries what
is safe to retry, the same request each time: a connection lost or timed out, a 503. It never
re-keys: a call is only ever sent again with the same step and arguments, or attached to by key.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from .errors import CallError, GatewayError, KeyDerivationError, Unavailable
from .keys import StepContext
from .tracing import trace_headers

_KEY_ERRORS = {"ARGUMENTS_NOT_JSON", "ARGUMENTS_NOT_OBJECT", "MISSING_REQUIRED_FIELD"}


@dataclass(frozen=True)
class Succeeded:
    """The effect happened once; ``replayed`` when this answer is the stored result of an
    earlier call with the same key."""

    key: str
    result: Any
    effect_id: Optional[str]
    replayed: bool
    attempts: int


@dataclass(frozen=True)
class Failed:
    """The tool failed for good (HTTP 424); calling again with the same step replays this."""

    key: str
    error: Optional[CallError]
    replayed: bool


@dataclass(frozen=True)
class HeldUnknown:
    """Whether the effect happened is not known; the ledger holds the key until reconciliation
    says. Do not call with a new step: attach to ``key`` later."""

    key: str
    error: Optional[CallError]
    replayed: bool


@dataclass(frozen=True)
class Rejected:
    """The ledger refused the intent (key reused with other arguments, a policy refusal)."""

    key: str
    error: Optional[CallError]
    status: int


@dataclass(frozen=True)
class StillRunning:
    """Still in flight when the wait ended (HTTP 202): attach to ``key`` (``location``) to get
    the result; the effect takes place at most once either way."""

    key: str
    location: str


CallResult = Union[Succeeded, Failed, HeldUnknown, Rejected, StillRunning]


class GatewayClient:
    """One gateway (or a load balancer in front of several).

    ``token``: the bearer token the gateway maps to a tenant. ``wait``: how long a call waits for
    its result at the gateway (``Prefer: wait``, capped by the gateway's maximum). ``retries``:
    how many times a request is sent again after a lost connection or a 503, ``backoff`` the first
    pause (doubling, at most ``Retry-After``'s when the gateway gives one, at most 30 s).
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        wait: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        connect_timeout: float = 10.0,
        user_agent: str = "effectledger-python/0.1",
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be http:// or https://, not {url!r}")
        self.url = url.rstrip("/")
        self._token = token
        self.wait = wait
        self.retries = retries
        self.backoff = backoff
        self.connect_timeout = connect_timeout
        self.user_agent = user_agent

    # -- the two operations -------------------------------------------------------------------

    def call(
        self,
        step: StepContext,
        tool: str,
        arguments: Union[Mapping[str, Any], str],
        *,
        wait: Optional[float] = None,
        idempotency_key: Optional[str] = None,
        bypass_approval: Optional[str] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> CallResult:
        """Calls ``tool`` once for ``step``: a retry of this call (here, after a crash, from
        another process) gets the first call's result, never a second effect. ``arguments`` is a
        dict or JSON text. ``idempotency_key``: the caller's own key instead of the derived one.
        ``bypass_approval``: an operator's approval for a deliberate second execution of a settled
        call (once per approval, where the tool's policy allows bypass; otherwise a
        :class:`Rejected` result with ``BYPASS_NOT_ALLOWED``). ``traceparent`` and
        ``tracestate``: the agent's trace (W3C), when not the current OpenTelemetry span's.
        Raises :class:`GatewayError` when the gateway refuses the request itself,
        :class:`KeyDerivationError` when the arguments cannot give a key, :class:`Unavailable`
        when it cannot be reached within the retries."""
        if not isinstance(tool, str) or not tool:
            raise ValueError("tool must be set")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as e:
                raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"arguments are not JSON: {e}") from None
        body = {
            "arguments": arguments,
            "step": {"run": step.run_id, "step": step.step_id, "scope": step.scope},
        }
        if bypass_approval is not None:
            if not isinstance(bypass_approval, str) or not bypass_approval.strip():
                raise ValueError("bypass_approval must be an operator's approval; leave it out for a normal call")
            body["bypassApproval"] = bypass_approval
        try:
            payload = json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"arguments are not JSON: {e}") from None
        headers = {"Content-Type": "application/json", **trace_headers(traceparent, tracestate)}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        path = "/v1/tools/" + urllib.parse.quote(tool, safe="") + "/calls"
        wait = self.wait if wait is None else wait
        status, response_headers, answer = self._send("POST", path, wait, payload, headers)
        if status == 409 and answer.get("key"):
            # The same call is in flight (a retry of ours raced the first): wait for it by key.
            return self.attach(answer["key"], wait=wait)
        return self._result(status, response_headers, answer)

    def attach(
        self, key: str, *, wait: Optional[float] = None, location: Optional[str] = None
    ) -> CallResult:
        """Waits for the call with ``key`` (published through any gateway instance) and returns
        its result; a caller that lost its connection resumes here instead of sending again.

        Pass a ``StillRunning``'s ``location`` to attach to that call's own intent: the gateway
        then does not take a release of the key's earlier life (made before the ledger read this
        call's intent) as the call's answer. Without it, any final answer of the key is taken."""
        if location is not None:
            if not location.startswith("/v1/calls/"):
                raise ValueError("location is a gateway's /v1/calls/... Location, got " + repr(location))
            path = location
        else:
            path = "/v1/calls/" + urllib.parse.quote(key, safe="")
        wait = self.wait if wait is None else wait
        status, headers, answer = self._send("GET", path, wait, None, {})
        return self._result(status, headers, answer)

    # -- HTTP -----------------------------------------------------------------------------------

    def _send(self, method, path, wait, payload, headers):
        headers = dict(headers)
        headers["Authorization"] = "Bearer " + self._token
        headers["Accept"] = "application/json, application/problem+json"
        headers["User-Agent"] = self.user_agent
        headers["Prefer"] = f"wait={max(0, int(wait))}"
        pause = self.backoff
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(pause)
                pause = min(pause * 2, 30.0)
            request = urllib.request.Request(self.url + path, data=payload, method=method, headers=headers)
            try:
                # The socket waits longer than the gateway holds the call.
                with urllib.request.urlopen(request, timeout=wait + self.connect_timeout) as response:
                    return response.status, response.headers, _json(response.read())
            except urllib.error.HTTPError as e:
                answer = _json(e.read())
                if e.code in (502, 503) and attempt < self.retries:
                    last = f"HTTP {e.code}: {answer.get('detail', '')}"
                    pause = max(pause, min(_retry_after(e.headers), 30.0))
                    continue
                return e.code, e.headers, answer
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
                continue
        raise Unavailable(
            f"{method} {path}: no answer after {self.retries + 1} attempts ({last}); "
            "call again with the same step, never a new one"
        )

    def _result(self, status: int, headers, answer: Mapping[str, Any]) -> CallResult:
        replayed = (headers.get("Idempotent-Replayed") or "").lower() == "true"
        if status == 200:
            return Succeeded(
                key=answer["key"],
                result=answer.get("result"),
                effect_id=answer.get("effectId"),
                replayed=replayed or bool(answer.get("replayed")),
                attempts=int(answer.get("attempts", 0)),
            )
        if status == 202:
            if answer.get("status") == "UNKNOWN":
                return HeldUnknown(answer["key"], CallError.of(answer.get("error")), replayed)
            location = headers.get("Location") or "/v1/calls/" + urllib.parse.quote(answer["key"], safe="")
            return StillRunning(answer["key"], location)
        call = answer.get("call") or {}
        if status == 424:
            return Failed(answer.get("key", call.get("key", "")), CallError.of(answer), replayed)
        if call:
            # The ledger answered: it refused the intent (422 key reused, 400, 409, 500).
            return Rejected(answer.get("key", call.get("key", "")), CallError.of(answer), status)
        if status == 400 and answer.get("code") in _KEY_ERRORS:
            raise KeyDerivationError(answer["code"], str(answer.get("detail", "")))
        raise GatewayError(status, answer)


def _json(raw: bytes) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {"detail": raw[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"detail": str(value)}


def _retry_after(headers) -> float:
    try:
        return float(headers.get("Retry-After", "0"))
    except (TypeError, ValueError):
        return 0.0
