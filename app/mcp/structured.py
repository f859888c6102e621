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
from cairn.app.mcp.spec import ANY, ARR, OBJ, ToolSpec, obj, traced_call
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
    "required": ["questions"],
    "properties": {
        "state": {"type": "object", "description": "The facts to decide over (a JSON object); or sessionId."},
        "sessionId": {"type": "string", "description": "One of your agent sessions to decide over; or state."},
        "questions": {
            "type": "array",
            "description": "Each {type: CHOICE or SCORE, name, instructions, choices: [{value}] or levels}.",
            "items": {"type": "object"},
        },
        "idempotencyKey": {"type": "string", "description": "Repeat the same key and body: the first outcome."},
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
        "knId": {"type": "string", "description": "A knowledge network id (list_knowledge_networks)."},
        "otId": {"type": "string", "description": "An object type id (list_object_types)."},
        "condition": {
            "type": "object",
            "description": "{operation, field, value, valueFrom: const} or {operation: and|or, subConditions: "
            "[…]}; each property's operations are in list_object_types.",
        },
        "filters": {
            "type": "array",
            "items": {"type": "object"},
            "maxItems": 100,
            "description": "Simple filters (ignored when condition is given).",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 10, "description": "Rows per page."},
        "offset": {"type": "integer", "description": "Skip this many rows (not with cursor)."},
        "cursor": {"type": "string", "description": "cursor of the previous page."},
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
            "description": "Properties to return (omit for all).",
        },
    },
}


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
    call = traced_call(ctx, "mcp.object_instances", args)
    result, _ = await object_instances(ctx.services, principal, InstancesRequest(query=q, call=call))
    return result


_SEMANTIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["knId", "query"],
    "properties": {
        "knId": {"type": "string", "description": "A knowledge network id (list_knowledge_networks)."},
        "query": {"type": "string", "description": "What to find, in plain words."},
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
        "maxObjectTypes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 10,
            "description": "Most types.",
        },
        "maxInstancesPerType": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 5,
            "description": "Most instances per type.",
        },
        "rerank": {"type": "boolean", "default": False, "description": "Rerank the instances (slower)."},
        "includeObjectTypes": {
            "type": "boolean",
            "default": True,
            "description": "Also return the object types considered and their scores.",
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
    call = traced_call(ctx, "mcp.semantic_recall", args)
    result, _ = await recall_instances(ctx.services, principal, SemanticRecallRequest(recall=r, call=call))
    return result


TOOLS = [
    ToolSpec(
        "create_decision",
        "Asks the decision judge structured questions about a JSON state or one of your sessions; returns the "
        "decision with an answer per question. "
        'Example: {"state": {"order": 17, "late": true}, "questions": [{"type": "CHOICE", "name": "refund", '
        '"instructions": "Refund the order?", "choices": [{"value": true}, {"value": false}]}]}',
        _DECISION_SCHEMA,
        _prepare_decision,
        _run_decision,
        obj({"decision": OBJ}, required=("decision",)),
        read_only=False,
    ),
    ToolSpec(
        "object_instances",
        "Rows of one object type of a knowledge network (orders, customers, …) matching a condition, sorted and "
        "paged (totalCount, cursor for the next page). Get knId and otId from list_knowledge_networks and "
        'list_object_types. Example: {"knId": "northwind", "otId": "orders", "condition": {"operation": "==", '
        '"field": "country", "value": "France", "valueFrom": "const"}}',
        _INSTANCES_SCHEMA,
        _prepare_instances,
        _run_instances,
        obj({"rows": {"type": ["array", "null"]}, "totalCount": ANY, "cursor": ANY}),
    ),
    ToolSpec(
        "semantic_recall",
        "Finds the objects of a knowledge network that match a plain-language query, across its object types, "
        "best first. Use it when you do not know which type or field to filter. "
        'Example: {"knId": "northwind", "query": "customers in Berlin who ordered cheese"}',
        _SEMANTIC_SCHEMA,
        _prepare_semantic,
        _run_semantic,
        obj({"nodes": ARR, "objectTypes": ANY, "message": ANY}, required=("nodes",)),
    ),
]
"""The tools of this module, in listing order."""
