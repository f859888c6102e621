"""``objectInstances``: filter, sort and page one object type's instances (SPEC §6).

Order: the requested ``sort`` keys compared in order (``asc``/``desc``; nulls last in both
directions), then — always — the primary key ascending as the tie-breaker, so the order
is total and paging never repeats or skips a row, ties on the sort key included. Without
``sort`` the order is by ``_score`` (desc) when the query scores, else by primary key:
the default order has no meaning, so "top N" needs an explicit ``sort``.

Paging: ``offset`` (jump anywhere) or ``cursor`` (forward only), never both. A cursor is
``base64url(JSON{q, k}).<HMAC-SHA256>``: ``q`` hashes the workspace, network, type, the
applied condition, sort and properties; ``k`` holds the last row's sort-key values, and
the next page starts after that key (keyset paging: rows loaded or changed meanwhile do
not shift pages). A cursor used with another query, or altered, is refused. The HMAC key
is ``CAIRN_CURSOR_SECRET`` (set it so cursors survive restarts and work across workers),
else a per-process random key.

``totalCount``: the number of matches ignoring ``limit`` on the first page and on offset
pages; ``0`` for none; ``None`` on cursor pages (not computed, never a fake 0).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from functools import total_ordering
from typing import Any

from cairn.app.core.db import Database
from cairn.app.core.errors import BadInput
from cairn.app.ontology.conditions import Node, evaluate, parse_condition
from cairn.app.ontology.errors import InvalidCursor
from cairn.app.ontology.store import OntologyStore

MAX_LIMIT = 10_000
MAX_OFFSET = 1_000_000
MAX_SORT_KEYS = 8
SCORE = "_score"
IDENTITY = "_instanceIdentity"


@dataclass
class InstanceQuery:
    """One ``objectInstances`` request, as plain values (camelCase dict conditions)."""

    kn_id: str
    ot_id: str
    condition: dict[str, Any] | None = None
    filters: list[dict[str, Any]] | None = None
    limit: int = 10
    offset: int | None = None
    cursor: str | None = None
    sort: list[dict[str, str]] | None = None
    properties: list[str] | None = None


@dataclass
class InstancePage:
    """One page of rows (each with ``_instanceIdentity``, and ``_score`` when scored)."""

    rows: list[dict[str, Any]]
    total_count: int | None
    cursor: str | None
    condition_source: str
    scored: bool
    messages: list[str] = field(default_factory=list)


def check_shape(q: InstanceQuery) -> None:
    """Checks that need no schema: limit, offset/cursor, sort directions, properties.

    Raises:
        BadInput: naming the field and the limit.
    """
    if not 1 <= q.limit <= MAX_LIMIT:
        raise BadInput(f"limit must be 1–{MAX_LIMIT}, got {q.limit}", field="limit", limit=f"1-{MAX_LIMIT}")
    if q.offset is not None and q.cursor is not None:
        raise BadInput("send either cursor (forward paging) or offset (jump), not both", field="cursor")
    if q.offset is not None and not 0 <= q.offset <= MAX_OFFSET:
        raise BadInput(f"offset must be 0–{MAX_OFFSET}", field="offset", limit=f"0-{MAX_OFFSET}")
    if q.cursor is not None and not 1 <= len(q.cursor) <= 8_192:
        raise BadInput("cursor must be the opaque string of a previous response", field="cursor")
    if q.sort is not None:
        if not 1 <= len(q.sort) <= MAX_SORT_KEYS:
            raise BadInput(f"sort takes 1–{MAX_SORT_KEYS} keys", field="sort", limit=MAX_SORT_KEYS)
        for i, s in enumerate(q.sort):
            if s.get("direction") not in ("asc", "desc"):
                raise BadInput(
                    f"sort[{i}].direction must be asc or desc, got {s.get('direction')!r}", field=f"sort[{i}].direction"
                )
    if q.properties is not None and not 1 <= len(q.properties) <= 500:
        raise BadInput("properties lists 1–500 property names (omit it for all)", field="properties")
    if q.filters is not None and len(q.filters) > 100:
        raise BadInput("filters takes at most 100 entries", field="filters", limit=100)


@total_ordering
class _Desc:
    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v

    def __lt__(self, other: _Desc) -> bool:
        return other.v < self.v


def _part(value: Any, desc: bool) -> tuple:
    if value is None:
        return (1, 0)
    return (0, _Desc(value) if desc else value)


def _applied_condition(q: InstanceQuery) -> tuple[dict[str, Any] | None, str, list[str]]:
    messages: list[str] = []
    if q.condition is not None:
        if q.filters:
            messages.append("both condition and filters were sent: condition was applied and filters were ignored")
        return q.condition, "condition", messages
    if q.filters:
        subs = []
        for f in q.filters:
            leaf = dict(f)
            if leaf.get("value") is not None and leaf.get("valueFrom") is None:
                leaf["valueFrom"] = "const"
            subs.append(leaf)
        return {"operation": "and", "subConditions": subs}, "filters", messages
    return None, "none", messages


def _sign(secret: bytes, payload: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(secret, payload, hashlib.sha256).digest()[:18]).decode().rstrip("=")


def encode_cursor(secret: bytes, query_hash: str, values: list[Any]) -> str:
    """An opaque cursor for the row after ``values`` under the query ``query_hash``."""
    payload = json.dumps({"q": query_hash, "k": values}, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=") + "." + _sign(secret, payload)


def decode_cursor(secret: bytes, token: str, query_hash: str) -> list[Any]:
    """The key values inside a cursor.

    Raises:
        BadInput: malformed, altered, or issued for a different query.
    """
    try:
        body, sig = token.split(".", 1)
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(payload)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(
            "cursor is not a cursor issued by this server; pass the previous response's cursor as is",
            field="cursor",
        ) from None
    if not hmac.compare_digest(sig, _sign(secret, payload)) or not isinstance(data, dict):
        raise InvalidCursor(
            "cursor was altered or was issued by another server (set CAIRN_CURSOR_SECRET on every "
            "worker); start again without a cursor",
            field="cursor",
        )
    if data.get("q") != query_hash:
        raise InvalidCursor(
            "cursor belongs to a different query (condition, filters, sort or properties changed); "
            "a cursor only continues the query that produced it",
            field="cursor",
        )
    return list(data.get("k") or [])


async def query_instances(store: OntologyStore, db: Database, *, workspace_id: str, q: InstanceQuery) -> InstancePage:
    """Run one ``objectInstances`` request (see module doc).

    Raises:
        NotFound: unknown network or type. InvalidCondition: see
        :func:`~app.ontology.conditions.parse_condition`. BadInput: sort,
        properties or cursor errors.
    """
    check_shape(q)
    tindex = await store.type_index(db, workspace_id=workspace_id, kn_id=q.kn_id, ot_id=q.ot_id)
    props = tindex.props
    raw, source, messages = _applied_condition(q)
    node: Node | None = None
    if raw is not None:
        node = parse_condition(
            raw,
            props,
            vectors_available=store.vectors_available(tindex.ot),
            path="condition" if source == "condition" else "filters",
        )
    scored = node is not None and node.scoring()
    sort_specs: list[tuple[str, bool]] = []
    for i, s in enumerate(q.sort or []):
        name = s.get("field")
        if name == SCORE and not scored:
            raise BadInput(f"sort[{i}].field _score needs a match or knn condition", field=f"sort[{i}].field")
        if name != SCORE and name not in props:
            raise BadInput(
                f"sort[{i}].field {name!r} is not a property of {q.ot_id}; properties: {', '.join(props)}",
                field=f"sort[{i}].field",
            )
        sort_specs.append((name, s["direction"] == "desc"))
    if not sort_specs and scored:
        sort_specs.append((SCORE, True))
    for k in tindex.ot.primary_key:
        if k not in [n for n, _ in sort_specs]:
            sort_specs.append((k, False))
    if q.properties is not None:
        unknown = [p for p in q.properties if p not in props]
        if unknown:
            raise BadInput(f"properties {unknown} are not properties of {q.ot_id}", field="properties")
    if node is None:
        matches: set[int] = set(range(len(tindex.rows)))
        scores: dict[int, float] = {}
    else:
        matches, scores = await evaluate(node, tindex, store)

    def values_of(pos: int) -> list[Any]:
        return [scores.get(pos) if n == SCORE else tindex.rows[pos].get(n) for n, _ in sort_specs]

    def key_of(values: list[Any]) -> tuple:
        return tuple(_part(v, desc) for v, (_n, desc) in zip(values, sort_specs))

    ordered = sorted(matches, key=lambda pos: key_of(values_of(pos)))
    qhash = hashlib.sha256(
        json.dumps(
            [workspace_id, q.kn_id, q.ot_id, node.canonical() if node else None, sort_specs, q.properties],
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()[:32]
    secret = store.cursor_secret
    if q.cursor is not None:
        values = decode_cursor(secret, q.cursor, qhash)
        if len(values) != len(sort_specs):
            raise InvalidCursor("cursor does not fit this query", field="cursor")
        keys = [key_of(values_of(pos)) for pos in ordered]
        try:
            start = bisect.bisect_right(keys, key_of(values))
        except TypeError:
            raise InvalidCursor("cursor does not fit this query", field="cursor") from None
    else:
        start = q.offset or 0
    page = ordered[start : start + q.limit]
    pk = tindex.ot.primary_key
    wanted = q.properties if q.properties is not None else list(props)
    rows = []
    for pos in page:
        data = tindex.rows[pos]
        row = {n: data.get(n) for n in wanted}
        row[IDENTITY] = {k: data.get(k) for k in pk}
        if scored:
            row[SCORE] = round(scores.get(pos, 0.0), 6)
        rows.append(row)
    more = start + q.limit < len(ordered)
    cursor = encode_cursor(secret, qhash, values_of(page[-1])) if more and page else None
    total = None if q.cursor is not None else len(ordered)
    return InstancePage(
        rows=rows, total_count=total, cursor=cursor, condition_source=source, scored=scored, messages=messages
    )


def toon_rows(rows: list[dict[str, Any]]) -> str:
    """Rows encoded as TOON (Token-Oriented Object Notation) with the official ``toon-format``
    package (``toon_format.encode({"rows": rows})``); ``toon_format.decode`` gives them back."""
    from toon_format import encode

    return encode({"rows": rows})
