"""``queryFields(plan)``: a structured plan over a collection's field values (SPEC §5).

Limits (each refused with a coded error naming it, never clamped): ``fields`` 1–6
(none: ``FIELD_QUERY_NO_FIELDS``; over 6: ``FIELD_QUERY_TOO_MANY_FIELDS``), ``filters`` ≤ 6 (``FIELD_QUERY_TOO_MANY_FILTERS``), ``limit``
1–200 (``FIELD_QUERY_LIMIT_OUT_OF_RANGE``), ``groupBy`` results ≤ 50 groups
(``FIELD_QUERY_TOO_MANY_GROUPS``), sort keys ≤ 6 (``FIELD_QUERY_TOO_MANY_SORT_KEYS``); an unknown
field is ``FIELD_NOT_DEFINED``; an operator the field's type does not support or a value that
does not parse as the field's type is ``FIELD_QUERY_INVALID_FILTER``; an aggregate a type
cannot take is ``FIELD_QUERY_INVALID_AGGREGATE``.

Typed operators: ``EQ NE`` (every type; TEXT compares the normalised key, so "delaware"
matches "Delaware"), ``LT LTE GT GTE`` (NUMBER, MONEY — same currency —, DATE, DURATION:
compared in days, a month = 30.4375 days, a year = 365.25), ``CONTAINS`` (TEXT, case-folded
substring), ``IN`` (a list of values, every type), ``EXISTS`` / ``MISSING`` (no value). A
MANY field matches when any of its values does. Only cited values (not null, not stale)
take part.

Sort: by the field's first value (nulls last), then the document's external id. Aggregates:
``COUNT`` (documents; with ``field``: documents having it), ``MIN MAX`` (NUMBER MONEY DATE
DURATION), ``SUM AVG`` (NUMBER MONEY DURATION), optionally by ``groupBy`` (one field; a MANY
field puts a document in each of its groups; documents without a value form the group
``null``).

Coverage: for each field the plan uses (fields, filters, sort, aggregate, groupBy), the share
of the collection's documents with a cited value; under 90 % adds a line to
``coverage_lines`` and sets ``incomplete``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_text
from cairn.app.fields.errors import (
    FieldNotDefined,
    FieldQueryInvalidAggregate,
    FieldQueryInvalidFilter,
    FieldQueryInvalidPlan,
    FieldQueryLimitOutOfRange,
    FieldQueryNoFields,
    FieldQueryTooManyFields,
    FieldQueryTooManyFilters,
    FieldQueryTooManyGroups,
    FieldQueryTooManySortKeys,
)
from cairn.app.fields.finders import find_candidates, text_key
from cairn.app.fields.types import FieldSpec, FieldType
from cairn.app.fields.values import DocValues, ValueView

MAX_FIELDS = 6
MAX_FILTERS = 6
MAX_SORT = 6
MAX_LIMIT = 200
MAX_GROUPS = 50
COVERAGE_FLOOR = 0.9
OPS = ("EQ", "NE", "LT", "LTE", "GT", "GTE", "CONTAINS", "IN", "EXISTS", "MISSING")
ORDERED = {FieldType.NUMBER, FieldType.MONEY, FieldType.DATE, FieldType.DURATION}
AGGREGATES = ("COUNT", "MIN", "MAX", "SUM", "AVG")
_DAYS = {"days": 1.0, "weeks": 7.0, "months": 30.4375, "years": 365.25}


@dataclass(frozen=True)
class Filter:
    """``field op value`` (value: JSON — a string, number, bool, object or list for IN)."""

    field: str
    op: str
    value: Any = None


@dataclass(frozen=True)
class Sort:
    """Sort key: a field, ascending unless ``descending``."""

    field: str
    descending: bool = False


@dataclass(frozen=True)
class Aggregate:
    """``op`` over ``field`` (None: COUNT of documents), optionally per ``group_by`` value."""

    op: str
    field: str | None = None
    group_by: str | None = None


@dataclass(frozen=True)
class Plan:
    """A validated-on-run plan (see the module doc for every limit)."""

    collection_id: str
    fields: tuple[str, ...]
    filters: tuple[Filter, ...] = ()
    sort: tuple[Sort, ...] = ()
    limit: int = 50
    aggregate: Aggregate | None = None
    known_at: str | None = None


@dataclass
class Group:
    """One aggregate group: its key (None = documents without a value), documents, result."""

    key: Any
    documents: int
    value: Any


@dataclass
class QueryResult:
    """Rows (documents with the requested fields' values), the documents matched before the
    limit, aggregate groups, coverage per used field, the lines for those under 90 % and
    ``incomplete``."""

    rows: list[DocValues]
    matched: int
    groups: list[Group] | None
    coverage: dict[str, float]
    coverage_lines: list[str]
    incomplete: bool
    documents: int = 0
    fields: tuple[str, ...] = field(default_factory=tuple)


MAX_FILTER_TEXT = 1_000
"""Characters of one text operand of a filter."""


def check_limits(plan: Plan) -> None:
    """Refuse a plan over a limit (coded errors named in the module doc)."""
    if not plan.fields:
        raise FieldQueryNoFields(
            f"plan.fields is empty; name 1–{MAX_FIELDS} fields to return", field="plan.fields", limit=1
        )
    if len(plan.fields) > MAX_FIELDS:
        raise FieldQueryTooManyFields(
            f"plan.fields: {len(plan.fields)} fields; between 1 and {MAX_FIELDS} allowed",
            field="plan.fields",
            limit=MAX_FIELDS,
        )
    if len(plan.filters) > MAX_FILTERS:
        raise FieldQueryTooManyFilters(
            f"plan.filters: {len(plan.filters)} filters; at most {MAX_FILTERS} allowed",
            field="plan.filters",
            limit=MAX_FILTERS,
        )
    if len(plan.sort) > MAX_SORT:
        raise FieldQueryTooManySortKeys(
            f"plan.sort: {len(plan.sort)} keys; at most {MAX_SORT} allowed",
            field="plan.sort",
            limit=MAX_SORT,
        )
    if not 1 <= plan.limit <= MAX_LIMIT:
        raise FieldQueryLimitOutOfRange(
            f"plan.limit: {plan.limit}; between 1 and {MAX_LIMIT} rows allowed",
            field="plan.limit",
            limit=MAX_LIMIT,
        )
    if len(set(plan.fields)) != len(plan.fields):
        raise FieldQueryInvalidPlan("plan.fields: a field is named twice", field="plan.fields")
    for i, f in enumerate(plan.filters):  # text operands follow the one text rule (NUL, controls, length)
        for j, v in enumerate(f.value if isinstance(f.value, list) else [f.value]):
            if isinstance(v, str):
                where = f"plan.filters[{i}].value" + (f"[{j}]" if isinstance(f.value, list) else "")
                validate_text(v, where, MAX_FILTER_TEXT)


def _in_days(v: dict) -> float:
    return float(v["amount"]) * _DAYS.get(v["unit"], 1.0)


def comparable(t: FieldType, value: Any) -> Any:
    """A stored normalised value as an ordered scalar (days for DURATION, amount for MONEY)."""
    if t == FieldType.DURATION:
        return _in_days(value)
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
            return _in_days(raw)
        if isinstance(raw, str):
            found = find_candidates(re.sub(r"[_]", " ", raw), FieldType.DURATION)
            if len(found) == 1:
                return _in_days(found[0].value)
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


def _match(spec: FieldSpec, f: Filter, vals: list[ValueView], operand: Any) -> bool:
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


def _spec(specs: dict[str, FieldSpec], name: str, where: str) -> FieldSpec:
    if name not in specs:
        raise FieldNotDefined(
            f"{where}: field {name!r} is not defined in this collection (defined: {', '.join(sorted(specs)) or 'none'})",
            field=where,
        )
    return specs[name]


def _operands(plan: Plan, specs: dict[str, FieldSpec]) -> list[Any]:
    out = []
    for i, f in enumerate(plan.filters):
        where = f"plan.filters[{i}]"
        spec = _spec(specs, f.field, f"{where}.field")
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


def _aggregate(spec: FieldSpec | None, agg: Aggregate, docs: list[DocValues]) -> Any:
    if agg.op == "COUNT":
        if spec is None:
            return len(docs)
        return sum(1 for d in docs if any(v.value is not None for v in d.values.get(spec.name, [])))
    assert spec is not None
    vals = [v.value for d in docs for v in d.values.get(spec.name, []) if v.value is not None]
    if not vals:
        return None
    if spec.type == FieldType.MONEY:
        currencies = {v["currency"] for v in vals}
        if len(currencies) > 1:
            return {"error": f"mixed currencies {sorted(currencies)}: filter on one currency first"}
        nums = [float(v["amount"]) for v in vals]
        res = {"MIN": min(nums), "MAX": max(nums), "SUM": sum(nums), "AVG": sum(nums) / len(nums)}[agg.op]
        return {"amount": round(res, 6), "currency": currencies.pop()}
    if spec.type == FieldType.DATE:
        return min(vals) if agg.op == "MIN" else max(vals)
    if spec.type == FieldType.DURATION:
        days = [_in_days(v) for v in vals]
        res = {"MIN": min(days), "MAX": max(days), "SUM": sum(days), "AVG": sum(days) / len(days)}[agg.op]
        return {"amount": round(res, 4), "unit": "days"}
    nums = [comparable(spec.type, v) for v in vals]
    return {"MIN": min(nums), "MAX": max(nums), "SUM": sum(nums), "AVG": sum(nums) / len(nums)}[agg.op]


def run_plan(plan: Plan, specs_list: Sequence[FieldSpec], docs: list[DocValues]) -> QueryResult:
    """Filter, sort, limit and aggregate ``docs`` (every live document's values) by ``plan``."""
    check_limits(plan)
    specs = {s.name: s for s in specs_list}
    for i, name in enumerate(plan.fields):
        _spec(specs, name, f"plan.fields[{i}]")
    operands = _operands(plan, specs)
    for i, s in enumerate(plan.sort):
        _spec(specs, s.field, f"plan.sort[{i}].field")
    agg = plan.aggregate
    agg_spec = None
    if agg is not None:
        if agg.op not in AGGREGATES:
            raise FieldQueryInvalidAggregate(
                f"plan.aggregate.op: {agg.op!r}; one of {', '.join(AGGREGATES)}",
                field="plan.aggregate.op",
            )
        if agg.field is not None:
            agg_spec = _spec(specs, agg.field, "plan.aggregate.field")
        if agg.op != "COUNT":
            if agg_spec is None:
                raise FieldQueryInvalidAggregate(
                    f"plan.aggregate.field: {agg.op} needs a field",
                    field="plan.aggregate.field",
                )
            allowed = ORDERED if agg.op in ("MIN", "MAX") else ORDERED - {FieldType.DATE}
            if agg_spec.type not in allowed:
                raise FieldQueryInvalidAggregate(
                    f"plan.aggregate: {agg.op} cannot take {agg_spec.type.value} field {agg_spec.name!r}",
                    field="plan.aggregate.op",
                )
        if agg.group_by is not None:
            _spec(specs, agg.group_by, "plan.aggregate.groupBy")
    matched = [
        d
        for d in docs
        if all(_match(specs[f.field], f, d.values.get(f.field, []), o) for f, o in zip(plan.filters, operands))
    ]

    def sort_key(d: DocValues) -> tuple:
        key: list[Any] = []
        for s in plan.sort:
            vals = [v for v in d.values.get(s.field, []) if v.value is not None]
            if not vals:
                key.append((1, 0))
                continue
            x = comparable(specs[s.field].type, vals[0].value) if specs[s.field].type != FieldType.TEXT else vals[0].key
            key.append((0, _Desc(x) if s.descending else x))
        return (*key, d.external_id, d.document_id)

    matched.sort(key=sort_key)
    groups = None
    if agg is not None:
        by: dict[Any, list[DocValues]] = defaultdict(list)
        display: dict[Any, Any] = {}  # TEXT groups by key ("DELAWARE"), shown as first written ("Delaware")
        if agg.group_by is None:
            by[None] = matched
        else:
            gspec = specs[agg.group_by]
            for d in matched:
                vals = [v for v in d.values.get(gspec.name, []) if v.value is not None]
                keys = {_group_key(gspec, v): v for v in vals}
                for k, v in keys.items():
                    display.setdefault(k, v.value if gspec.type == FieldType.TEXT else k)
                if not keys:
                    by[None].append(d)
                for k in keys:
                    by[k].append(d)
            if len(by) > MAX_GROUPS:
                raise FieldQueryTooManyGroups(
                    f"plan.aggregate.groupBy: {gspec.name!r} makes {len(by)} groups; at most {MAX_GROUPS} allowed (add a filter)",
                    field="plan.aggregate.groupBy",
                    limit=MAX_GROUPS,
                )
        groups = [Group(display.get(k, k), len(ds), _aggregate(agg_spec, agg, ds)) for k, ds in by.items()]
        groups.sort(key=lambda g: (-g.documents, g.key is None, str(g.key)))
    used = list(plan.fields) + [f.field for f in plan.filters] + [s.field for s in plan.sort]
    if agg is not None:
        used += [x for x in (agg.field, agg.group_by) if x]
    cov: dict[str, float] = {}
    lines = []
    total = len(docs)
    for name in dict.fromkeys(used):
        have = sum(1 for d in docs if any(v.value is not None for v in d.values.get(name, [])))
        share = have / total if total else 0.0
        cov[name] = round(share, 4)
        if share < COVERAGE_FLOOR:
            lines.append(
                f"{name}: {have} of {total} documents ({share:.0%}) have a cited value, under 90%; "
                "documents without one are missing from filters, sorts and aggregates on it"
            )
    rows = [
        DocValues(
            d.document_id,
            d.external_id,
            d.title,
            d.version_id,
            d.version_number,
            {f: d.values.get(f, []) for f in plan.fields},
        )
        for d in matched[: plan.limit]
    ]
    return QueryResult(rows, len(matched), groups, cov, lines, bool(lines), total, plan.fields)


def _group_key(spec: FieldSpec, v: ValueView) -> Any:
    if spec.type in (FieldType.TEXT, FieldType.DURATION, FieldType.MONEY):
        return v.key
    if spec.type == FieldType.NUMBER:
        return v.value["value"]
    return v.value


class _Desc:
    """Reverses the order of a value inside a sort key."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def __lt__(self, other: _Desc) -> bool:
        return other.x < self.x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and other.x == self.x

    def __hash__(self) -> int:
        return hash(self.x)
