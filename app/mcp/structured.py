"""Decision and ontology tools: ``create_decision``, ``object_instances``, ``semantic_recall``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from cairn.app.context import RequestContext
from cairn.app.core.errors import BadInput
from cairn.app.decisions import (
    DecisionSubmission,
    check_json_value,
    submit_decision,
    validate_idempotency_key,
    validate_request,
)
from cairn.app.governance import Principal
from cairn.app.interactions import TracedCall
from cairn.app.mcp.spec import ToolSpec
from cairn.app.ontology import (
    InstanceQuery,
    InstancesRequest,
    RecallRequest,
    SemanticRecallRequest,
    check_identifier,
    check_request,
    check_shape,
    object_instances,
    recall_instances,
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


def _prepare_decision(args: dict[str, Any]) -> DecisionSubmission:
    body = {k: v for k, v in args.items() if k != "idempotencyKey"}
    if body.get("state") is not None:
        check_json_value(body["state"], "state")
    validate_request(body)
    key = args.get("idempotencyKey")
    return DecisionSubmission(
        body=body,
        sha256=hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest(),
        idempotency_key=validate_idempotency_key([key]) if key is not None else None,
        source="mcp",
    )


async def _run_decision(ctx: RequestContext, principal: Principal, req: DecisionSubmission) -> dict[str, Any]:
    outcome = await submit_decision(ctx.services, principal, req)
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


def _traced(ctx: RequestContext, operation: str, args: dict[str, Any]) -> TracedCall:
    """The tool call as an ad-hoc traced call (no ``trace`` input; an ``X-Client-Invocation-Id``
    header over HTTP makes it idempotent), identified by the tool's registry name and arguments."""
    return TracedCall(operation=operation, trace=None, headers=ctx.headers, normalized_input=dict(sorted(args.items())))


def _prepare_instances(args: dict[str, Any]) -> tuple[InstanceQuery, dict[str, Any]]:
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
    return q, args


async def _run_instances(
    ctx: RequestContext, principal: Principal, req: tuple[InstanceQuery, dict[str, Any]]
) -> dict[str, Any]:
    q, args = req
    call = _traced(ctx, "mcp.object_instances", args)
    result, _ = await object_instances(ctx.services, principal, InstancesRequest(query=q, call=call))
    return result


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


def _prepare_semantic(args: dict[str, Any]) -> tuple[RecallRequest, dict[str, Any]]:
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
    return r, args


async def _run_semantic(
    ctx: RequestContext, principal: Principal, req: tuple[RecallRequest, dict[str, Any]]
) -> dict[str, Any]:
    r, args = req
    call = _traced(ctx, "mcp.semantic_recall", args)
    result, _ = await recall_instances(ctx.services, principal, SemanticRecallRequest(recall=r, call=call))
    return result


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
