"""Fact tools: ``timeline`` and ``current_facts`` (temporal statements, :mod:`app.temporal`),
``list_fields`` and ``query_fields`` (learned fields, :mod:`app.fields`) — each with the
validation and coded errors of its GraphQL operation (``timeline``, ``currentFacts``,
``fields``, ``queryFields``). Every statement and every field value carries its citation
(the version text ``[start:end]`` and its SHA-256).
"""

from __future__ import annotations

from typing import Any

from cairn.app import fields as fl
from cairn.app import temporal as tm
from cairn.app.context import RequestContext
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Principal
from cairn.app.mcp.spec import ANY, ARR, AS_OF, BOOL, INT, ToolSpec, as_of_times, obj, parse_time
from cairn.app.packs import Trust

# --- timeline / current_facts ------------------------------------------------------------


def _fact(f: tm.Fact) -> dict[str, Any]:
    return {
        "id": f.id,
        "subject": f.subject,
        "relation": f.relation or None,
        "holder": f.holder or None,
        "text": f.text,
        "citation": {
            "documentId": f.document_id,
            "versionId": f.version_id,
            "passageId": f.passage_id,
            "start": f.start,
            "end": f.end,
            "sha256": f.sha256,
            "externalId": f.external_id,
            "documentTitle": f.document_title,
            "collectionId": f.collection_id,
            "collectionName": f.collection_name,
        },
        "interval": {"validFrom": f.valid_from, "validTo": f.valid_to, "precision": f.precision.upper()},
        "since": f.valid_from,
        "timeSource": f.time_source.upper(),
        "endedBy": f.ended_by,
        "trust": Trust.UNTRUSTED.value,
    }


_SUBJECT = {"type": "string", "description": "What the statements are about: a document title (documentTitle)."}
_FACT_LIMIT = {"type": "integer", "minimum": 1, "maximum": 500, "default": 100, "description": "Most statements."}

_TIMELINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["subject"],
    "properties": {
        "subject": _SUBJECT,
        "from": {"type": "string", "description": "Only statements still true after this time (ISO-8601 with zone)."},
        "to": {"type": "string", "description": "Only statements already true before this time (ISO-8601 with zone)."},
        "asOf": AS_OF,
        "limit": _FACT_LIMIT,
    },
}

_CURRENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["subject"],
    "properties": {"subject": _SUBJECT, "asOf": AS_OF, "limit": _FACT_LIMIT},
}


def _prepare_timeline(args: dict[str, Any]) -> tm.TemporalRead:
    valid_time, system_time = as_of_times(args)
    req = tm.TemporalRead(
        args["subject"],
        parse_time(args.get("from"), "from"),
        parse_time(args.get("to"), "to"),
        valid_time,
        system_time,
        args.get("limit", 100),
    )
    tm.validate_read(req)
    return req


def _prepare_current(args: dict[str, Any]) -> tm.TemporalRead:
    valid_time, system_time = as_of_times(args)
    req = tm.TemporalRead(args["subject"], None, None, valid_time, system_time, args.get("limit", 100))
    tm.validate_read(req)
    return req


async def _run_timeline(ctx: RequestContext, principal: Principal, req: tm.TemporalRead) -> dict[str, Any]:
    return {"facts": [_fact(f) for f in await tm.timeline(ctx.services, principal, req)]}


async def _run_current(ctx: RequestContext, principal: Principal, req: tm.TemporalRead) -> dict[str, Any]:
    return {"facts": [_fact(f) for f in await tm.current_facts(ctx.services, principal, req)]}


# --- list_fields / query_fields ----------------------------------------------------------

_KNOWN_AT = {"type": "string", "description": "Values as known on this date, YYYY-MM-DD (default today)."}

_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["collectionId"],
    "properties": {
        "collectionId": {"type": "string", "description": "A collection id (list_collections)."},
        "knownAt": _KNOWN_AT,
    },
}


def _prepare_list(args: dict[str, Any]) -> fl.FieldsRequest:
    validate_identifier(args["collectionId"], "collectionId")
    return fl.FieldsRequest(args["collectionId"], args.get("knownAt"))


async def _run_list(ctx: RequestContext, principal: Principal, req: fl.FieldsRequest) -> dict[str, Any]:
    infos = await fl.list_fields(ctx.services, principal, req)
    return {
        "fields": [
            {
                "name": i.spec.name,
                "type": i.spec.type.name,
                "description": i.spec.description,
                "multiplicity": i.spec.multiplicity.name,
                "examples": list(i.spec.examples),
                "documents": i.documents,
                "documentsWithValue": i.with_value,
                "coverage": i.coverage,
                "model": i.model,
                "labels": i.labels,
            }
            for i in infos
        ]
    }


_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["collectionId", "fields"],
    "properties": {
        "collectionId": {"type": "string", "description": "A collection id (list_collections)."},
        "fields": {
            "type": "array",
            "items": {"type": "string"},
            "description": f"1–{fl.MAX_FIELDS} field names (list_fields) to return per document.",
        },
        "filters": {
            "type": "array",
            "description": f"At most {fl.MAX_FILTERS} filters, all must hold.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["field", "op"],
                "properties": {
                    "field": {"type": "string", "description": "A defined field."},
                    "op": {"type": "string", "enum": list(fl.OPS), "description": "Typed operator."},
                    "value": {
                        "description": 'Typed by the field: "2 years", "2020-01-31", {amount, currency}; '
                        "a list for IN; none for EXISTS/MISSING."
                    },
                },
            },
        },
        "sort": {
            "type": "array",
            "description": "At most 6 sort keys.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["field"],
                "properties": {
                    "field": {"type": "string", "description": "A field of the plan."},
                    "descending": {"type": "boolean", "default": False, "description": "Largest first."},
                },
            },
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": fl.MAX_LIMIT,
            "default": 50,
            "description": "Most rows (one per document).",
        },
        "aggregate": {
            "type": "object",
            "additionalProperties": False,
            "required": ["op"],
            "description": "COUNT documents or MIN/MAX/SUM/AVG a field, optionally per groupBy value.",
            "properties": {
                "op": {"type": "string", "enum": ["COUNT", "MIN", "MAX", "SUM", "AVG"], "description": "Aggregate."},
                "field": {"type": "string", "description": "The field aggregated (not for COUNT)."},
                "groupBy": {"type": "string", "description": "A field to group by."},
            },
        },
        "knownAt": _KNOWN_AT,
    },
}


def _prepare_query(args: dict[str, Any]) -> fl.Plan:
    validate_identifier(args["collectionId"], "plan.collectionId")
    agg = args.get("aggregate")
    plan = fl.Plan(
        collection_id=args["collectionId"],
        fields=tuple(args["fields"]),
        filters=tuple(fl.Filter(f["field"], f["op"], f.get("value")) for f in args.get("filters") or ()),
        sort=tuple(fl.Sort(s["field"], s.get("descending", False)) for s in args.get("sort") or ()),
        limit=args.get("limit", 50),
        aggregate=fl.Aggregate(agg["op"], agg.get("field"), agg.get("groupBy")) if agg else None,
        known_at=args.get("knownAt"),
    )
    fl.check_limits(plan)
    return plan


def _value(v: fl.ValueView) -> dict[str, Any]:
    cited = v.value is not None and v.passage_id and v.start is not None and v.end is not None and v.sha256
    return {
        "field": v.field,
        "value": v.value,
        "key": v.key,
        "score": v.score,
        "citation": (
            {
                "documentId": v.document_id,
                "versionId": v.version_id,
                "passageId": v.passage_id,
                "start": v.start,
                "end": v.end,
                "sha256": v.sha256,
            }
            if cited
            else None
        ),
        "uncitedReason": v.uncited_reason,
        "stale": v.stale,
        "source": v.source,
    }


async def _run_query(ctx: RequestContext, principal: Principal, plan: fl.Plan) -> dict[str, Any]:
    r = await fl.query_fields(ctx.services, principal, plan)
    return {
        "rows": [
            {
                "documentId": d.document_id,
                "externalId": d.external_id,
                "title": d.title,
                "versionId": d.version_id,
                "versionNumber": d.version_number,
                "values": [_value(v) for f in r.fields for v in d.values.get(f, [])],
            }
            for d in r.rows
        ],
        "matched": r.matched,
        "documents": r.documents,
        "groups": None
        if r.groups is None
        else [{"key": g.key, "documents": g.documents, "value": g.value} for g in r.groups],
        "coverage": [{"field": k, "coverage": v} for k, v in r.coverage.items()],
        "coverageLines": r.coverage_lines,
        "incomplete": r.incomplete,
    }


_FACTS_OUT = obj({"facts": ARR}, required=("facts",))

TOOLS = [
    ToolSpec(
        "timeline",
        "Dated statements about a subject in time order (who held a role, what changed when), each with its "
        "validity interval and citation. Use it for 'when' and 'who was … in 2020' questions. "
        'Example: {"subject": "Acme Corp", "from": "2019-01-01T00:00:00Z"}',
        _TIMELINE_SCHEMA,
        _prepare_timeline,
        _run_timeline,
        _FACTS_OUT,
    ),
    ToolSpec(
        "current_facts",
        "What holds about a subject now (or at asOf.validTime): per role the latest statement and since when, "
        'each cited. Use it for \'who is … now\' questions. Example: {"subject": "Acme Corp"}',
        _CURRENT_SCHEMA,
        _prepare_current,
        _run_current,
        _FACTS_OUT,
    ),
    ToolSpec(
        "list_fields",
        "The fields learned from a collection's documents (name, type, multiplicity, description) and coverage, "
        "the share (0–1) of documents with a cited value. Use it before query_fields. "
        'Example: {"collectionId": "col_…"}',
        _LIST_SCHEMA,
        _prepare_list,
        _run_list,
        obj({"fields": ARR}, required=("fields",)),
    ),
    ToolSpec(
        "query_fields",
        "Filters, sorts or aggregates a collection's documents by their learned field values: rows with cited "
        "values, or groups for an aggregate; incomplete is true when coverage is under 90%. "
        'Example: {"collectionId": "col_…", "fields": ["term"], "filters": [{"field": "term", "op": "GT", '
        '"value": "2 years"}]}',
        _QUERY_SCHEMA,
        _prepare_query,
        _run_query,
        obj({"rows": ARR, "matched": INT, "groups": ANY, "incomplete": BOOL}, required=("rows",)),
        field_prefix="plan.",
    ),
]
"""The tools of this module, in listing order."""
