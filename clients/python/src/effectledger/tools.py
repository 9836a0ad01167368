"""Framework glue: the orchestrator's step in a context variable, and a decorator that turns a
tool function into an exactly-once call through the gateway.

    with effectledger.step("acme", run_id=run.id, step_id="pay-invoice"):
        charge_card(amount=1000, currency="EUR", to="cus_42")

The wrapped function's parameters are the tool's arguments; its body is not run by the agent (the
ledger's executor performs the effect, once). It returns the tool's result, or raises a
:class:`~effectledger.errors.CallNotDone` subclass.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
from typing import Any, Callable, Iterator, Optional, TypeVar, Union

from .errors import CallRejected, CallStillRunning, EffectHeld, ToolFailed
from .gateway import Failed, GatewayClient, HeldUnknown, Rejected, StillRunning, Succeeded
from .keys import StepContext

current_step: contextvars.ContextVar[Optional[StepContext]] = contextvars.ContextVar(
    "effectledger_step", default=None
)

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def step(tenant: str, run_id: str, step_id: str, scope: str = "") -> Iterator[StepContext]:
    """Sets the step for the calls made inside it (per thread and per asyncio task). Take
    ``run_id`` and ``step_id`` from the orchestrator's durable run (LangGraph's thread and node,
    a Temporal workflow and activity id): they must be the same when the run is replayed."""
    context = StepContext(tenant, run_id, step_id, scope)
    token = current_step.set(context)
    try:
        yield context
    finally:
        current_step.reset(token)


def exactly_once(
    client: GatewayClient,
    tool: Optional[str] = None,
    *,
    scope: Union[None, str, Callable[[dict], str]] = None,
    wait: Optional[float] = None,
) -> Callable[[F], F]:
    """Wraps a tool function (sync or async) so that calling it publishes one call of ``tool``
    (the function's name by default) for the current :func:`step`, with the bound arguments."""

    def wrap(fn: F) -> F:
        name = tool or fn.__name__
        signature = inspect.signature(fn)

        def invoke(args, kwargs):
            context = current_step.get()
            if context is None:
                raise RuntimeError(
                    f"{name} was called outside effectledger.step(...): the step is part of the "
                    "key, so a call needs the orchestrator's run and step"
                )
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = {}
            for param, value in bound.arguments.items():
                if signature.parameters[param].kind is inspect.Parameter.VAR_KEYWORD:
                    arguments.update(value)
                elif signature.parameters[param].kind is inspect.Parameter.VAR_POSITIONAL:
                    raise TypeError(f"{name}: *args cannot be named arguments of a tool")
                else:
                    arguments[param] = value
            if scope is not None:
                context = dataclasses.replace(
                    context, scope=scope(arguments) if callable(scope) else scope
                )
            return _unwrap(name, client.call(context, name, arguments, wait=wait))

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def call_async(*args, **kwargs):
                # The context variable travels into the worker thread (to_thread copies it).
                return await asyncio.to_thread(invoke, args, kwargs)

            call_async.tool_name = name  # type: ignore[attr-defined]
            return call_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def call(*args, **kwargs):
            return invoke(args, kwargs)

        call.tool_name = name  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


def _unwrap(name: str, result: Any) -> Any:
    if isinstance(result, Succeeded):
        return result.result
    if isinstance(result, Failed):
        raise ToolFailed(f"{name} failed: {_describe(result.error)}", result)
    if isinstance(result, HeldUnknown):
        raise EffectHeld(
            f"{name}: whether it took effect is not known yet; held for reconciliation "
            f"(key {result.key}). Attach to the key later; do not call it with a new step.",
            result,
        )
    if isinstance(result, Rejected):
        raise CallRejected(f"{name} was refused: {_describe(result.error)}", result)
    if isinstance(result, StillRunning):
        raise CallStillRunning(
            f"{name} is still running (key {result.key}); attach to the key for its result", result
        )
    raise TypeError(f"unexpected result {result!r}")


def _describe(error: Any) -> str:
    if error is None:
        return "no detail"
    return f"{error.code}: {error.message}" + (
        f" ({error.corrective_action})" if error.corrective_action else ""
    )
