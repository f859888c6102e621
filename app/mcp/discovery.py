"""Discovery tools: the ids the other tools take, so an agent needs none from outside.

``list_collections`` (``collectionId`` of ``list_fields``, ``query_fields``, pack filters),
``list_knowledge_networks`` and ``list_object_types`` (``knId``/``otId`` of
``object_instances`` and ``semantic_recall``), ``list_query_templates`` (``templateId`` and
the typed parameters of ``run_query_template``). Context sets are found with
``search_context_sets`` (:mod:`app.mcp.library`). Each is governed as the GraphQL operation it
maps to (``collections``, ``knowledgeNetworks``, ``objectTypes``, ``queryTemplates``).
"""

from __future__ import annotations

from typing import Any

from strawberry.utils.str_converters import to_camel_case

from cairn.app import templates as tpl
from cairn.app.context import RequestContext
from cairn.app.core.text_rules import validate_identifier
from cairn.app.corpus import workspace_collections
from cairn.app.governance import Principal
from cairn.app.mcp.spec import ARR, STR, ToolSpec, obj, traced_call
from cairn.app.ontology import ObjectTypesRequest, check_identifier, list_knowledge_networks, object_types

_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {}}


# --- list_collections ----------------------------------------------------------------------


async def _run_collections(ctx: RequestContext, principal: Principal, _req: None) -> dict[str, Any]:
    return {
        "collections": [
            {"id": c.id, "name": c.name, "documentCount": c.document_count}
            for c in await workspace_collections(ctx.services, principal)
        ]
    }


_COLLECTIONS_OUT = obj({"collections": ARR}, required=("collections",))


# --- list_knowledge_networks / list_object_types -------------------------------------------


async def _run_networks(ctx: RequestContext, principal: Principal, _req: None) -> dict[str, Any]:
    return {
        "knowledgeNetworks": [
            {"id": k.kn_id, "name": k.name, "description": k.description}
            for k in await list_knowledge_networks(ctx.services, principal)
        ]
    }


_NETWORKS_OUT = obj({"knowledgeNetworks": ARR}, required=("knowledgeNetworks",))

_TYPES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["knId"],
    "properties": {"knId": {"type": "string", "description": "A knowledge network id (list_knowledge_networks)."}},
}


def _prepare_types(args: dict[str, Any]) -> dict[str, Any]:
    check_identifier(args["knId"], "knId")
    return args


def _camel(value: Any) -> Any:
    """The ontology service's snake_case keys (as recorded for replays) as the tools' camelCase."""
    if isinstance(value, dict):
        return {to_camel_case(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


async def _run_types(ctx: RequestContext, principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    call = traced_call(ctx, "mcp.list_object_types", args)
    result, _ = await object_types(ctx.services, principal, ObjectTypesRequest(kn_id=args["knId"], call=call))
    return {"knId": args["knId"], "objectTypes": _camel(result)}


_TYPES_OUT = obj({"knId": STR, "objectTypes": ARR}, required=("objectTypes",))


# --- list_query_templates ------------------------------------------------------------------

_TEMPLATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "contextSetId": {
            "type": "string",
            "description": "Only this context set's templates (default: your bound set, else every active set).",
        }
    },
}


def _prepare_templates(args: dict[str, Any]) -> tpl.ListTemplatesRequest:
    if args.get("contextSetId") is not None:
        validate_identifier(args["contextSetId"], "contextSetId")
    return tpl.ListTemplatesRequest(context_set_id=args.get("contextSetId"), every_set=True)


async def _run_templates(ctx: RequestContext, principal: Principal, req: tpl.ListTemplatesRequest) -> dict[str, Any]:
    views = await tpl.list_templates(ctx.services, principal, req)
    return {
        "queryTemplates": [
            {
                "id": v.id,
                "name": v.name,
                "description": v.description,
                "contextSetId": v.context_set_id,
                "parameters": [p.to_json() for p in v.parameters],
                "maxRows": v.max_rows,
            }
            for v in views
            if v.approved  # what run_query_template runs (an admin's listing also holds drafts)
        ]
    }


_TEMPLATES_OUT = obj({"queryTemplates": ARR}, required=("queryTemplates",))


TOOLS = [
    ToolSpec(
        "list_collections",
        "The document collections you can read: id, name, documentCount. Use it first to get the collectionId "
        "that list_fields, query_fields and context_pack's filters take.",
        _NO_ARGUMENTS,
        lambda _args: None,
        _run_collections,
        _COLLECTIONS_OUT,
    ),
    ToolSpec(
        "list_knowledge_networks",
        "The knowledge networks (typed business objects) you can read: id, name, description. Use it to get the "
        "knId that list_object_types, object_instances and semantic_recall take.",
        _NO_ARGUMENTS,
        lambda _args: None,
        _run_networks,
        _NETWORKS_OUT,
    ),
    ToolSpec(
        "list_object_types",
        "The object types of a knowledge network with their properties, types and the condition operations each "
        "property supports. Use it before object_instances to pick otId, filters and sort. "
        'Example: {"knId": "northwind"}',
        _TYPES_SCHEMA,
        _prepare_types,
        _run_types,
        _TYPES_OUT,
    ),
    ToolSpec(
        "list_query_templates",
        "Approved query templates you can run: id, name, description and typed parameters (name, type, "
        "required, default, limits). Use it to get the templateId and parameters for run_query_template.",
        _TEMPLATES_SCHEMA,
        _prepare_templates,
        _run_templates,
        _TEMPLATES_OUT,
    ),
]
"""The tools of this module, in listing order."""
