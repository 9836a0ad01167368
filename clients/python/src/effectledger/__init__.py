"""Effect Ledger's Python client: the same idempotency keys as every other client, and calls
through the HTTP gateway that take effect once however often they are retried."""

from .errors import (
    CallError,
    CallNotDone,
    CallRejected,
    CallStillRunning,
    EffectHeld,
    EffectLedgerError,
    GatewayError,
    KeyDerivationError,
    ToolFailed,
    Unavailable,
)
from .gateway import (
    CallResult,
    Failed,
    GatewayClient,
    HeldUnknown,
    Rejected,
    StillRunning,
    Succeeded,
)
from .keys import DerivedKey, KeyRules, StepContext, derive
from .tools import current_step, exactly_once, step

__all__ = [
    "CallError",
    "CallNotDone",
    "CallRejected",
    "CallResult",
    "CallStillRunning",
    "EffectHeld",
    "Failed",
    "GatewayClient",
    "HeldUnknown",
    "Rejected",
    "StillRunning",
    "Succeeded",
    "ToolFailed",
    "current_step",
    "exactly_once",
    "step",
    "DerivedKey",
    "EffectLedgerError",
    "GatewayError",
    "KeyDerivationError",
    "KeyRules",
    "StepContext",
    "Unavailable",
    "derive",
]
