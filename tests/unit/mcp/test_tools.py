"""The MCP tool table: valid, described schemas; argument checks name the field and the limit."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from cairn.app.core.errors import BadInput
from cairn.app.governance import REGISTRY
from cairn.app.mcp import TOOLS


def _properties(schema: dict, path: str = ""):
    for name, prop in (schema.get("properties") or {}).items():
        yield f"{path}{name}", prop
        if prop.get("type") == "object":
            yield from _properties(prop, f"{path}{name}.")


@pytest.mark.parametrize("name", list(TOOLS))
def test_schema_is_valid_and_every_argument_is_described(name):
    spec = TOOLS[name]
    Draft202012Validator.check_schema(spec.input_schema)
    undescribed = [p for p, prop in _properties(spec.input_schema) if not prop.get("description")]
    assert undescribed == [], f"{name}: {undescribed}"
    op = REGISTRY[spec.op_name]
    assert (op.kind, op.auth) == ("mcp", "required") and op.scope


def test_structural_errors_name_the_field_before_any_limit():
    pack = TOOLS["context_pack"]
    with pytest.raises(BadInput) as e:
        pack.check({"task": "x", "budget": {"maxTokens": "many"}})
    assert e.value.extra["field"] == "input.budget.maxTokens"
    with pytest.raises(BadInput) as e:
        pack.check({})
    assert e.value.extra["field"] == "input.task"
    with pytest.raises(BadInput) as e:
        pack.check({"task": "x", "colour": "red"})
    assert e.value.extra["field"] == "input"
    pack.check({"task": "x", "budget": {"maxTokens": 100}})  # a range: left to the operation's validation
    with pytest.raises(BadInput) as e:
        pack.validate({"task": "x", "budget": {"maxTokens": 100}})
    assert (e.value.extra["field"], e.value.extra["limit"]) == ("input.budget.maxTokens", "256-32000")


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
