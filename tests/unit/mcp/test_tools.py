"""The MCP tool table: valid, described schemas; argument checks name the field and the limit."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from mcp import types

from cairn.app.core.errors import BadInput
from cairn.app.governance import REGISTRY, ROLE_PERMISSIONS, ContextScope, Principal, capabilities_for_scopes
from cairn.app.mcp import TOOLS
from cairn.app.mcp.server import tool_entry, visible_tools


def _properties(schema: dict, path: str = ""):
    for name, prop in (schema.get("properties") or {}).items():
        yield f"{path}{name}", prop
        if prop.get("type") == "object":
            yield from _properties(prop, f"{path}{name}.")


@pytest.mark.parametrize("name", list(TOOLS))
def test_schema_is_valid_and_every_argument_is_described(name):
    spec = TOOLS[name]
    Draft202012Validator.check_schema(spec.input_schema)
    assert spec.output_schema is not None and spec.output_schema["type"] == "object"
    Draft202012Validator.check_schema(spec.output_schema)
    undescribed = [p for p, prop in _properties(spec.input_schema) if not prop.get("description")]
    assert undescribed == [], f"{name}: {undescribed}"
    op = REGISTRY[spec.op_name]
    assert (op.kind, op.auth) == ("mcp", "required") and op.scope


def test_structural_errors_name_the_field_in_the_tools_own_arguments():
    pack = TOOLS["context_pack"]
    with pytest.raises(BadInput) as e:
        pack.check({"task": "x", "budget": {"maxTokens": "many"}})
    assert e.value.extra["field"] == "budget.maxTokens"
    with pytest.raises(BadInput) as e:
        pack.check({})
    assert e.value.extra["field"] == "task"
    with pytest.raises(BadInput) as e:
        pack.check({"task": "x", "colour": "red"})
    assert e.value.extra["field"] == "colour"  # the unknown argument itself
    with pytest.raises(BadInput) as e:
        TOOLS["query_fields"].check({"collectionId": "c", "fields": ["a"], "filters": [{"field": "a", "op": "NEAR"}]})
    assert e.value.extra["field"] == "filters[0].op"
    pack.check({"task": "x", "budget": {"maxTokens": 100}})  # a range: left to the operation's validation
    with pytest.raises(BadInput) as e:
        pack.validate({"task": "x", "budget": {"maxTokens": 100}})
    # the operation's validation names its GraphQL input; the call's refusal names the argument
    assert (e.value.extra["field"], e.value.extra["limit"]) == ("input.budget.maxTokens", "256-32000")
    assert pack.own_field("input.budget.maxTokens") == "budget.maxTokens"
    assert TOOLS["query_fields"].own_field("plan.fields[0]") == "fields[0]"
    assert TOOLS["get_section"].own_field("before") == "before"


def test_section_limits_and_citation_offsets():
    with pytest.raises(BadInput) as e:
        TOOLS["get_section"].validate({"passageId": "psg_1", "before": 11})
    assert (e.value.extra["field"], e.value.extra["limit"]) == ("before", "0-10")
    with pytest.raises(BadInput) as e:
        TOOLS["get_citation"].validate({"documentId": "doc_1", "start": 5, "end": 5, "sha256": "a" * 64})
    assert e.value.extra["field"] == "end"
    with pytest.raises(BadInput) as e:
        TOOLS["get_passage"].validate({"passageId": "psg_1", "asOf": {"validTime": "2025-01-01T00:00:00"}})
    assert e.value.extra["field"] == "asOf.validTime"


RETIRED = ("SPEC", "§", "RRF", "fused by", "scope ")
"""What a model cannot use in a description: internal section numbers, retired method names,
scopes (a tool it may not call is not listed)."""


@pytest.mark.parametrize("name", list(TOOLS))
def test_descriptions_are_written_for_a_model(name):
    text = TOOLS[name].description
    assert not [w for w in RETIRED if w in text], text
    assert 80 <= len(text) <= 420, len(text)
    if TOOLS[name].input_schema.get("required"):  # a tool with arguments shows one call
        example = text.split("Example: ", 1)[1] if "Example: " in text else None
        assert name == "get_citation" or example is not None, text  # get_citation takes a citation as is
        if example is not None:
            call = json.loads(example.replace("…", "x"))
            TOOLS[name].check(call)  # the example is a valid call: its structure ...
            TOOLS[name].validate(call)  # ... and the operation's own validation


def test_the_listing_stays_lean():
    """The ``tools/list`` result as the SDK sends it (compact JSON). 19 tools took 20,992
    characters before issue 35; 23 (four discovery tools, output schemas, an example each) take
    about 24,100, and a ``context:read`` credential sees 16 of them (about 17,700)."""
    result = types.ServerResult(types.ListToolsResult(tools=[tool_entry(t) for t in TOOLS.values()]))
    size = len(result.model_dump_json(by_alias=True, exclude_none=True))
    assert size <= 25_000, size


def _agent(scopes: tuple[str, ...], *, role: str = "owner", **extra) -> Principal:
    profile = {"grantedCapabilities": capabilities_for_scopes(set(scopes)), **extra.pop("profile", {})}
    return Principal(
        kind="agent",
        id="cred_x",
        workspace_id="ws_x",
        permissions=frozenset(ROLE_PERMISSIONS[role]),
        member_id="usr_x",
        role=role,
        scopes=frozenset(scopes),
        profile=profile,
        **extra,
    )


def names(principal: Principal) -> set[str]:
    """The tools ``tools/list`` shows ``principal``."""
    return {t.name for t in visible_tools(principal)}


def test_the_listing_follows_scopes_role_binding_and_hard_boundaries():
    reader = names(_agent(("context:read",)))
    assert "context_pack" in reader and not {"remember", "run_query_template"} & reader
    # a hard boundary blocks every call of the capability: the tool is not listed
    blocked = names(_agent(("context:read",), profile={"hardBoundaries": ["context:pack"]}))
    assert reader - blocked == {"context_pack"}
    # reconfirm-before asks for a confirmation per call: still listed
    assert names(_agent(("context:read",), profile={"reconfirmBefore": ["context:pack"]})) == reader
    # the creator demoted to viewer: memory:write needs agent:run, which a viewer lacks
    memory = ("context:read", "memory:read", "memory:write")
    assert {"remember", "forget"} <= names(_agent(memory))
    assert not {"remember", "forget"} & names(_agent(memory, role="viewer"))
    # bound to a context set: the ontology is refused outright, the rest stays
    bound = names(_agent(("context:read",), context_set_id="cs_x", context_scope=ContextScope()))
    assert reader - bound == {"list_knowledge_networks", "list_object_types", "object_instances", "semantic_recall"}
