"""Idempotency key derivation, version 1 (docs/key-derivation.md of Effect Ledger).

The JSON Canonicalization Scheme (RFC 8785) is written here rather than taken from a package: the
client uses the standard library only (no PyPI package is a dependency), and the one library made
for it (``rfc8785``) is not packaged by Debian. It is checked against the project's shared vectors
(``clients/key-vectors.json``), the same file the Java and TypeScript clients are held to.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Tuple, Union

from .errors import KeyDerivationError

VERSION_PREFIX = "v1:"
MAX_DEPTH = 100

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_INDEX = re.compile(r"^(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class StepContext:
    """Where in an agent run a call happens: the run and the logical step, from the orchestrator,
    never from the model and never random. ``scope`` is what the effect is about, "" for none."""

    tenant: str
    run_id: str
    step_id: str
    scope: str = ""

    def __post_init__(self) -> None:
        for name in ("tenant", "run_id", "step_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be set: it is part of the idempotency key")
        if not isinstance(self.scope, str):
            raise ValueError('scope must be a string ("" for none)')


@dataclass(frozen=True)
class KeyRules:
    """A tool's key rules, the same JSON pointers as its ``key:`` in the ledger's tools.yaml:
    ``ignore`` (volatile fields left out of the key) and ``require`` (fields that must be set)."""

    ignore: Tuple[str, ...] = ()
    require: Tuple[str, ...] = ()

    def __init__(self, ignore: Iterable[str] = (), require: Iterable[str] = ()) -> None:
        object.__setattr__(self, "ignore", tuple(ignore))
        object.__setattr__(self, "require", tuple(require))
        for pointer in self.ignore + self.require:
            if not isinstance(pointer, str) or not pointer.startswith("/"):
                raise ValueError(f"'{pointer}' is not a JSON pointer; write it like /reason")
        both = set(self.ignore) & set(self.require)
        if both:
            raise ValueError(f"argument {sorted(both)[0]} is both ignored and required")


NO_RULES = KeyRules()


@dataclass(frozen=True)
class DerivedKey:
    key: str
    canonical_arguments: str
    arguments_hash: str


Arguments = Union[str, bytes, Mapping[str, Any]]


def derive(step: StepContext, tool: str, arguments: Arguments, rules: KeyRules = NO_RULES) -> DerivedKey:
    """The key of one logical action: ``tool`` called with ``arguments`` (JSON text or a dict) at
    ``step``. Raises :class:`KeyDerivationError` as the ledger would refuse the arguments."""
    if not isinstance(tool, str) or not tool.strip():
        raise ValueError("tool must be set: it is part of the idempotency key")
    args = parse(arguments)
    if not isinstance(args, dict):
        raise KeyDerivationError(
            "ARGUMENTS_NOT_OBJECT", "arguments must be a JSON object of named arguments"
        )
    for pointer in rules.ignore:
        _remove(args, pointer)
    for pointer in rules.require:
        found, value = _at(args, pointer)
        if not found or value is None:
            raise KeyDerivationError(
                "MISSING_REQUIRED_FIELD",
                f"tool {tool} needs argument {pointer} to tell one action from another",
            )
    canonical_arguments = canonicalize(args)
    preimage = canonicalize(
        {
            "args": args,
            "runId": step.run_id,
            "scope": step.scope,
            "stepId": step.step_id,
            "tenant": step.tenant,
            "tool": tool,
            "v": 1,
        }
    )
    digest = hashlib.sha256(preimage.encode("utf-8")).digest()
    return DerivedKey(
        key=VERSION_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("="),
        canonical_arguments=canonical_arguments,
        arguments_hash="sha256:" + hashlib.sha256(canonical_arguments.encode("utf-8")).hexdigest(),
    )


def parse(arguments: Arguments) -> Any:
    """JSON text (or a dict, serialized first) to values, refusing what is not I-JSON: numbers a
    double cannot hold, unpaired surrogates, nesting deeper than 100, trailing content. Every
    number becomes a float, as JCS reads numbers as IEEE-754 doubles."""
    if isinstance(arguments, Mapping):
        try:
            arguments = json.dumps(arguments, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"arguments are not JSON: {e}") from None
    if isinstance(arguments, bytes):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as e:
            raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"arguments are not UTF-8: {e}") from None
    if not isinstance(arguments, str):
        raise KeyDerivationError("ARGUMENTS_NOT_JSON", "arguments must be JSON text or a dict")
    if not arguments.strip():
        raise KeyDerivationError("ARGUMENTS_NOT_JSON", "arguments are empty")
    try:
        value = json.loads(arguments, parse_int=float, parse_constant=_no_constant)
    except RecursionError:
        raise KeyDerivationError(
            "ARGUMENTS_NOT_JSON", f"arguments are nested deeper than {MAX_DEPTH} levels"
        ) from None
    except ValueError as e:
        raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"arguments are not JSON: {e}") from None
    _check(value, 1)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check(value: Any, depth: int) -> None:
    if isinstance(value, (dict, list)):
        if depth > MAX_DEPTH:
            raise KeyDerivationError(
                "ARGUMENTS_NOT_JSON", f"arguments are nested deeper than {MAX_DEPTH} levels"
            )
        if isinstance(value, dict):
            for k, v in value.items():
                _check_text(k)
                _check(v, depth + 1)
        else:
            for v in value:
                _check(v, depth + 1)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise KeyDerivationError(
                "ARGUMENTS_NOT_JSON",
                "arguments hold a number beyond the range of a double; send it as a string",
            )
    elif isinstance(value, str):
        _check_text(value)


def _check_text(text: str) -> None:
    match = _LONE_SURROGATE.search(text)
    if match:
        raise KeyDerivationError(
            "ARGUMENTS_NOT_JSON",
            f"arguments hold an unpaired UTF-16 surrogate (\\u{ord(match.group()):04x}), "
            "which is not Unicode text",
        )


# --- RFC 8785 -------------------------------------------------------------------------------


def canonicalize(value: Any) -> str:
    """The RFC 8785 form of a parsed JSON value (from :func:`parse`)."""
    out: List[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: List[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, float)):
        out.append(number(float(value)))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, list):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _write(v, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        # Members sorted by their UTF-16 code units (RFC 8785 3.2.3), not by code points.
        for i, k in enumerate(sorted(value, key=lambda s: s.encode("utf-16-be"))):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(value[k], out)
        out.append("}")
    else:
        raise KeyDerivationError("ARGUMENTS_NOT_JSON", f"{type(value).__name__} is not JSON")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(s: str) -> str:
    parts = ['"']
    for c in s:
        if c in _ESCAPES:
            parts.append(_ESCAPES[c])
        elif c < " ":
            parts.append(f"\\u{ord(c):04x}")
        else:
            parts.append(c)
    parts.append('"')
    return "".join(parts)


def number(d: float) -> str:
    """ECMAScript's Number::toString for a finite double, which RFC 8785 prescribes: the shortest
    digits that read back as ``d`` (Python's ``repr`` finds the same digits), laid out as
    ECMAScript does (``1e+21`` but ``100000000000000000000``, ``1e-7`` but ``0.000001``)."""
    if not math.isfinite(d):
        raise KeyDerivationError("ARGUMENTS_NOT_JSON", "NaN and Infinity are not JSON")
    if d == 0:
        return "0"  # -0 too
    sign = "-" if d < 0 else ""
    mantissa, _, exp = repr(abs(d)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # value = 0.digits * 10^n
    n = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
    n += int(exp) if exp else 0
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e > 0 else "-") + str(abs(e))
    return sign + body


# --- JSON pointers (RFC 6901) -----------------------------------------------------------------


def _tokens(pointer: str) -> List[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _step(node: Any, token: str) -> Tuple[bool, Any]:
    if isinstance(node, dict):
        return (token in node, node.get(token))
    if isinstance(node, list) and _INDEX.match(token) and int(token) < len(node):
        return (True, node[int(token)])
    return (False, None)


def _at(root: Any, pointer: str) -> Tuple[bool, Any]:
    node = root
    for token in _tokens(pointer):
        found, node = _step(node, token)
        if not found:
            return (False, None)
    return (True, node)


def _remove(root: Any, pointer: str) -> None:
    tokens = _tokens(pointer)
    if not tokens:
        return
    parent = root
    for token in tokens[:-1]:
        found, parent = _step(parent, token)
        if not found:
            return
    last = tokens[-1]
    if isinstance(parent, dict):
        parent.pop(last, None)
    elif isinstance(parent, list) and _INDEX.match(last) and int(last) < len(parent):
        del parent[int(last)]
