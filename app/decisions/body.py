"""Decision request bodies: strict JSON parsing before any protocol rule (SPEC §8).

:func:`parse_body` turns the raw HTTP body into a Python object, refusing what a plain
``json.loads`` would hide: duplicate keys (``object_pairs_hook``), ``NaN``/``Infinity``
(``parse_constant``) and numbers outside the finite double range, bodies over 1 MiB (413),
nesting over 16, more than 1,000 members in one object or array, control characters in
strings other than ``\\n``, ``\\r``, ``\\t``, lone surrogates, non-UTF-8.
:func:`check_json_value` applies the same limits to a value that arrived already parsed
(GraphQL's JSON scalar). :mod:`app.decisions.request` then checks the protocol structure.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cairn.app.decisions.errors import DecisionBodyTooLarge, DecisionInputError

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 16
MAX_MEMBERS = 1000
_MAX_DOUBLE = 1.7976931348623157e308
_ALLOWED_CONTROLS = frozenset("\n\r\t")


def _bad(message: str, field: str, **extra: Any) -> DecisionInputError:
    return DecisionInputError(message, field=field, **extra)


# ---------------------------------------------------------------------------------- parsing


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len(pairs) > MAX_MEMBERS:
        raise _bad(
            f"a JSON object has {len(pairs)} members; at most {MAX_MEMBERS} are allowed", "body", limit=MAX_MEMBERS
        )
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _bad(f"duplicate JSON key {key!r}; every key may appear once per object", "body")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _bad(f"{name} is not a finite number; numbers must be finite doubles", "body")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _bad(f"number {text[:40]} is outside the finite double range", "body")
    return value


def _int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # over Python's digit limit: certainly outside the double range
        raise _bad(f"number {text[:40]}… is outside the finite double range", "body") from None
    if abs(value) > _MAX_DOUBLE:
        raise _bad(f"number {text[:40]} is outside the finite double range", "body")
    return value


def _check_string(s: str, path: str) -> None:
    for i, ch in enumerate(s):
        o = ord(ch)
        if (o < 0x20 or o == 0x7F) and ch not in _ALLOWED_CONTROLS:
            raise _bad(
                f"{path} contains control character U+{o:04X} at offset {i}; only \\n, \\r and \\t are "
                "allowed in strings",
                path,
            )
        if 0xD800 <= o <= 0xDFFF:
            raise _bad(f"{path} contains an unpaired surrogate; strings must be valid Unicode", path)


def _walk(value: Any) -> None:
    """Depth, array size and string checks over the parsed tree (iterative)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "body")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > MAX_DEPTH:
                raise _bad(f"JSON nesting is deeper than {MAX_DEPTH} levels at {path}", path, limit=MAX_DEPTH)
            if isinstance(node, list):
                if len(node) > MAX_MEMBERS:
                    raise _bad(
                        f"{path} has {len(node)} items; at most {MAX_MEMBERS} are allowed", path, limit=MAX_MEMBERS
                    )
                stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(node))
            else:
                for k, v in node.items():
                    _check_string(k, f"{path} key")
                    stack.append((v, depth + 1, f"{path}.{k}" if path != "body" else k))
        elif isinstance(node, str):
            _check_string(node, path)


def parse_body(raw: bytes) -> dict[str, Any]:
    """Parse a raw decision request body.

    Args:
        raw: The exact request bytes.

    Returns:
        The JSON object (dicts, lists, str, int, float, bool, None).

    Raises:
        DecisionBodyTooLarge: over 1 MiB (413).
        DecisionInputError: not one UTF-8 JSON object, or outside a structural limit.
    """
    if len(raw) > MAX_BODY_BYTES:
        raise DecisionBodyTooLarge(
            f"request body is {len(raw)} bytes; at most {MAX_BODY_BYTES} (1 MiB)", field="body", limit=MAX_BODY_BYTES
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"request body is not valid UTF-8 (byte {exc.start})", "body") from None
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs_hook, parse_constant=_constant, parse_float=_float, parse_int=_int
        )
    except RecursionError:
        raise _bad(f"JSON nesting is deeper than {MAX_DEPTH} levels", "body", limit=MAX_DEPTH) from None
    except ValueError as exc:
        if isinstance(exc.__context__, DecisionInputError):  # pragma: no cover - defensive
            raise exc.__context__ from None
        raise _bad(f"request body is not valid JSON: {exc}", "body") from None
    if not isinstance(value, dict):
        raise _bad("request body must be one JSON object {state | sessionId, questions}", "body")
    _walk(value)
    return value


def check_json_value(value: Any, path: str) -> None:
    """Apply the body limits (depth, members, finite numbers, strings) to an already-parsed value.

    Used for the GraphQL ``state`` JSON scalar, which Strawberry parses itself.

    Raises:
        DecisionInputError: naming ``path``.
    """
    stack: list[tuple[Any, int, str]] = [(value, 2, path)]
    while stack:
        node, depth, p = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise _bad(f"JSON nesting is deeper than {MAX_DEPTH} levels at {p}", p, limit=MAX_DEPTH)
            if len(node) > MAX_MEMBERS:
                raise _bad(f"{p} has {len(node)} members; at most {MAX_MEMBERS}", p, limit=MAX_MEMBERS)
            for k, v in node.items():
                _check_string(str(k), f"{p} key")
                stack.append((v, depth + 1, f"{p}.{k}"))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise _bad(f"JSON nesting is deeper than {MAX_DEPTH} levels at {p}", p, limit=MAX_DEPTH)
            if len(node) > MAX_MEMBERS:
                raise _bad(f"{p} has {len(node)} items; at most {MAX_MEMBERS}", p, limit=MAX_MEMBERS)
            stack.extend((v, depth + 1, f"{p}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, str):
            _check_string(node, p)
        elif isinstance(node, float) and not math.isfinite(node):
            raise _bad(f"{p} is not a finite number", p)
