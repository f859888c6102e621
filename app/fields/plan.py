"""``queryFields(plan)`` plans (SPEC §5): the plan and result shapes, the plan's vocabulary
(operators, aggregates) and the limits checked before any database work.

Limits (each refused with a coded error naming it, never clamped): ``fields`` 1–6
(none: ``FIELD_QUERY_NO_FIELDS``; over 6: ``FIELD_QUERY_TOO_MANY_FIELDS``), ``filters`` ≤ 6 (``FIELD_QUERY_TOO_MANY_FILTERS``), ``limit``
1–200 (``FIELD_QUERY_LIMIT_OUT_OF_RANGE``), ``groupBy`` results ≤ 50 groups
(``FIELD_QUERY_TOO_MANY_GROUPS``), sort keys ≤ 6 (``FIELD_QUERY_TOO_MANY_SORT_KEYS``); an unknown
field is ``FIELD_NOT_DEFINED``; an operator the field's type does not support or a value that
does not parse as the field's type is ``FIELD_QUERY_INVALID_FILTER``; an aggregate a type
cannot take is ``FIELD_QUERY_INVALID_AGGREGATE``.

Operators and operands: :mod:`app.fields.operands`; running a plan (filter, sort, aggregate,
coverage): :mod:`app.fields.execution`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cairn.app.core.text_rules import validate_text
from cairn.app.fields.errors import (
    FieldNotDefined,
    FieldQueryInvalidPlan,
    FieldQueryLimitOutOfRange,
    FieldQueryNoFields,
    FieldQueryTooManyFields,
    FieldQueryTooManyFilters,
    FieldQueryTooManySortKeys,
)
from cairn.app.fields.types import FieldSpec, FieldType
from cairn.app.fields.values import DocValues

MAX_FIELDS = 6
MAX_FILTERS = 6
MAX_SORT = 6
MAX_LIMIT = 200
MAX_GROUPS = 50
OPS = ("EQ", "NE", "LT", "LTE", "GT", "GTE", "CONTAINS", "IN", "EXISTS", "MISSING")
ORDERED = {FieldType.NUMBER, FieldType.MONEY, FieldType.DATE, FieldType.DURATION}
AGGREGATES = ("COUNT", "MIN", "MAX", "SUM", "AVG")


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


def spec_for(specs: dict[str, FieldSpec], name: str, where: str) -> FieldSpec:
    """The spec of field ``name``, named at ``where`` in the plan.

    Raises:
        BadInput ``FIELD_NOT_DEFINED``: the collection defines no such field.
    """
    if name not in specs:
        raise FieldNotDefined(
            f"{where}: field {name!r} is not defined in this collection (defined: {', '.join(sorted(specs)) or 'none'})",
            field=where,
        )
    return specs[name]
