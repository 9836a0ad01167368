"""Typed errors, with the codes the Java client and the ledger use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional


class EffectLedgerError(Exception):
    """Base of every error this package raises."""


class KeyDerivationError(EffectLedgerError, ValueError):
    """The arguments cannot give a key: ``code`` is ``ARGUMENTS_NOT_JSON``,
    ``ARGUMENTS_NOT_OBJECT`` or ``MISSING_REQUIRED_FIELD``, as in the Java client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class CallError:
    """The ledger's or the tool's error, as the gateway answers it."""

    code: str
    message: str
    retriable: bool
    corrective_action: str

    @staticmethod
    def of(body: Optional[Mapping[str, Any]]) -> Optional["CallError"]:
        if not body:
            return None
        return CallError(
            code=str(body.get("code", "")),
            message=str(body.get("message", body.get("detail", ""))),
            retriable=bool(body.get("retriable", False)),
            corrective_action=str(body.get("correctiveAction", "")),
        )


class GatewayError(EffectLedgerError):
    """The gateway refused the request itself (RFC 9457 problem): a bad credential (401/403), an
    unknown tool (404), an invalid body or header (400), a body too large (413), a wrong media type
    (415). Nothing was published; sending the same request again gets the same answer."""

    def __init__(self, status: int, problem: Mapping[str, Any]) -> None:
        self.status = status
        self.problem = dict(problem)
        self.code = str(problem.get("code") or problem.get("type", "").rsplit(":", 1)[-1])
        self.field = problem.get("field")
        self.detail = str(problem.get("detail", ""))
        super().__init__(f"HTTP {status} {self.code}: {self.detail}")


class Unavailable(EffectLedgerError):
    """The gateway, the ledger or the broker could not be reached within the client's retries.
    The call may or may not have been published: call again with the same step (the same key),
    or attach to ``key`` when it is known; never with a new step."""

    def __init__(self, message: str, key: Optional[str] = None) -> None:
        super().__init__(message)
        self.key = key


class CallNotDone(EffectLedgerError):
    """Raised by a tool wrapped with :func:`effectledger.exactly_once` when the call did not
    succeed; ``result`` is the :class:`~effectledger.gateway.CallResult` with the details."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result
        self.key = getattr(result, "key", None)
        self.error = getattr(result, "error", None)


class ToolFailed(CallNotDone):
    """The tool failed for good; the same step gets the same failure."""


class EffectHeld(CallNotDone):
    """Whether the effect happened is unknown; held for reconciliation. Attach to ``key`` later."""


class CallRejected(CallNotDone):
    """The ledger refused the call (key reused with other arguments, policy)."""


class CallStillRunning(CallNotDone):
    """Still in flight at the end of the wait; attach to ``key`` for the result."""
