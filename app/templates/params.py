"""Typed template parameters: their declaration (set by an admin) and the values an agent sends.

A template declares up to :data:`MAX_PARAMETERS` parameters, each a JSON object (YAML or the
``parameters`` of ``createQueryTemplate``) with camelCase keys:

==========  ====================================================================
type        keys (``name`` and ``type`` always; ``description``, ``required``, ``default`` optional)
==========  ====================================================================
string      ``maxLength`` (required, 1–10,000), ``minLength`` (default 0), ``pattern`` (full match)
integer     ``min`` and ``max`` (required, within signed 64 bits)
float       ``min`` and ``max`` (required, finite)
boolean     —
date        ``min`` / ``max`` (optional ``YYYY-MM-DD``)
enum        ``values`` (1–200 distinct strings of ≤ 200 characters)
list        ``items`` (a declaration of one of the types above, without ``name``),
            ``maxItems`` (required, 1–1,000), ``minItems`` (default 1, ≥ 1)
==========  ====================================================================

A parameter with a ``default`` is optional; otherwise ``required`` defaults to true. A list
parameter is bound as an expanding ``IN :name`` list (the approval check requires that form).

Values are checked strictly, never coerced: an integer must be a JSON integer (not ``"5"``,
not ``5.0``, not ``true``), a date a ``YYYY-MM-DD`` string, a boolean ``true``/``false``. Every
refusal is a :class:`QueryParameterInvalid` naming the parameter, the limit and a ``reason``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from cairn.app.templates.errors import QueryParameterInvalid, QueryTemplateInvalid

TYPES = ("string", "integer", "float", "boolean", "date", "enum", "list")
SCALAR_TYPES = TYPES[:-1]
MAX_PARAMETERS = 20
MAX_STRING_LENGTH = 10_000
MAX_ENUM_VALUES = 200
MAX_ENUM_VALUE_LENGTH = 200
MAX_LIST_ITEMS = 1_000
MAX_PATTERN_LENGTH = 200
INT64 = (-(2**63), 2**63 - 1)
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KEYS = {
    "string": {"minLength", "maxLength", "pattern"},
    "integer": {"min", "max"},
    "float": {"min", "max"},
    "boolean": set(),
    "date": {"min", "max"},
    "enum": {"values"},
    "list": {"items", "minItems", "maxItems"},
}
_COMMON = {"name", "type", "description", "required", "default"}


@dataclass(frozen=True)
class ParameterSpec:
    """One declared parameter (see the module doc for the keys and their limits).

    ``minimum``/``maximum`` are ``int`` (integer), ``float`` (float) or ``date`` (date);
    ``items`` is the element declaration of a list (its ``name`` is the list's).
    """

    name: str
    type: str
    description: str = ""
    required: bool = True
    default: Any = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: Any = None
    maximum: Any = None
    values: tuple[str, ...] = ()
    items: ParameterSpec | None = None
    min_items: int | None = None
    max_items: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The declaration as JSON (camelCase keys, dates ISO), the inverse of :func:`parse_spec`."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.description:
            out["description"] = self.description
        for key, value in (
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("pattern", self.pattern),
            ("min", self.minimum),
            ("max", self.maximum),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
        ):
            if value is not None:
                out[key] = value.isoformat() if isinstance(value, date) else value
        if self.values:
            out["values"] = list(self.values)
        if self.items is not None:
            item = self.items.to_json()
            item.pop("name", None)
            item.pop("required", None)
            out["items"] = item
        if self.default is not None:
            out["default"] = _json_value(self.default)
        elif not self.required:
            out["required"] = False
        return out


def _json_value(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _bad(field: str, message: str) -> QueryTemplateInvalid:
    return QueryTemplateInvalid(f"{field}: {message}", field=field)


def _int_key(raw: dict, key: str, field: str, lo: int, hi: int, *, required: bool) -> int | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise _bad(f"{field}.{key}", f"is required for a {raw.get('type')} parameter ({lo}–{hi})")
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _bad(f"{field}.{key}", f"must be an integer {lo}–{hi}, got {value!r}")
    return value


def _iso_date(value: Any, field: str) -> date:
    if not isinstance(value, str | date) or (isinstance(value, str) and not _DATE_RE.match(value)):
        raise _bad(field, f"must be a YYYY-MM-DD date, got {value!r}")
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _bad(field, f"is not a calendar date: {value!r}") from None


def parse_spec(raw: Any, field: str, *, item: bool = False) -> ParameterSpec:
    """Check one declaration and build its :class:`ParameterSpec`.

    Args:
        raw: The JSON object (YAML mapping).
        field: Its input path, for messages (e.g. ``input.parameters[2]``).
        item: True for the ``items`` of a list (no ``name``, not itself a list).

    Raises:
        QueryTemplateInvalid: naming the key and the rule.
    """
    if not isinstance(raw, dict):
        raise _bad(field, "must be an object with name, type and the type's bounds")
    kind = raw.get("type")
    allowed_types = SCALAR_TYPES if item else TYPES
    if not isinstance(kind, str) or kind not in allowed_types:
        raise _bad(f"{field}.type", f"must be one of {', '.join(allowed_types)}; got {kind!r}")
    allowed = _KEYS[kind] | ({"type", "description"} if item else _COMMON)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise _bad(field, f"unknown key(s) {unknown} for a {kind} parameter; allowed: {sorted(allowed)}")
    name = raw.get("name", "")
    if not item and (not isinstance(name, str) or not NAME_RE.match(name)):
        raise _bad(f"{field}.name", f"must match {NAME_RE.pattern} (it is the :name placeholder); got {name!r}")
    description = raw.get("description") or ""
    if not isinstance(description, str) or len(description) > 500:
        raise _bad(f"{field}.description", "must be text of at most 500 characters")
    kw: dict[str, Any] = {"name": name, "type": kind, "description": description}
    if kind == "string":
        kw["max_length"] = _int_key(raw, "maxLength", field, 1, MAX_STRING_LENGTH, required=True)
        kw["min_length"] = _int_key(raw, "minLength", field, 0, kw["max_length"], required=False) or 0
        pattern = raw.get("pattern")
        if pattern is not None:
            if not isinstance(pattern, str) or not 1 <= len(pattern) <= MAX_PATTERN_LENGTH:
                raise _bad(f"{field}.pattern", f"must be a regular expression of 1–{MAX_PATTERN_LENGTH} characters")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise _bad(f"{field}.pattern", f"is not a valid regular expression ({exc})") from None
            kw["pattern"] = pattern
    elif kind == "integer":
        kw["minimum"] = _int_key(raw, "min", field, *INT64, required=True)
        kw["maximum"] = _int_key(raw, "max", field, *INT64, required=True)
    elif kind == "float":
        for key, attr in (("min", "minimum"), ("max", "maximum")):
            v = raw.get(key)
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                raise _bad(f"{field}.{key}", f"is required for a float parameter: a finite number, got {v!r}")
            kw[attr] = float(v)
    elif kind == "date":
        for key, attr in (("min", "minimum"), ("max", "maximum")):
            if raw.get(key) is not None:
                kw[attr] = _iso_date(raw[key], f"{field}.{key}")
    elif kind == "enum":
        values = raw.get("values")
        if (
            not isinstance(values, list)
            or not 1 <= len(values) <= MAX_ENUM_VALUES
            or not all(isinstance(v, str) and 1 <= len(v) <= MAX_ENUM_VALUE_LENGTH for v in values)
            or len(set(values)) != len(values)
        ):
            raise _bad(
                f"{field}.values",
                f"must be 1–{MAX_ENUM_VALUES} distinct strings of 1–{MAX_ENUM_VALUE_LENGTH} characters",
            )
        kw["values"] = tuple(values)
    elif kind == "list":
        kw["items"] = parse_spec(raw.get("items"), f"{field}.items", item=True)
        kw["max_items"] = _int_key(raw, "maxItems", field, 1, MAX_LIST_ITEMS, required=True)
        kw["min_items"] = _int_key(raw, "minItems", field, 1, kw["max_items"], required=False) or 1
    if kw.get("minimum") is not None and kw.get("maximum") is not None and kw["minimum"] > kw["maximum"]:
        raise _bad(f"{field}.min", f"must not exceed max ({kw['minimum']} > {kw['maximum']})")
    if item:
        return ParameterSpec(**kw)
    required = raw.get("required")
    if required is not None and not isinstance(required, bool):
        raise _bad(f"{field}.required", "must be true or false")
    spec = ParameterSpec(**kw, required=required if required is not None else "default" not in raw)
    if "default" in raw:
        if raw["default"] is None:
            raise _bad(f"{field}.default", "may not be null (leave it out for a required parameter)")
        if spec.required:
            raise _bad(f"{field}.required", "a parameter with a default is optional: drop required or the default")
        try:
            default = check_value(spec, raw["default"] if kind != "date" else _date_text(raw["default"]))
        except QueryParameterInvalid as exc:
            raise _bad(f"{field}.default", exc.message) from None
        spec = ParameterSpec(**{**spec.__dict__, "default": default})
    return spec


def _date_text(value: Any) -> Any:
    return value.isoformat() if isinstance(value, date) else value


def parse_specs(raw: Any, field: str = "parameters") -> tuple[ParameterSpec, ...]:
    """Check a list of declarations (≤ :data:`MAX_PARAMETERS`, unique names).

    Raises:
        QueryTemplateInvalid: naming the declaration and the rule.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_PARAMETERS:
        raise _bad(field, f"must be a list of at most {MAX_PARAMETERS} parameter declarations")
    specs = tuple(parse_spec(r, f"{field}[{i}]") for i, r in enumerate(raw))
    seen: set[str] = set()
    for i, s in enumerate(specs):
        if s.name in seen:
            raise _bad(f"{field}[{i}].name", f"parameter {s.name!r} is declared twice")
        seen.add(s.name)
    return specs


def _invalid(field: str, name: str, reason: str, message: str, limit: Any = None) -> QueryParameterInvalid:
    return QueryParameterInvalid(
        f"{field}: {message}",
        field=field,
        parameter=name,
        reason=reason,
        limit=limit.isoformat() if isinstance(limit, date) else limit,
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def check_value(spec: ParameterSpec, value: Any, field: str | None = None) -> Any:
    """Check one value against its declaration; returns the Python value to bind.

    Returns ``str`` (string, enum), ``int``, ``float``, ``bool``, ``datetime.date`` or a
    ``list`` of those. Nothing is coerced: a value of the wrong JSON type is refused.

    Raises:
        QueryParameterInvalid: naming ``field`` (default ``parameters.<name>``), the limit
            and the reason.
    """
    field = field or f"parameters.{spec.name}"
    name = spec.name
    t = spec.type
    if t in ("string", "enum"):
        if not isinstance(value, str):
            raise _invalid(field, name, "WRONG_TYPE", f"must be a string, got {_kind(value)}")
        if "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise _invalid(field, name, "BAD_FORMAT", "contains NUL or a lone surrogate")
        if t == "enum":
            if value not in spec.values:
                shown = list(spec.values[:20]) + (["…"] if len(spec.values) > 20 else [])
                raise _invalid(field, name, "NOT_ALLOWED", f"must be one of {shown}", limit=list(spec.values))
            return value
        assert spec.max_length is not None
        if len(value) > spec.max_length:
            raise _invalid(
                field, name, "TOO_LONG", f"is {len(value)} characters; at most {spec.max_length}", spec.max_length
            )
        if len(value) < (spec.min_length or 0):
            raise _invalid(
                field, name, "TOO_SHORT", f"is {len(value)} characters; at least {spec.min_length}", spec.min_length
            )
        if spec.pattern is not None and not re.fullmatch(spec.pattern, value):
            raise _invalid(field, name, "PATTERN", f"must match the pattern {spec.pattern}", spec.pattern)
        return value
    if t == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(field, name, "WRONG_TYPE", f"must be an integer, got {_kind(value)}")
    elif t == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _invalid(field, name, "WRONG_TYPE", f"must be a number, got {_kind(value)}")
        if not math.isfinite(value):
            raise _invalid(field, name, "WRONG_TYPE", "must be a finite number")
        value = float(value)
    elif t == "boolean":
        if not isinstance(value, bool):
            raise _invalid(field, name, "WRONG_TYPE", f"must be true or false, got {_kind(value)}")
        return value
    elif t == "date":
        if not isinstance(value, str):
            raise _invalid(field, name, "WRONG_TYPE", f"must be a YYYY-MM-DD string, got {_kind(value)}")
        if not _DATE_RE.match(value):
            raise _invalid(field, name, "BAD_FORMAT", "must be a date written YYYY-MM-DD", "YYYY-MM-DD")
        try:
            value = date.fromisoformat(value)
        except ValueError:
            raise _invalid(field, name, "BAD_FORMAT", "is not a calendar date", "YYYY-MM-DD") from None
    elif t == "list":
        if not isinstance(value, list):
            raise _invalid(field, name, "WRONG_TYPE", f"must be a list, got {_kind(value)}")
        assert spec.items is not None and spec.max_items is not None
        if len(value) > spec.max_items:
            raise _invalid(field, name, "TOO_MANY", f"has {len(value)} items; at most {spec.max_items}", spec.max_items)
        if len(value) < (spec.min_items or 1):
            raise _invalid(field, name, "TOO_FEW", f"has {len(value)} items; at least {spec.min_items}", spec.min_items)
        item = ParameterSpec(**{**spec.items.__dict__, "name": name})
        return [check_value(item, v, f"{field}[{i}]") for i, v in enumerate(value)]
    if spec.minimum is not None and value < spec.minimum:
        raise _invalid(field, name, "TOO_SMALL", f"must be ≥ {_json_value(spec.minimum)}", spec.minimum)
    if spec.maximum is not None and value > spec.maximum:
        raise _invalid(field, name, "TOO_LARGE", f"must be ≤ {_json_value(spec.maximum)}", spec.maximum)
    return value


def bind_values(specs: tuple[ParameterSpec, ...], values: Any) -> dict[str, Any]:
    """Check an agent's parameter object against the declarations; returns name → value.

    Unknown names are refused, missing required ones are refused, missing optional ones take
    their default.

    Raises:
        QueryParameterInvalid: the first problem, naming the parameter and the limit.
    """
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise QueryParameterInvalid(
            f"parameters must be an object of name → value, got {_kind(values)}",
            field="parameters",
            reason="WRONG_TYPE",
        )
    by_name = {s.name: s for s in specs}
    for key in values:
        if key not in by_name:
            shown = key if len(str(key)) <= 64 else str(key)[:64] + "…"
            raise QueryParameterInvalid(
                f"parameters: unknown parameter {shown!r}; this template takes {sorted(by_name) or 'no parameters'}",
                field="parameters",
                parameter=shown,
                reason="UNKNOWN",
                limit=sorted(by_name),
            )
    out: dict[str, Any] = {}
    for spec in specs:
        if spec.name not in values or values[spec.name] is None:
            if spec.required:
                raise _invalid(f"parameters.{spec.name}", spec.name, "MISSING", f"is required ({spec.type})")
            out[spec.name] = spec.default
            continue
        out[spec.name] = check_value(spec, values[spec.name])
    return out


def specs_to_json(specs: tuple[ParameterSpec, ...]) -> list[dict[str, Any]]:
    """Declarations as stored (JSON list); :func:`parse_specs` reads them back."""
    return [s.to_json() for s in specs]
