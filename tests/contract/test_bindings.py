"""Context-set bindings (issue 32 items 2 and 3): every operation an agent may call declares how
a binding applies to it, the contract check fails on one that does not, and the adapter's
one enforcement function refuses what the declaration says — failing closed on an operation
without one. The live refusal table (operations × channels) is tests/graphql/test_context_set_binding.py."""

from __future__ import annotations

import asyncio

import pytest
import strawberry
from strawberry.types import Info

from cairn.app.core.errors import ContextSetScopeRefused
from cairn.app.governance import ContextScope, Governed, Principal
from cairn.app.governance.binding import BindingRule, enforce_binding, scoped
from cairn.app.governance.contract import contract_violations
from cairn.app.governance.operation import Operation
from cairn.app.governance.registry import REGISTRY
from cairn.resolvers.schema import schema

BOUND = Principal(
    kind="agent",
    id="cred_x",
    workspace_id="ws_x",
    permissions=frozenset({"collection:read", "document:read"}),
    member_id="usr_x",
    role="owner",
    scopes=frozenset({"context:read"}),
    context_set_id="cs_mine",
    context_scope=ContextScope(
        collection_ids=frozenset({"col_whole"}),
        document_ids=frozenset({"doc_single"}),
        visible_collection_ids=frozenset({"col_whole", "col_partial"}),
    ),
)
UNBOUND = Principal(
    kind="agent",
    id="cred_y",
    workspace_id="ws_x",
    permissions=BOUND.permissions,
    member_id="usr_x",
    role="owner",
    scopes=BOUND.scopes,
)


def _enforce(op_name: str, arguments: dict, principal: Principal = BOUND) -> None:
    op = REGISTRY[op_name]
    asyncio.run(enforce_binding(None, principal, op.name, op.kind, op.binding, arguments))


def test_every_operation_an_agent_may_call_declares_its_binding():
    undeclared = [n for n, op in REGISTRY.items() if op.agent_callable and op.binding is None]
    assert undeclared == []
    # members-only and credential-less operations are NOT_APPLICABLE by construction
    assert REGISTRY["upsertDocument"].binding.rule is BindingRule.NOT_APPLICABLE
    assert REGISTRY["POST /graphql"].binding.rule is BindingRule.NOT_APPLICABLE


def test_every_ontology_read_is_refused_to_bound_credentials_on_every_channel():
    ontology_reads = {n for n, op in REGISTRY.items() if op.planet == 4 and op.agent_callable and op.effect == "read"}
    assert ontology_reads == {
        "knowledgeNetworks",
        "objectTypes",
        "objectInstances",
        "semanticRecall",
        "mcp.list_knowledge_networks",
        "mcp.list_object_types",
        "mcp.object_instances",
        "mcp.semantic_recall",
    }
    assert {REGISTRY[n].binding.rule for n in ontology_reads} == {BindingRule.REFUSED}


def test_the_same_operation_has_the_same_binding_on_every_channel():
    """A GraphQL operation and the MCP tool or HTTP route of the same capability are refused
    alike (pack, passage reads, facts, fields, library, templates, memory, ontology)."""
    by_capability: dict[str, set[BindingRule]] = {}
    for op in REGISTRY.values():
        if op.agent_callable:
            by_capability.setdefault(op.capability, set()).add(op.binding.rule)
    assert {c: r for c, r in by_capability.items() if len(r) > 1} == {}


def test_contract_fails_on_an_agent_operation_without_a_binding(monkeypatch):
    monkeypatch.setitem(
        REGISTRY,
        "documents",
        Operation("documents", "query", "G1.U1.P1.Z2.A3", "document:read", frozenset(), "context:read"),
    )
    problems = contract_violations(schema)
    assert any(p.startswith("documents: agents may call it but it declares no context-set binding") for p in problems)


def test_contract_fails_on_a_binding_path_that_names_no_argument(monkeypatch):
    @strawberry.type
    class Q:
        @strawberry.field(extensions=[Governed("documents", validate=lambda **_: None)])
        async def documents(self, info: Info, collection_id: strawberry.ID) -> str:
            return "x"

    monkeypatch.setitem(
        REGISTRY,
        "documents",
        Operation(
            "documents",
            "query",
            "G1.U1.P1.Z2.A3",
            "document:read",
            frozenset(),
            "context:read",
            binding=scoped(collections=("collection",)),
        ),
    )
    problems = contract_violations(strawberry.Schema(query=Q))
    assert "query field documents: binding path 'collection' names no argument of the field" in problems


def test_an_operation_without_a_binding_fails_closed_for_bound_credentials():
    op = Operation("newRead", "query", "G1.U1.P1.Z9.A9", "document:read", frozenset(), "context:read")
    with pytest.raises(ContextSetScopeRefused, match="declares no context-set binding"):
        asyncio.run(enforce_binding(None, BOUND, op.name, op.kind, op.binding, {}))
    asyncio.run(enforce_binding(None, UNBOUND, op.name, op.kind, op.binding, {}))  # unbound: untouched


@pytest.mark.parametrize(
    ("op_name", "arguments", "field"),
    [
        ("documents", {"collectionId": "col_other", "first": 50}, "collectionId"),
        ("knowledgeNetworks", {}, None),
        ("objectInstances", {"knId": "northwind", "otId": "order"}, None),
        ("mcp.semantic_recall", {"input": {"knId": "northwind", "query": "orders"}}, None),
        ("contextPack", {"input": {"task": "t", "contextSetId": "cs_other"}}, "input.contextSetId"),
        ("contextPack", {"input": {"task": "t", "filters": {"collectionIds": ["col_whole", "col_x"]}}}, None),
        ("mcp.context_pack", {"input": {"task": "t", "filters": {"collectionIds": ["col_x"]}}}, None),
        ("fields", {"collectionId": "col_partial"}, "collectionId"),
        ("queryFields", {"plan": {"collectionId": "col_partial", "fields": ["x"]}}, "plan.collectionId"),
        ("mcp.list_fields", {"input": {"collectionId": "col_partial"}}, "collectionId"),
        ("recallMemories", {"input": {"query": "q", "collectionId": "col_partial"}}, "input.collectionId"),
        ("runQueryTemplate", {"templateId": "qt_1", "contextSetId": "cs_other"}, "contextSetId"),
        ("mcp.lookup_definitions", {"input": {"term": "API", "contextSetId": "cs_other"}}, "contextSetId"),
    ],
)
def test_the_adapter_refuses_what_the_declaration_says(op_name, arguments, field):
    with pytest.raises(ContextSetScopeRefused) as info:
        _enforce(op_name, arguments)
    assert info.value.code == "AGENT_CONTEXT_SET_SCOPE_REFUSED"
    if field is not None:
        assert info.value.extra.get("field") == field
    _enforce(op_name, arguments, UNBOUND)  # an unbound credential is never held to a set


def test_pack_filter_fields_name_the_index():
    with pytest.raises(ContextSetScopeRefused) as info:
        _enforce("contextPack", {"input": {"task": "t", "filters": {"collectionIds": ["col_whole", "col_x"]}}})
    assert info.value.extra.get("field") == "input.filters.collectionIds[1]"


@pytest.mark.parametrize(
    ("op_name", "arguments"),
    [
        ("documents", {"collectionId": "col_partial"}),  # holds a document of the set: listed, filtered
        ("documents", {"collectionId": "col_whole"}),
        ("fields", {"collectionId": "col_whole"}),
        ("contextSet", {"contextSetId": "cs_mine"}),
        ("contextSet", {}),  # the bound set by default
        ("collections", {}),
        ("viewer", {}),
        ("sessions", {}),
        ("contextPack", {"input": {"task": "t", "filters": {"collectionIds": ["col_partial"]}}}),
    ],
)
def test_the_adapter_lets_reads_inside_the_set_through(op_name, arguments):
    _enforce(op_name, arguments)


def test_mcp_binding_paths_name_tool_arguments():
    """An MCP tool's binding paths are its own argument names (a typo would check nothing)."""
    from cairn.app.mcp import TOOLS

    wrong = []
    for tool in TOOLS.values():
        binding = REGISTRY[tool.op_name].binding
        for path in binding.paths:
            props = tool.input_schema["properties"]
            for part in path.split("."):
                if part not in props:
                    wrong.append((tool.name, path))
                    break
                props = props[part].get("properties") or props[part].get("items", {}).get("properties") or {}
    assert wrong == []
