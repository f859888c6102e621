"""Ontology property types, their operators, and value coercion (SPEC §6).

Property types and how values are stored in an instance's JSON:

=========  ==========================================  ===============================
type       stored as                                   comparison
=========  ==========================================  ===============================
string     str                                         equality, ``like``, ``prefix``
integer    int                                         numeric order
float      float                                       numeric order
boolean    bool                                        equality
date       ``YYYY-MM-DD`` str                          calendar order (ISO sorts right)
datetime   ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (UTC)  time order (ISO UTC sorts right)
=========  ==========================================  ===============================

Operators per property (:func:`condition_operations`): every type has ``==``, ``!=``,
``in``, ``not_in``, ``exist``, ``not_exist``; ordered types (integer, float, date,
datetime) add ``>``, ``>=``, ``<``, ``<=``, ``range`` (inclusive ``[low, high]``); strings
add ``like`` / ``not_like`` (SQL wildcards ``%`` and ``_``, case-insensitive) and
``prefix``. ``match`` and ``multi_match`` exist only on properties with a full-text index;
``knn`` only on properties with a vector index whose embedding model loads.

Null semantics (as in a search engine's ``must_not``): a missing/null value satisfies no
positive operator and every negation (``!=``, ``not_in``, ``not_like``).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime
from typing import Any

from cairn.app.core.errors import BadInput, CairnError

PROPERTY_TYPES = ("string", "integer", "float", "boolean", "date", "datetime")
ORDERED_TYPES = frozenset({"integer", "float", "date", "datetime"})
BASE_OPS = ("==", "!=", "in", "not_in", "exist", "not_exist")
ORDER_OPS = (">", ">=", "<", "<=", "range")
STRING_OPS = ("like", "not_like", "prefix")
TEXT_OPS = ("match", "multi_match")
VECTOR_OPS = ("knn",)
ALL_OPS = BASE_OPS + ORDER_OPS + STRING_OPS + TEXT_OPS + VECTOR_OPS
NO_VALUE_OPS = frozenset({"exist", "not_exist"})
LIST_OPS = frozenset({"in", "not_in"})
MAX_IN_VALUES = 1_000

_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")


class InvalidCondition(CairnError):
    """A condition names an operator the property does not support (400 ``INVALID_CONDITION``)."""

    code = "INVALID_CONDITION"
    http_status = 400


def check_identifier(value: str, field: str) -> str:
    """Refuse ids that are not ``[A-Za-z][A-Za-z0-9_-]{0,63}``.

    Raises:
        BadInput: naming ``field`` and the pattern.
    """
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise BadInput(
            f"{field} must match [A-Za-z][A-Za-z0-9_-]{{0,63}}, got {value!r}",
            field=field,
            limit="[A-Za-z][A-Za-z0-9_-]{0,63}",
        )
    return value


def condition_operations(prop: dict[str, Any], *, vectors_available: bool) -> list[str]:
    """The operators a property supports (see module doc).

    Args:
        prop: ``{name, type, fullText, vector}``.
        vectors_available: Whether the embedding model of the vector index loads.
    """
    ops = list(BASE_OPS)
    if prop["type"] in ORDERED_TYPES:
        ops += ORDER_OPS
    if prop["type"] == "string":
        ops += STRING_OPS
    if prop.get("fullText"):
        ops += TEXT_OPS
    if prop.get("vector") and vectors_available:
        ops += VECTOR_OPS
    return ops


def coerce_stored(value: Any, ptype: str, *, field: str) -> Any:
    """Convert a source value (CSV text, SQL value) to the stored form of ``ptype``.

    Empty strings and None become None (SQL NULL, an empty CSV field).

    Raises:
        BadInput: the value does not parse as ``ptype``, naming ``field``.
    """
    if value is None or (isinstance(value, str) and value == "" and ptype != "string"):
        return None
    if isinstance(value, str) and value == "":
        return None
    try:
        if ptype == "string":
            return value if isinstance(value, str) else str(value)
        if ptype == "integer":
            if isinstance(value, bool):
                return int(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError("not an integer")
                return int(value)
            return int(str(value).strip())
        if ptype == "float":
            number = float(value)
            if not math.isfinite(number):
                raise ValueError("not a finite number")
            return number
        if ptype == "boolean":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "t", "yes", "y"):
                return True
            if text in ("0", "false", "f", "no", "n"):
                return False
            raise ValueError("not a boolean")
        if ptype == "date":
            if isinstance(value, datetime):
                return value.date().isoformat()
            if isinstance(value, date):
                return value.isoformat()
            return date.fromisoformat(str(value).strip()[:10]).isoformat()
        if ptype == "datetime":
            dt = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return dt.astimezone(UTC).isoformat(timespec="microseconds")
    except (ValueError, TypeError):
        raise BadInput(f"{field}: {value!r} is not a valid {ptype}", field=field) from None
    raise BadInput(f"{field}: unknown property type {ptype!r}; use one of {', '.join(PROPERTY_TYPES)}", field=field)


def coerce_query_value(value: Any, ptype: str, *, field: str, operation: str) -> Any:
    """Check and convert one condition value to the stored form of the property's type.

    Strings must be strings, numbers numbers (an integer property refuses 1.5), booleans
    booleans; dates/datetimes ISO 8601 strings (a datetime needs a timezone).

    Raises:
        InvalidCondition: the value does not fit the property, naming field and operator.
    """

    def bad(why: str) -> InvalidCondition:
        return InvalidCondition(f"condition on {field!r} with {operation!r}: {why}", field=field, operation=operation)

    if value is None:
        raise bad("value is null; use exist / not_exist to test for missing values")
    if ptype == "string":
        if not isinstance(value, str):
            raise bad(f"value must be a string, got {type(value).__name__}")
        return value
    if ptype == "boolean":
        if not isinstance(value, bool):
            raise bad(f"value must be true or false, got {value!r}")
        return value
    if ptype in ("integer", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(f"value must be a number, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise bad(f"value must be a finite number, got {value!r}")
        if ptype == "integer" and isinstance(value, float) and not value.is_integer():
            raise bad(f"value must be an integer, got {value!r}")
        if ptype == "integer":
            return int(value)
        try:
            return float(value)
        except OverflowError:
            raise bad(f"value must be a finite number; {str(value)[:20]}… is outside the double range") from None
    if not isinstance(value, str):
        raise bad(f"value must be an ISO 8601 {ptype} string, got {value!r}")
    try:
        if ptype == "date":
            return date.fromisoformat(value).isoformat()
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise bad(f"{value!r} is not an ISO 8601 {ptype}") from None
    if dt.tzinfo is None:
        raise bad(f"{value!r} needs a timezone (e.g. 2025-01-01T00:00:00Z)")
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


class LikePattern:
    """An SQL ``LIKE`` pattern (``%`` any run, ``_`` one character, ``\\`` escapes), matched
    case-insensitively against a whole string in linear-ish time.

    The pattern is split at ``%`` into segments of fixed length (literals and ``_``); the
    first must match at the start, the last at the end, and each middle one is searched
    leftmost after the previous — greedy leftmost matching is exact for such globs, and no
    regex ever holds two adjacent wildcards, so a pattern like ``%_%_%_%Z`` cannot
    backtrack exponentially (translated to one regex it took 18 s on one Northwind query,
    with the event loop blocked). Cost: O(len(text) × len(pattern)) in C.
    """

    def __init__(self, pattern: str) -> None:
        segments: list[list[str]] = [[]]
        escaped = False
        for ch in pattern:
            if escaped:
                segments[-1].append(re.escape(ch))
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "%":
                segments.append([])
            elif ch == "_":
                segments[-1].append(".")
            else:
                segments[-1].append(re.escape(ch))
        if escaped:
            segments[-1].append(re.escape("\\"))
        self._parts = [re.compile("".join(seg), re.IGNORECASE | re.DOTALL) for seg in segments]
        self._last_len = len(segments[-1])

    def match(self, text: str) -> bool:
        """Whether the whole of ``text`` matches the pattern."""
        parts = self._parts
        if len(parts) == 1:
            return parts[0].fullmatch(text) is not None
        first = parts[0].match(text)
        if first is None:
            return False
        pos = first.end()
        for middle in parts[1:-1]:
            found = middle.search(text, pos)
            if found is None:
                return False
            pos = found.end()
        start = len(text) - self._last_len
        return start >= pos and parts[-1].fullmatch(text, start) is not None
