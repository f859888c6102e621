"""Library tools: ``search_context_sets``, ``lookup_definitions``, ``match_verified_answers``
(context sets), ``run_query_template`` (approved templates) and
``report_context_gap`` (:mod:`app.gaps`) — each with the validation and coded errors of its
GraphQL operation (``contextSets``, ``lookupDefinitions``, ``matchVerifiedAnswers``,
``runQueryTemplate``, ``reportContextGap``).
"""

from __future__ import annotations

from typing import Any

from cairn.app import contextsets as cs
from cairn.app import gaps
from cairn.app import templates as tpl
from cairn.app.context import RequestContext
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Principal
from cairn.app.mcp.spec import ANY, ARR, BOOL, INT, OBJ, ToolSpec, obj, string

_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": cs.READ_LIMIT_MAX,
    "default": cs.READ_LIMIT_DEFAULT,
    "description": "Most results.",
}
_SET_ID = {"type": "string", "description": "Only this context set (default: every set you can read)."}


def _entry_citation(e: cs.Entry) -> dict[str, Any] | None:
    """Where an approved entry comes from: a document, optionally one passage (null: uncited)."""
    return {"documentId": e.document_id, "passageId": e.passage_id} if e.document_id else None


def _set(v: cs.ContextSetView) -> dict[str, Any]:
    return {
        "id": v.id,
        "name": v.name,
        "description": v.description,
        "active": v.active,
        "version": v.version,
        "scope": {"collectionIds": list(v.collection_ids), "documentIds": list(v.document_ids)},
        "instructions": [e.value for e in v.of("INSTRUCTION")],
        "counts": {
            "verifiedAnswers": len(v.of("VERIFIED_ANSWER")),
            "definitions": len(v.of("DEFINITION")),
            "requiredEvidence": len(v.of("REQUIRED_EVIDENCE")),
        },
        "updatedAt": v.updated_at,
    }


# --- search_context_sets -----------------------------------------------------------------

_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "query": string("Words of the set's name or description (omit: every set).", max_len=500),
        "limit": _LIMIT,
    },
}


def _prepare_search(args: dict[str, Any]) -> cs.ListContextSetsRequest:
    limit = args.get("limit", cs.READ_LIMIT_DEFAULT)
    return cs.ListContextSetsRequest(args.get("query"), limit)


async def _run_search(ctx: RequestContext, principal: Principal, req: cs.ListContextSetsRequest) -> dict[str, Any]:
    return {"contextSets": [_set(v) for v in await cs.list_context_sets(ctx.services, principal, req)]}


# --- lookup_definitions / match_verified_answers -------------------------------------------

_LOOKUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["term"],
    "properties": {
        "term": {"type": "string", "description": "The term or acronym (aliases match too), ≤ 200 characters."},
        "contextSetId": _SET_ID,
        "limit": _LIMIT,
    },
}


def _prepare_lookup(args: dict[str, Any]) -> cs.LookupDefinitionsRequest:
    limit = args.get("limit", cs.READ_LIMIT_DEFAULT)
    return cs.LookupDefinitionsRequest(args["term"], args.get("contextSetId"), limit)


async def _run_lookup(ctx: RequestContext, principal: Principal, req: cs.LookupDefinitionsRequest) -> dict[str, Any]:
    hits = await cs.lookup_definitions(ctx.services, principal, req)
    return {
        "definitions": [
            {
                "contextSetId": h.context_set_id,
                "id": h.entry.id,
                "term": h.entry.key,
                "definition": h.entry.value,
                "aliases": list(h.entry.aliases),
                "score": h.score,
                "matchedWords": list(h.matched_words),
                "trust": h.entry.trust,
                "citation": _entry_citation(h.entry),
            }
            for h in hits
        ]
    }


_MATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["question"],
    "properties": {
        "question": {"type": "string", "description": "The user's question, ≤ 1,000 characters."},
        "contextSetId": _SET_ID,
        "limit": _LIMIT,
    },
}


def _prepare_match(args: dict[str, Any]) -> cs.MatchVerifiedAnswersRequest:
    limit = args.get("limit", cs.READ_LIMIT_DEFAULT)
    return cs.MatchVerifiedAnswersRequest(args["question"], args.get("contextSetId"), limit)


async def _run_match(ctx: RequestContext, principal: Principal, req: cs.MatchVerifiedAnswersRequest) -> dict[str, Any]:
    hits = await cs.match_verified_answers(ctx.services, principal, req)
    return {
        "verifiedAnswers": [
            {
                "contextSetId": h.context_set_id,
                "id": h.entry.id,
                "question": h.entry.key,
                "answer": h.entry.value,
                "score": h.score,
                "coverage": h.coverage,
                "matchedWords": list(h.matched_words),
                "trust": h.entry.trust,
                "citation": _entry_citation(h.entry),
            }
            for h in hits
        ]
    }


# --- run_query_template ------------------------------------------------------------------

_RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["templateId"],
    "properties": {
        "templateId": {"type": "string", "description": "A template id (list_query_templates)."},
        "parameters": {
            "description": "A JSON object of parameter name → value, typed as the template declares: integer, number, "
            "date 'YYYY-MM-DD', list = array.",
        },
        "contextSetId": {"type": "string", "description": "The template's context set (optional check)."},
        "responseFormat": {
            "type": "string",
            "enum": ["JSON", "TOON"],
            "default": "JSON",
            "description": "TOON: rows as one compact Token-Oriented Object Notation string.",
        },
    },
}


def _prepare_run(args: dict[str, Any]) -> tuple[tpl.RunTemplateRequest, bool]:
    validate_identifier(args["templateId"], "templateId")
    if args.get("contextSetId") is not None:
        validate_identifier(args["contextSetId"], "contextSetId")
    parameters = args.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise tpl.QueryParameterInvalid(
            "parameters must be an object of name → value", field="parameters", reason="WRONG_TYPE"
        )
    req = tpl.RunTemplateRequest(
        template_id=args["templateId"], parameters=parameters, context_set_id=args.get("contextSetId")
    )
    return req, args.get("responseFormat", "JSON") == "TOON"


async def _run_template(
    ctx: RequestContext, principal: Principal, req: tuple[tpl.RunTemplateRequest, bool]
) -> dict[str, Any]:
    request, toon = req
    run = await tpl.run_template(ctx.services, principal, request)
    r = run.result
    return {
        "templateId": run.template_id,
        "name": run.name,
        "version": run.version,
        "columns": [{"name": c.name, "type": c.type} for c in r.columns],
        "rows": None if toon else r.rows,
        "toon": tpl.toon_rows(r.rows) if toon else None,
        "responseFormat": "TOON" if toon else "JSON",
        "rowCount": len(r.rows),
        "truncated": r.truncated,
        "rowCap": r.row_cap,
        "notices": [{"code": n.code, "message": n.message} for n in r.notices],
        "elapsedMs": r.elapsed_ms,
    }


# --- report_context_gap ------------------------------------------------------------------

_GAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task", "missing"],
    "properties": {
        "task": {
            "type": "string",
            "description": f"The task or question you worked on, ≤ {gaps.TASK_MAX:,} characters.",
        },
        "missing": {
            "type": "string",
            "description": f"What was missing or wrong, ≤ {gaps.MISSING_MAX:,} characters.",
        },
        "packId": {"type": "string", "description": "packId of the context_pack result it concerns."},
        "traceId": {"type": "string", "description": "traceId of the call it concerns."},
    },
}


def _prepare_gap(args: dict[str, Any]) -> gaps.GapReport:
    req = gaps.GapReport(
        task=args["task"], missing=args["missing"], pack_id=args.get("packId"), trace_id=args.get("traceId")
    )
    gaps.validate_report(req)
    return req


async def _run_gap(ctx: RequestContext, principal: Principal, req: gaps.GapReport) -> dict[str, Any]:
    g = await gaps.report_gap(ctx.services, principal, req)
    return {
        "gap": {
            "id": g.id,
            "task": g.task,
            "missing": g.missing,
            "reporterKind": g.reporter_kind,
            "credentialId": g.credential_id,
            "packId": g.pack_id,
            "traceId": g.trace_id,
            "createdAt": g.created_at,
        }
    }


_RUN_OUT = obj(
    {"columns": ARR, "rows": {"type": ["array", "null"]}, "toon": ANY, "rowCount": INT, "truncated": BOOL},
    required=("rowCount",),
)

TOOLS = [
    ToolSpec(
        "search_context_sets",
        "Curated context sets (a team's approved scope, instructions, definitions and answers): id, name, "
        "description, instructions, entry counts. Call it without arguments to list them all; follow their "
        'instructions. Example: {"query": "billing"}',
        _SEARCH_SCHEMA,
        _prepare_search,
        _run_search,
        obj({"contextSets": ARR}, required=("contextSets",)),
    ),
    ToolSpec(
        "lookup_definitions",
        "Approved definitions of a term or acronym, best match first (score 1.0 = exact term or alias), each "
        'with its source. Use it when a word may have a house meaning. Example: {"term": "ARR"}',
        _LOOKUP_SCHEMA,
        _prepare_lookup,
        _run_lookup,
        obj({"definitions": ARR}, required=("definitions",)),
    ),
    ToolSpec(
        "match_verified_answers",
        "Approved question → answer pairs closest to a question, with score and coverage (0–1, share of the "
        "stored question's words found). Prefer a close match over composing your own answer. "
        'Example: {"question": "How do I reset my password?"}',
        _MATCH_SCHEMA,
        _prepare_match,
        _run_match,
        obj({"verifiedAnswers": ARR}, required=("verifiedAnswers",)),
    ),
    ToolSpec(
        "run_query_template",
        "Runs an approved, read-only database query with typed parameters: columns and rows (capped; truncated "
        "says so). Get templateId and parameters from list_query_templates; you never write SQL. "
        'Example: {"templateId": "qt_…", "parameters": {"since": "2024-01-01"}}',
        _RUN_SCHEMA,
        _prepare_run,
        _run_template,
        _RUN_OUT,
    ),
    ToolSpec(
        "report_context_gap",
        "Tell the curators that context was missing or wrong for a task; they review the reports. Use it when "
        "the tools could not answer. "
        'Example: {"task": "Refund policy for EU orders", "missing": "No document covers EU refunds."}',
        _GAP_SCHEMA,
        _prepare_gap,
        _run_gap,
        obj({"gap": OBJ}, required=("gap",)),
        field_prefix="input.",
        read_only=False,
    ),
]
"""The tools of this module, in listing order."""
