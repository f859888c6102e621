"""Filter operands of ``queryFields`` plans (SPEC §5): a filter's value parsed as its field's
type, and stored values compared with it.

Typed operators: ``EQ NE`` (every type; TEXT compares the normalised key, so "delaware"
matches "Delaware"), ``LT LTE GT GTE`` (NUMBER, MONEY — same currency —, DATE, DURATION:
compared in days, a month = 30.4375 days, a year = 365.25), ``CONTAINS`` (TEXT, case-folded
substring), ``IN`` (a list of values, every type), ``EXISTS`` / ``MISSING`` (no value). A
MANY field matches when any of its values does. Only cited values (not null, not stale)
take part. An operator the field's type does not support or a value that does not parse as
the field's type is ``FIELD_QUERY_INVALID_FILTER``.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from cairn.app.core.errors import BadInput
from cairn.app.fields.errors import FieldQueryInvalidFilter
from cairn.app.fields.finders import find_candidates, text_key
from cairn.app.fields.plan import OPS, ORDERED, Filter, Plan, spec_for
from cairn.app.fields.types import FieldSpec, FieldType
from cairn.app.fields.values import ValueView

_DAYS = {"days": 1.0, "weeks": 7.0, "months": 30.4375, "years": 365.25}


def in_days(v: dict) -> float:
    """A stored or given DURATION ``{amount, unit}`` in days (a month = 30.4375, a year = 365.25)."""
    return float(v["amount"]) * _DAYS.get(v["unit"], 1.0)


def comparable(t: FieldType, value: Any) -> Any:
    """A stored normalised value as an ordered scalar (days for DURATION, amount for MONEY)."""
    if t == FieldType.DURATION:
        return in_days(value)
    if t == FieldType.MONEY:
        return float(value["amount"])
    if t == FieldType.NUMBER:
        return float(value["value"])
    return value


def parse_operand(spec: FieldSpec, raw: Any, where: str) -> Any:
    """A filter value as the field's comparable (DATE ISO string, DURATION days, MONEY
    (amount, currency), NUMBER float, BOOLEAN bool, TEXT key).

    Raises:
        BadInput ``FIELD_QUERY_INVALID_FILTER``: it does not parse as the field's type.
    """

    def bad(expect: str) -> BadInput:
        return FieldQueryInvalidFilter(
            f"{where}: {raw!r} is not a {spec.type.value} value for field {spec.name!r} ({expect})",
            field=where,
        )

    t = spec.type
    if t == FieldType.TEXT:
        if not isinstance(raw, str) or not raw.strip():
            raise bad("a non-empty string")
        return text_key(raw)
    if t == FieldType.BOOLEAN:
        if not isinstance(raw, bool):
            raise bad("true or false")
        return raw
    if t == FieldType.DATE:
        if not isinstance(raw, str):
            raise bad("YYYY-MM-DD")
        try:
            return date.fromisoformat(raw).isoformat()
        except ValueError:
            raise bad("YYYY-MM-DD") from None
    if t == FieldType.DURATION:
        if isinstance(raw, dict) and {"amount", "unit"} <= set(raw) and raw["unit"] in _DAYS:
            return in_days(raw)
        if isinstance(raw, str):
            found = find_candidates(re.sub(r"[_]", " ", raw), FieldType.DURATION)
            if len(found) == 1:
                return in_days(found[0].value)
        raise bad('e.g. "2 years", "18 months" or {"amount": 2, "unit": "years"}')
    if t == FieldType.MONEY:
        if (
            isinstance(raw, dict)
            and isinstance(raw.get("amount"), int | float)
            and isinstance(raw.get("currency"), str)
        ):
            return (float(raw["amount"]), raw["currency"].upper())
        raise bad('{"amount": 1000, "currency": "USD"}')
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise bad("a number")
    return float(raw)


def matches(spec: FieldSpec, f: Filter, vals: list[ValueView], operand: Any) -> bool:
    """Whether a document's ``vals`` of ``spec`` satisfy filter ``f`` (its parsed ``operand``)."""
    cited = [v for v in vals if v.value is not None]
    if f.op == "EXISTS":
        return bool(cited)
    if f.op == "MISSING":
        return not cited
    t = spec.type
    for v in cited:
        if t == FieldType.TEXT:
            x: Any = v.key
        elif t == FieldType.MONEY:
            if f.op not in ("IN",) and v.value["currency"] != operand[1]:
                continue
            x = float(v.value["amount"])
        else:
            x = comparable(t, v.value)
        y = operand[0] if t == FieldType.MONEY and f.op != "IN" else operand
        if f.op == "EQ" and x == y:
            return True
        if f.op == "NE" and x != y:
            return True
        if f.op == "IN" and any(x == (o[0] if t == FieldType.MONEY else o) for o in operand):
            return True
        if f.op == "CONTAINS" and y in x:
            return True
        if f.op in ("LT", "LTE", "GT", "GTE"):
            if (f.op == "LT" and x < y) or (f.op == "LTE" and x <= y) or (f.op == "GT" and x > y):
                return True
            if f.op == "GTE" and x >= y:
                return True
    return False


def filter_operands(plan: Plan, specs: dict[str, FieldSpec]) -> list[Any]:
    """Each filter of ``plan`` checked (field, operator, value) and its value parsed, in order.

    Raises:
        BadInput ``FIELD_NOT_DEFINED``, ``FIELD_QUERY_INVALID_FILTER``.
    """
    out: list[Any] = []
    for i, f in enumerate(plan.filters):
        where = f"plan.filters[{i}]"
        spec = spec_for(specs, f.field, f"{where}.field")
        if f.op not in OPS:
            raise FieldQueryInvalidFilter(f"{where}.op: {f.op!r}; one of {', '.join(OPS)}", field=f"{where}.op")
        if f.op in ("LT", "LTE", "GT", "GTE") and spec.type not in ORDERED:
            raise FieldQueryInvalidFilter(
                f"{where}.op: {f.op} needs an ordered type (NUMBER MONEY DATE DURATION); {spec.name!r} is {spec.type.value}",
                field=f"{where}.op",
            )
        if f.op == "CONTAINS" and spec.type != FieldType.TEXT:
            raise FieldQueryInvalidFilter(
                f"{where}.op: CONTAINS needs a TEXT field; {spec.name!r} is {spec.type.value}",
                field=f"{where}.op",
            )
        if f.op in ("EXISTS", "MISSING"):
            if f.value is not None:
                raise FieldQueryInvalidFilter(f"{where}.value: {f.op} takes no value", field=f"{where}.value")
            out.append(None)
        elif f.op == "IN":
            if not isinstance(f.value, list) or not 1 <= len(f.value) <= 50:
                raise FieldQueryInvalidFilter(
                    f"{where}.value: IN takes a list of 1–50 values",
                    field=f"{where}.value",
                    limit=50,
                )
            out.append([parse_operand(spec, x, f"{where}.value[{j}]") for j, x in enumerate(f.value)])
        else:
            out.append(parse_operand(spec, f.value, f"{where}.value"))
    return out
