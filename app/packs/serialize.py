"""JSON (camelCase, GraphQL field names) for pack events: the NDJSON stream's line format.

Each line is one object with ``type`` = ``header`` | ``item`` | ``footer`` and the same
fields as the GraphQL ``PackHeader`` / ``PackItem`` / ``PackFooter`` types.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from app.core.errors import BadInput
from app.packs import types as pt


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _citation(c: pt.Citation) -> dict[str, Any]:
    return {
        "documentId": c.document_id,
        "versionId": c.version_id,
        "passageId": c.passage_id,
        "start": c.start,
        "end": c.end,
        "sha256": c.sha256,
    }


def _entry_ref(r: pt.ContextSetEntryRef | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "contextSetId": r.context_set_id,
        "entryId": r.entry_id,
        "setVersion": r.set_version,
        "citedDocumentId": r.cited_document_id,
        "citedPassageId": r.cited_passage_id,
    }


def event_json(event: pt.PackEvent, *, coordinate: str = "", capability: str = "") -> dict[str, Any]:
    """One pack event as a JSON-ready dict."""
    if isinstance(event, pt.PackHeader):
        return {
            "type": "header",
            "packId": event.pack_id,
            "replayId": event.replay_id,
            "maxTokens": event.max_tokens,
            "maxLatencyMs": event.max_latency_ms,
            "coverage": event.coverage,
            "retrieval": event.retrieval,
            "asOf": {"validTime": _iso(event.valid_time), "systemTime": _iso(event.system_time)},
            "tokenizer": event.tokenizer,
            "traceId": event.trace_id,
            "coordinate": coordinate,
            "capability": capability,
        }
    if isinstance(event, pt.PackItem):
        return {
            "type": "item",
            "rank": event.rank,
            "kind": event.kind,
            "text": event.text,
            "tokens": event.tokens,
            "trust": event.trust,
            "score": event.score,
            "ranks": {"lexical": event.lexical_rank, "dense": event.dense_rank},
            "citation": _citation(event.citation) if event.citation is not None else None,
            "alternateCitations": [_citation(a) for a in event.alternates],
            "documentTitle": event.document_title,
            "collectionId": event.collection_id,
            "validity": (
                {"validFrom": _iso(event.valid_from), "validTo": _iso(event.valid_to)}
                if event.valid_from is not None
                else None
            ),
            "superseded": event.superseded,
            "contradiction": event.contradiction,
            "contradicts": list(event.contradicts),
            "contextSetEntry": _entry_ref(event.context_set_entry),
        }
    t = event.timings
    return {
        "type": "footer",
        "tokensUsed": event.tokens_used,
        "itemCount": event.item_count,
        "truncated": event.truncated,
        "complete": event.complete,
        "incompleteReasons": list(event.incomplete_reasons),
        "latencyMs": event.latency_ms,
        "timings": {
            "embedMs": t.get("embedMs"),
            "lexicalMs": t.get("lexicalMs"),
            "vectorMs": t.get("vectorMs"),
            "fusionMs": t.get("fusionMs"),
            "resolveMs": t.get("resolveMs"),
            "dedupPackMs": t.get("dedupPackMs"),
            "firstSetItemMs": t.get("firstSetItemMs"),
            "firstEvidenceItemMs": t.get("firstEvidenceItemMs"),
        },
        "candidates": event.candidates,
        "duplicatesMerged": event.duplicates_merged,
        "notes": list(event.notes),
    }


_INPUT_KEYS = {"task", "budget", "asOf", "filters", "retrieval", "contextSetId"}
_BUDGET_KEYS = {"maxTokens", "maxLatencyMs", "coverage"}
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


def parse_body(raw: bytes) -> Any:
    """The raw NDJSON request body as JSON, refusing repeated keys (``json.loads`` keeps the
    last one silently).

    Raises:
        BadInput: not UTF-8 JSON, or a key repeated (``field`` names it).
    """
    try:
        return json.loads(raw.decode("utf-8") or "null", object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise BadInput(f"duplicate JSON key {exc.args[0]!r}; send each field once", field=exc.args[0]) from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadInput("request body must be one UTF-8 JSON object (the ContextPackInput shape)") from None


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
    sources = _ids(filters.get("sources"), "input.filters.sources")
    for obj, key, path, default in (
        (budget, "maxTokens", "input.budget.maxTokens", pt.DEFAULT_TOKENS),
        (budget, "maxLatencyMs", "input.budget.maxLatencyMs", pt.DEFAULT_LATENCY_MS),
        (budget, "coverage", "input.budget.coverage", "BEST_EFFORT"),
        (data, "retrieval", "input.retrieval", "HYBRID"),
    ):
        if key in obj and obj[key] is None:  # non-null with a default in the GraphQL input, as there
            raise BadInput(f"{path} must not be null; omit it for the default {default}", field=path)
    req = pt.PackRequest(
        task=data["task"],
        max_tokens=_int(budget.get("maxTokens"), "input.budget.maxTokens", pt.DEFAULT_TOKENS),
        max_latency_ms=_int(budget.get("maxLatencyMs"), "input.budget.maxLatencyMs", pt.DEFAULT_LATENCY_MS),
        coverage=str(budget.get("coverage", "BEST_EFFORT")),
        valid_time=_time(as_of.get("validTime"), "input.asOf.validTime"),
        system_time=_time(as_of.get("systemTime"), "input.asOf.systemTime"),
        collection_ids=_ids(filters.get("collectionIds"), "input.filters.collectionIds"),
        document_ids=_ids(filters.get("documentIds"), "input.filters.documentIds"),
        sources=sources if sources is not None else ("PASSAGES",),
        retrieval=str(data.get("retrieval", "HYBRID")),
        context_set_id=data.get("contextSetId"),
    )
    pt.validate_pack_request(req)
    return req
