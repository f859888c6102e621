"""Decision and ontology tools: ``create_decision``, ``object_instances``, ``semantic_recall``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from app.context import RequestContext
from app.core.errors import BadInput
from app.decisions import check_json_value, validate_idempotency_key, validate_request
from app.governance import Principal
from app.mcp.spec import ToolSpec
from app.ontology import (
    InstanceQuery,
    RecallRequest,
    check_identifier,
    check_request,
    check_shape,
    get_store,
    query_instances,
    semantic_recall,
)

# --- decisions ---------------------------------------------------------------------------

_DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The Decision API body (SPEC §8): exactly one of state and sessionId, and questions.",
    "required": ["questions"],
    "properties": {
        "state": {"type": "object", "description": "A non-empty JSON object the judge decides over."},
        "sessionId": {"type": "string", "description": "An unarchived agent session of yours."},
        "questions": {
            "type": "array",
            "description": "The questions (type, name, instructions, choices or levels).",
            "items": {"type": "object"},
        },
        "idempotencyKey": {
            "type": "string",
            "description": "A replay of the same key and body returns the first outcome.",
        },
    },
}


def _prepare_decision(args: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in args.items() if k != "idempotencyKey"}
    if body.get("state") is not None:
        check_json_value(body["state"], "state")
    validate_request(body)
    key = args.get("idempotencyKey")
    return {
        "body": body,
        "key": validate_idempotency_key([key]) if key is not None else None,
        "sha": hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest(),
    }


async def _run_decision(ctx: RequestContext, principal: Principal, req: dict[str, Any]) -> dict[str, Any]:
    body = req["body"]
    outcome = await ctx.services.decisions.create(
        principal, prepare=lambda: validate_request(body), sha=req["sha"], key=req["key"], source="mcp"
    )
    if outcome.error is not None:
        raise outcome.error
    return {"decision": outcome.decision or {}}


# --- ontology ----------------------------------------------------------------------------

_INSTANCES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["knId", "otId"],
    "properties": {
        "knId": {"type": "string", "description": "Knowledge network id ([A-Za-z][A-Za-z0-9_-]{0,63})."},
        "otId": {"type": "string", "description": "Object type id."},
        "condition": {
            "type": "object",
            "description": "A condition tree (operation, field, value, subConditions), as GraphQL's ConditionInput.",
        },
        "filters": {
            "type": "array",
            "items": {"type": "object"},
            "maxItems": 100,
            "description": "At most 100 simple filters (ignored when condition is given).",
        },
        "limit": {"type": "integer", "default": 10, "description": "Rows per page, 1–10,000 (default 10)."},
        "offset": {"type": "integer", "description": "Jump to this row, 0–1,000,000 (not with cursor)."},
        "cursor": {"type": "string", "description": "The opaque cursor of the previous page."},
        "sort": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["field", "direction"],
                "properties": {"field": {"type": "string"}, "direction": {"enum": ["asc", "desc"]}},
            },
            "description": "1–8 sort keys; without sort the order has no meaning ('top N' needs sort).",
        },
        "properties": {
            "type": "array",
            "items": {"type": "string"},
            "description": "1–500 property names to return (omit for all).",
        },
    },
}


def _prepare_instances(args: dict[str, Any]) -> InstanceQuery:
    check_identifier(args["knId"], "knId")
    check_identifier(args["otId"], "otId")
    if args.get("sort") is not None and len(args["sort"]) == 0:
        raise BadInput("sort takes 1–8 keys (omit it for the default order)", field="sort")
    q = InstanceQuery(
        kn_id=args["knId"],
        ot_id=args["otId"],
        condition=args.get("condition"),
        filters=args.get("filters"),
        limit=args.get("limit", 10),
        offset=args.get("offset"),
        cursor=args.get("cursor"),
        sort=args.get("sort"),
        properties=args.get("properties"),
    )
    check_shape(q)
    return q


async def _run_instances(ctx: RequestContext, principal: Principal, q: InstanceQuery) -> dict[str, Any]:
    services = ctx.services
    page = await query_instances(get_store(services), services.db, workspace_id=principal.workspace_id, q=q)
    return {
        "rows": page.rows,
        "totalCount": page.total_count,
        "cursor": page.cursor,
        "conditionSource": page.condition_source,
        "filtersIgnored": page.condition_source == "condition" and bool(q.filters),
        "messages": page.messages,
    }


_SEMANTIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["knId", "query"],
    "properties": {
        "knId": {"type": "string", "description": "Knowledge network id."},
        "query": {"type": "string", "description": "A natural-language query, 1–1,000 characters."},
        "conceptGroups": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only object types of these concept groups.",
        },
        "objectTypes": {"type": "array", "items": {"type": "string"}, "description": "Only these object types."},
        "excludeObjectTypes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Never these object types.",
        },
        "maxObjectTypes": {"type": "integer", "default": 10, "description": "1–100 object types."},
        "maxInstancesPerType": {"type": "integer", "default": 5, "description": "1–100 instances per type."},
        "rerank": {"type": "boolean", "default": False, "description": "Rerank the fused instances."},
        "includeObjectTypes": {
            "type": "boolean",
            "default": True,
            "description": "Return the object types considered and their scores.",
        },
    },
}


def _prepare_semantic(args: dict[str, Any]) -> RecallRequest:
    check_identifier(args["knId"], "knId")
    r = RecallRequest(
        kn_id=args["knId"],
        query=args["query"],
        concept_groups=args.get("conceptGroups"),
        object_types=args.get("objectTypes"),
        exclude_object_types=args.get("excludeObjectTypes"),
        max_object_types=args.get("maxObjectTypes", 10),
        max_instances_per_type=args.get("maxInstancesPerType", 5),
        rerank=args.get("rerank", False),
        include_object_types=args.get("includeObjectTypes", True),
    )
    check_request(r)
    return r


async def _run_semantic(ctx: RequestContext, principal: Principal, r: RecallRequest) -> dict[str, Any]:
    services = ctx.services
    out = await semantic_recall(get_store(services), services.db, workspace_id=principal.workspace_id, r=r)
    return {
        "nodes": [
            {
                "objectTypeId": n.object_type_id,
                "instanceIdentity": n.identity,
                "properties": n.properties,
                "score": n.score,
                "rerankerScore": n.reranker_score,
                "matchedBy": n.matched_by,
            }
            for n in out.nodes
        ],
        "objectTypes": out.object_types if r.include_object_types else None,
        "selected": out.type_scores,
        "message": out.message,
    }


TOOLS = [
    ToolSpec(
        "create_decision",
        "Run a structured decision (SPEC §8) over a JSON state or an agent session with the decision judge "
        "(scope decisions:run).",
        _DECISION_SCHEMA,
        _prepare_decision,
        _run_decision,
        read_only=False,
    ),
    ToolSpec(
        "object_instances",
        "Instances of one object type of a knowledge network: condition or filters, sort, cursor/offset "
        "paging (scope context:read).",
        _INSTANCES_SCHEMA,
        _prepare_instances,
        _run_instances,
    ),
    ToolSpec(
        "semantic_recall",
        "One natural-language query → relevant instances across the object types of a knowledge network "
        "(scope context:read).",
        _SEMANTIC_SCHEMA,
        _prepare_semantic,
        _run_semantic,
    ),
]
"""The tools of this module, in listing order."""
