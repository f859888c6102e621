"""Running a ``queryFields`` plan (SPEC §5) over given values (no database): filter, sort,
limit, aggregate (optionally by group) and coverage.

Sort: by the field's first value (nulls last), then the document's external id. Aggregates:
``COUNT`` (documents; with ``field``: documents having it), ``MIN MAX`` (NUMBER MONEY DATE
DURATION), ``SUM AVG`` (NUMBER MONEY DURATION), optionally by ``groupBy`` (one field; a MANY
field puts a document in each of its groups; documents without a value form the group
``null``).

Coverage: for each field the plan uses (fields, filters, sort, aggregate, groupBy), the share
of the collection's documents with a cited value; under 90 % adds a line to
``coverage_lines`` and sets ``incomplete``.

Limits: :mod:`app.fields.plan`; operators: :mod:`app.fields.operands`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from cairn.app.fields.errors import FieldQueryInvalidAggregate, FieldQueryTooManyGroups
from cairn.app.fields.operands import comparable, filter_operands, in_days, matches
from cairn.app.fields.plan import (
    AGGREGATES,
    MAX_GROUPS,
    ORDERED,
    Aggregate,
    Group,
    Plan,
    QueryResult,
    check_limits,
    spec_for,
)
from cairn.app.fields.types import FieldSpec, FieldType
from cairn.app.fields.values import DocValues, ValueView

COVERAGE_FLOOR = 0.9


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
        days = [in_days(v) for v in vals]
        res = {"MIN": min(days), "MAX": max(days), "SUM": sum(days), "AVG": sum(days) / len(days)}[agg.op]
        return {"amount": round(res, 4), "unit": "days"}
    nums = [comparable(spec.type, v) for v in vals]
    return {"MIN": min(nums), "MAX": max(nums), "SUM": sum(nums), "AVG": sum(nums) / len(nums)}[agg.op]


def run_plan(plan: Plan, specs_list: Sequence[FieldSpec], docs: list[DocValues]) -> QueryResult:
    """Filter, sort, limit and aggregate ``docs`` (every live document's values) by ``plan``."""
    check_limits(plan)
    specs = {s.name: s for s in specs_list}
    for i, name in enumerate(plan.fields):
        spec_for(specs, name, f"plan.fields[{i}]")
    operands = filter_operands(plan, specs)
    for i, s in enumerate(plan.sort):
        spec_for(specs, s.field, f"plan.sort[{i}].field")
    agg = plan.aggregate
    agg_spec = None
    if agg is not None:
        if agg.op not in AGGREGATES:
            raise FieldQueryInvalidAggregate(
                f"plan.aggregate.op: {agg.op!r}; one of {', '.join(AGGREGATES)}",
                field="plan.aggregate.op",
            )
        if agg.field is not None:
            agg_spec = spec_for(specs, agg.field, "plan.aggregate.field")
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
            spec_for(specs, agg.group_by, "plan.aggregate.groupBy")
    matched = [
        d
        for d in docs
        if all(matches(specs[f.field], f, d.values.get(f.field, []), o) for f, o in zip(plan.filters, operands))
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
