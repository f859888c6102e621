"""Conditions of ``objectInstances``: validation against an object type, and evaluation.

A condition is a tree: logical nodes ``and`` / ``or`` with ``subConditions``; leaves with
``field``, ``operation``, and ``value`` + ``valueFrom`` (``const``; always together, absent
only for ``exist``/``not_exist``). ``knn`` leaves also carry ``limitKey: "k"`` and
``limitValue`` (1–1,000); ``multi_match`` leaves may list ``fields`` (default: ``field``).
Limits: depth ≤ 8, ≤ 100 leaves, ``in`` lists ≤ 1,000 values, text values ≤ 1,000 chars.

Evaluation (in process over the type's rows, :mod:`app.ontology.store`): each
leaf yields the set of matching row positions and, for scoring leaves (``match``,
``multi_match``: BM25; ``knn``: cosine), a score per row. ``and`` intersects, ``or`` unites;
a row's ``_score`` is the sum of the scores of the scoring leaves it satisfied (as a
search engine's ``bool`` query). ``knn`` selects the ``k`` nearest rows of the whole type
and is then combined like any other leaf (post-filter semantics).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from cairn.app.ontology.store import OntologyStore, TypeIndex
from cairn.app.ontology.types import (
    ALL_OPS,
    LIST_OPS,
    MAX_IN_VALUES,
    NO_VALUE_OPS,
    InvalidCondition,
    LikePattern,
    coerce_query_value,
    condition_operations,
)

MAX_DEPTH = 8
MAX_LEAVES = 100
MAX_TEXT = 1_000
MAX_K = 1_000
SCORING_OPS = frozenset({"match", "multi_match", "knn"})


@dataclass
class Node:
    """A validated condition node (``op`` is ``and``/``or`` or a leaf operator)."""

    op: str
    field: str | None = None
    value: Any = None
    fields: list[str] = dataclasses.field(default_factory=list)
    k: int | None = None
    subs: list[Node] = dataclasses.field(default_factory=list)

    def canonical(self) -> Any:
        """Plain JSON form (for query hashes)."""
        if self.op in ("and", "or"):
            return {"op": self.op, "subs": [s.canonical() for s in self.subs]}
        return {"op": self.op, "field": self.field, "value": self.value, "fields": self.fields, "k": self.k}

    def scoring(self) -> bool:
        """Whether the tree contains a scoring operator."""
        return self.op in SCORING_OPS or any(s.scoring() for s in self.subs)

    def named_field(self) -> str:
        """The field a leaf names (:func:`parse_condition` gives one to every leaf but
        ``multi_match``, which names ``fields``).

        Raises:
            InvalidCondition: the node names no field.
        """
        if self.field is None:
            raise _bad("this operator needs a field", operation=self.op)
        return self.field


def _bad(msg: str, *, field: str | None = None, operation: str | None = None) -> InvalidCondition:
    named = [f"field {field!r}" if field else "", f"operator {operation!r}" if operation else ""]
    suffix = ", ".join(n for n in named if n)
    return InvalidCondition(f"{msg} [{suffix}]" if suffix else msg, field=field, operation=operation)


def parse_condition(
    raw: dict[str, Any], props: dict[str, dict], *, vectors_available: bool, path: str = "condition"
) -> Node:
    """Validate a condition tree (plain dict with camelCase keys) against the type's properties.

    Raises:
        InvalidCondition: naming the field and operator (unknown field, operator the
            property does not support, wrong value, structural error).
    """
    counter = {"leaves": 0}

    def walk(node: dict[str, Any], depth: int, where: str) -> Node:
        if depth > MAX_DEPTH:
            raise _bad(f"{where}: conditions nest at most {MAX_DEPTH} levels deep")
        op = node.get("operation")
        if not isinstance(op, str):
            raise _bad(f"{where}.operation is required (and, or, or a leaf operator)")
        op = op.lower() if op.lower() in ("and", "or") else op
        if op in ("and", "or"):
            subs = node.get("subConditions")
            if not subs:
                raise _bad(f"{where}: {op} needs a non-empty subConditions list", operation=op)
            for extra in ("field", "value", "valueFrom", "limitKey", "limitValue", "fields"):
                if node.get(extra) is not None:
                    raise _bad(f"{where}: {op} takes only subConditions, not {extra}", operation=op)
            return Node(op=op, subs=[walk(s, depth + 1, f"{where}.subConditions[{i}]") for i, s in enumerate(subs)])
        counter["leaves"] += 1
        if counter["leaves"] > MAX_LEAVES:
            raise _bad(f"a condition has at most {MAX_LEAVES} leaves")
        if node.get("subConditions"):
            raise _bad(f"{where}: only and / or take subConditions", operation=op)
        name = node.get("field")
        if op == "multi_match" and not name and node.get("fields"):
            name = node["fields"][0]
        if not isinstance(name, str) or not name:
            raise _bad(f"{where}.field is required for operator {op!r}", operation=op)
        if op not in ALL_OPS:
            raise _bad(
                f"{where}: unknown operator {op!r} on field {name!r}; operators: {', '.join(ALL_OPS)}",
                field=name,
                operation=op,
            )
        if name not in props:
            raise _bad(f"{where}: field {name!r} is not a property of this object type", field=name, operation=op)
        prop = props[name]
        allowed = condition_operations(prop, vectors_available=vectors_available)
        if op not in allowed:
            raise _bad(
                f"{where}: operator {op!r} is not supported on field {name!r} (type {prop['type']}"
                f"{', full-text index' if prop.get('fullText') else ''}"
                f"{', vector index' if prop.get('vector') else ''}); supported: {', '.join(allowed)}",
                field=name,
                operation=op,
            )
        has_value, has_from = "value" in node and node["value"] is not None, node.get("valueFrom") is not None
        if has_value != has_from:
            raise _bad(f"{where}: value and valueFrom go together (valueFrom: CONST)", field=name, operation=op)
        if has_from and str(node["valueFrom"]).lower() != "const":
            raise _bad(f"{where}.valueFrom must be CONST", field=name, operation=op)
        if op in NO_VALUE_OPS:
            if has_value:
                raise _bad(f"{where}: {op} takes no value", field=name, operation=op)
        elif not has_value:
            raise _bad(f"{where}: operator {op!r} needs value and valueFrom: CONST", field=name, operation=op)
        limit_key, limit_value = node.get("limitKey"), node.get("limitValue")
        k = None
        if op == "knn":
            if limit_key != "k" or not isinstance(limit_value, int) or not 1 <= limit_value <= MAX_K:
                raise _bad(f'{where}: knn needs limitKey "k" and limitValue 1–{MAX_K}', field=name, operation=op)
            k = limit_value
        elif limit_key is not None or limit_value is not None:
            raise _bad(f"{where}: limitKey/limitValue apply only to knn", field=name, operation=op)
        fields: list[str] = []
        if op == "multi_match":
            fields = list(node.get("fields") or [name])
            for f in fields:
                if f not in props or "multi_match" not in condition_operations(
                    props[f], vectors_available=vectors_available
                ):
                    raise _bad(f"{where}: multi_match field {f!r} has no full-text index", field=f, operation=op)
        elif node.get("fields"):
            raise _bad(f"{where}: fields applies only to multi_match", field=name, operation=op)
        value = _value(node.get("value"), prop, name, op, where)
        return Node(op=op, field=name, value=value, fields=fields, k=k)

    return walk(raw, 1, path)


def _value(value: Any, prop: dict, name: str, op: str, where: str) -> Any:
    if op in NO_VALUE_OPS:
        return None
    if op in LIST_OPS:
        if not isinstance(value, list) or not value or len(value) > MAX_IN_VALUES:
            raise _bad(f"{where}: {op} needs a list of 1–{MAX_IN_VALUES} values", field=name, operation=op)
        return [coerce_query_value(v, prop["type"], field=name, operation=op) for v in value]
    if op == "range":
        if not isinstance(value, list) or len(value) != 2:
            raise _bad(f"{where}: range needs [low, high]", field=name, operation=op)
        low, high = (coerce_query_value(v, prop["type"], field=name, operation=op) for v in value)
        if low > high:
            raise _bad(f"{where}: range low {low!r} is above high {high!r}", field=name, operation=op)
        return [low, high]
    if op in ("match", "multi_match", "knn", "like", "not_like", "prefix"):
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            raise _bad(
                f"{where}: {op} needs a non-empty text value of at most {MAX_TEXT} characters", field=name, operation=op
            )
        return value
    return coerce_query_value(value, prop["type"], field=name, operation=op)


def _compare(op: str, v: Any, target: Any) -> bool:
    if v is None:
        return op in ("!=", "not_in", "not_like")
    if op == "==":
        return v == target
    if op == "!=":
        return v != target
    if op == "in":
        return v in target
    if op == "not_in":
        return v not in target
    if op == ">":
        return v > target
    if op == ">=":
        return v >= target
    if op == "<":
        return v < target
    if op == "<=":
        return v <= target
    if op == "range":
        return target[0] <= v <= target[1]
    if op == "prefix":
        return v.startswith(target)
    if op == "like":
        return bool(target.match(v))
    if op == "not_like":
        return not target.match(v)
    raise ValueError(op)


async def evaluate(node: Node, tindex: TypeIndex, store: OntologyStore) -> tuple[set[int], dict[int, float]]:
    """Row positions matching ``node`` and the scores of scoring leaves.

    Args:
        node: A validated tree.
        tindex: :class:`~app.ontology.store.TypeIndex`.
        store: :class:`~app.ontology.store.OntologyStore` (query embeddings).
    """
    from cairn.app.ontology.store import text_field

    if node.op in ("and", "or"):
        results = [await evaluate(s, tindex, store) for s in node.subs]
        sets = [r[0] for r in results]
        rows = set.intersection(*sets) if node.op == "and" else set.union(*sets)
        scores: dict[int, float] = {}
        for _set, sc in results:
            for pos, value in sc.items():
                if pos in rows:
                    scores[pos] = scores.get(pos, 0.0) + value
        return rows, scores
    if node.op in ("match", "multi_match"):
        fields = node.fields or [node.named_field()]
        hits = tindex.match([text_field(f) for f in fields], node.value)
        return set(hits), hits
    if node.op == "knn":
        hits = tindex.knn(node.named_field(), await store.encode_query(node.value), node.k or 10)
        return set(hits), hits
    if node.op == "exist":
        return {i for i, r in enumerate(tindex.rows) if r.get(node.named_field()) is not None}, {}
    if node.op == "not_exist":
        return {i for i, r in enumerate(tindex.rows) if r.get(node.named_field()) is None}, {}
    target = LikePattern(node.value) if node.op in ("like", "not_like") else node.value
    if node.op in LIST_OPS:
        target = frozenset(node.value)
    field = node.named_field()
    return {i for i, r in enumerate(tindex.rows) if _compare(node.op, r.get(field), target)}, {}
