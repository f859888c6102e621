"""One serializer for pack events: the wire fields (camelCase, the GraphQL field names, by
:func:`camel`) of each event, used by the NDJSON stream's lines (:func:`event_json`) and the
MCP ``context_pack`` tool (GraphQL builds its types from the domain dataclasses directly:
``resolvers/packs.py``); and the NDJSON route's strict body parser.

Each NDJSON line is one object with ``type`` = ``header`` | ``item`` | ``footer`` and the
fields of the GraphQL ``PackHeader`` / ``PackItem`` / ``PackFooter`` types
(``tests/unit/packs/test_serialize.py`` checks the names against the schema).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from cairn.app.core.errors import BadInput
from cairn.app.packs import types as pt

TIMING_KEYS = (
    "embedMs",
    "lexicalMs",
    "vectorMs",
    "fusionMs",
    "resolveMs",
    "dedupPackMs",
    "legsMs",
    "recheckMs",
    "contradictionMs",
    "replayMs",
    "firstSetItemMs",
    "firstEvidenceItemMs",
)
"""The footer's per-stage timings (the GraphQL ``PackTimings`` fields), in that order."""
STREAM_TIMING_KEYS = TIMING_KEYS[:6] + TIMING_KEYS[10:]
"""The timings an NDJSON footer line carries: embed, lexical, vector, fusion, resolve and
dedup + pack (as it always has), and the time to the first context-set item and the first
evidence item (issue 13)."""


def camel(name: str) -> str:
    """The wire (GraphQL, NDJSON, MCP) name of a snake_case field: ``dedup_pack_ms`` → ``dedupPackMs``."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def citation_fields(c: pt.Citation) -> dict[str, Any]:
    """A citation's wire fields (GraphQL ``Citation``: every field, camelCase, in field order)."""
    return {camel(k): v for k, v in asdict(c).items()}


def context_set_entry_fields(r: pt.ContextSetEntryRef) -> dict[str, Any]:
    """A set item's source entry's wire fields (GraphQL ``ContextSetEntryRef``, 1:1)."""
    return {camel(k): v for k, v in asdict(r).items()}


def item_fields(item: pt.PackItem) -> dict[str, Any]:
    """An item's wire fields (GraphQL ``PackItem``), nested objects as dicts of theirs;
    datetimes stay datetimes (:func:`event_json` writes them as ISO-8601). An approved
    context-set entry has ``citation``, ``collectionId`` and ``validity`` None and its source
    in ``contextSetEntry`` (None for retrieved evidence)."""
    return {
        "rank": item.rank,
        "kind": item.kind,
        "text": item.text,
        "tokens": item.tokens,
        "trust": item.trust,
        "score": item.score,
        "ranks": {"lexical": item.lexical_rank, "dense": item.dense_rank},
        "citation": citation_fields(item.citation) if item.citation is not None else None,
        "alternateCitations": [citation_fields(a) for a in item.alternates],
        "externalId": item.external_id,
        "documentTitle": item.document_title,
        "collectionId": item.collection_id,
        "collectionName": item.collection_name,
        "validity": ({"validFrom": item.valid_from, "validTo": item.valid_to} if item.valid_from is not None else None),
        "superseded": item.superseded,
        "contradiction": item.contradiction,
        "contradicts": list(item.contradicts),
        "interval": interval_fields(item.interval),
        "contextSetEntry": (
            context_set_entry_fields(item.context_set_entry) if item.context_set_entry is not None else None
        ),
    }


def interval_fields(interval: tuple[datetime | None, datetime | None, str] | None) -> dict[str, Any] | None:
    """A FACT item's interval (GraphQL ``FactInterval``: ``validFrom``, ``validTo``, ``precision``
    upper-case ``DAY`` | ``MONTH`` | ``YEAR``); None for the other kinds."""
    if interval is None:
        return None
    valid_from, valid_to, precision = interval
    return {"validFrom": valid_from, "validTo": valid_to, "precision": precision.upper()}


def header_fields(h: pt.PackHeader) -> dict[str, Any]:
    """A header's wire fields (GraphQL ``PackHeader`` less ``coordinate``/``capability``, which
    come from the call, not the pack)."""
    return {
        "packId": h.pack_id,
        "replayId": h.replay_id,
        "maxTokens": h.max_tokens,
        "maxLatencyMs": h.max_latency_ms,
        "coverage": h.coverage,
        "retrieval": h.retrieval,
        "asOf": {"validTime": h.valid_time, "systemTime": h.system_time},
        "tokenizer": h.tokenizer,
        "traceId": h.trace_id,
    }


def timings_fields(timings: Mapping[str, float]) -> dict[str, float | None]:
    """Every :data:`TIMING_KEYS` stage, None where the pack did not record it (GraphQL ``PackTimings``)."""
    return {k: timings.get(k) for k in TIMING_KEYS}


def footer_fields(f: pt.PackFooter) -> dict[str, Any]:
    """A footer's wire fields (GraphQL ``PackFooter``; ``timings`` with every stage; ``omitted``
    = GraphQL ``PackOmitted``: ``belowRelevanceFloor``, ``overMaxItems``, ``overTokenBudget``)."""
    return {
        "tokensUsed": f.tokens_used,
        "itemCount": f.item_count,
        "truncated": f.truncated,
        "complete": f.complete,
        "incompleteReasons": list(f.incomplete_reasons),
        "latencyMs": f.latency_ms,
        "timings": timings_fields(f.timings),
        "candidates": f.candidates,
        "duplicatesMerged": f.duplicates_merged,
        "notes": list(f.notes),
        "omitted": {camel(k): v for k, v in asdict(f.omitted).items()},
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def event_json(event: pt.PackEvent, *, coordinate: str = "", capability: str = "") -> dict[str, Any]:
    """One pack event as a JSON-ready dict (an NDJSON line): ``type``, then the event's wire
    fields with datetimes as ISO-8601; a header ends with the call's ``coordinate`` and
    ``capability``; a footer's ``timings`` hold :data:`STREAM_TIMING_KEYS`."""
    if isinstance(event, pt.PackHeader):
        fields = header_fields(event)
        as_of = fields["asOf"]
        fields["asOf"] = {"validTime": _iso(as_of["validTime"]), "systemTime": _iso(as_of["systemTime"])}
        return {"type": "header", **fields, "coordinate": coordinate, "capability": capability}
    if isinstance(event, pt.PackItem):
        fields = item_fields(event)
        validity = fields["validity"]
        if validity is not None:
            fields["validity"] = {"validFrom": _iso(validity["validFrom"]), "validTo": _iso(validity["validTo"])}
        interval = fields["interval"]
        if interval is not None:
            fields["interval"] = {
                **interval,
                "validFrom": _iso(interval["validFrom"]),
                "validTo": _iso(interval["validTo"]),
            }
        return {"type": "item", **fields}
    fields = footer_fields(event)
    fields["timings"] = {k: fields["timings"][k] for k in STREAM_TIMING_KEYS}
    return {"type": "footer", **fields}


_INPUT_KEYS = {"task", "budget", "asOf", "filters", "retrieval", "contextSetId", "relevance"}
_BUDGET_KEYS = {"maxTokens", "maxItems", "maxLatencyMs", "coverage"}
_RELEVANCE_KEYS = {"minRelativeScore"}
_ASOF_KEYS = {"validTime", "systemTime"}
_FILTER_KEYS = {"collectionIds", "documentIds", "sources"}


def _obj(value: Any, field: str, keys: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f"{field} must be an object", field=field)
    unknown = sorted(set(value) - keys)
    if unknown:
        raise BadInput(f"{field} has unknown field(s) {unknown}; allowed: {sorted(keys)}", field=field)
    return value


def _int(value: Any, field: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{field} must be an integer", field=field)
    return value


def _optional_int(value: Any, field: str) -> int | None:
    return None if value is None else _int(value, field, 0)


def _number(value: Any, field: str) -> float | None:
    """An optional JSON number (an integer too, as GraphQL ``Float`` takes one); not a boolean."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{field} must be a number", field=field)
    return float(value)


def _time(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"{field} must be an ISO-8601 string", field=field)
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{field} is not ISO-8601 (e.g. 2025-01-01T00:00:00Z)", field=field) from None


def _ids(value: Any, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"{field} must be a list of strings", field=field)
    return tuple(value)


class _DuplicateKey(ValueError):
    """A JSON object repeated a key (``args[0]`` is the key)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_body(raw: bytes, shape: str = "the ContextPackInput shape") -> Any:
    """The raw NDJSON request body as JSON, refusing repeated keys (``json.loads`` keeps the
    last one silently). ``shape`` names the expected body in the error (the replay route passes
    its own).

    Raises:
        BadInput: not UTF-8 JSON, or a key repeated (``field`` names it).
    """
    try:
        return json.loads(raw.decode("utf-8") or "null", object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise BadInput(f"duplicate JSON key {exc.args[0]!r}; send each field once", field=exc.args[0]) from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadInput(f"request body must be one UTF-8 JSON object ({shape})") from None


def request_from_json(body: Any) -> pt.PackRequest:
    """Parse the NDJSON route's body (the ``ContextPackInput`` shape, camelCase) strictly.

    Raises:
        BadInput: wrong types, unknown fields, or (via validation) a SPEC §3 limit.
    """
    if not isinstance(body, dict):
        raise BadInput("the body must be one JSON object (the ContextPackInput shape)", field="input")
    data = _obj(body, "input", _INPUT_KEYS)
    if "task" not in data or not isinstance(data["task"], str):
        raise BadInput("input.task is required and must be a string", field="input.task")
    budget = _obj(data.get("budget"), "input.budget", _BUDGET_KEYS)
    as_of = _obj(data.get("asOf"), "input.asOf", _ASOF_KEYS)
    filters = _obj(data.get("filters"), "input.filters", _FILTER_KEYS)
    relevance = _obj(data.get("relevance"), "input.relevance", _RELEVANCE_KEYS)
    sources = _ids(filters.get("sources"), "input.filters.sources")
    for obj, key, path, default in (
        (budget, "maxTokens", "input.budget.maxTokens", pt.DEFAULT_TOKENS),
        (budget, "maxLatencyMs", "input.budget.maxLatencyMs", pt.DEFAULT_LATENCY_MS),
        (budget, "coverage", "input.budget.coverage", pt.Coverage.BEST_EFFORT.value),
        (data, "retrieval", "input.retrieval", pt.RetrievalMode.HYBRID.value),
    ):
        if key in obj and obj[key] is None:  # non-null with a default in the GraphQL input, as there
            raise BadInput(f"{path} must not be null; omit it for the default {default}", field=path)
    req = pt.PackRequest(
        task=data["task"],
        max_tokens=_int(budget.get("maxTokens"), "input.budget.maxTokens", pt.DEFAULT_TOKENS),
        max_latency_ms=_int(budget.get("maxLatencyMs"), "input.budget.maxLatencyMs", pt.DEFAULT_LATENCY_MS),
        coverage=str(budget.get("coverage", pt.Coverage.BEST_EFFORT.value)),
        valid_time=_time(as_of.get("validTime"), "input.asOf.validTime"),
        system_time=_time(as_of.get("systemTime"), "input.asOf.systemTime"),
        collection_ids=_ids(filters.get("collectionIds"), "input.filters.collectionIds"),
        document_ids=_ids(filters.get("documentIds"), "input.filters.documentIds"),
        sources=sources if sources is not None else (pt.PackSource.PASSAGES.value,),
        retrieval=str(data.get("retrieval", pt.RetrievalMode.HYBRID.value)),
        context_set_id=data.get("contextSetId"),
        max_items=_optional_int(budget.get("maxItems"), "input.budget.maxItems"),
        min_relative_score=_number(relevance.get("minRelativeScore"), "input.relevance.minRelativeScore"),
    )
    pt.validate_pack_request(req)
    return req
