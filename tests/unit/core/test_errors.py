"""Text validators shared by every input: storable text, no hidden control characters."""

from __future__ import annotations

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable, validate_name, validate_text
from cairn.app.memory.service import validate_fields


@pytest.mark.parametrize("value", ["a\x00b", "\ud800"])
def test_unstorable_text_is_refused(value):
    with pytest.raises(BadInput) as e:
        require_storable(value, "input.task")
    assert e.value.extra["field"] == "input.task"


@pytest.mark.parametrize(
    "value,multiline,bad",
    [
        ("pr\x00efs", False, "U+0000"),
        ("a\x07b", True, "U+0007"),
        ("\x1b[31mred", True, "U+001B"),
        ("evil\u202etxt.exe", True, "U+202E"),
        ("two\nlines", False, "U+000A"),
        ("c1\x85", True, "U+0085"),
    ],
)
def test_control_characters_are_refused_with_the_code_point(value, multiline, bad):
    with pytest.raises(BadInput) as e:
        (validate_text if multiline else validate_name)(value, "input.namespace", 100)
    assert bad in e.value.message and e.value.extra["field"] == "input.namespace"


def test_ordinary_text_passes():
    validate_text("Tab\tline\r\nnext — naïve 東京 🙂", "input.text", 100)
    validate_name("prefs.lunch-2025", "input.key", 100)


def test_memory_fields_refuse_control_characters():
    with pytest.raises(BadInput) as e:
        validate_fields(namespace="pr\x00efs", prefix="input.")
    assert e.value.extra["field"] == "input.namespace"
    with pytest.raises(BadInput) as e:
        validate_fields(namespace="n", text="hello \x1b[31m", prefix="input.")
    assert e.value.extra["field"] == "input.text"


def test_memory_inputs_refuse_nul_ids_unrepresentable_times_and_long_queries():
    """The domain requests (app.memory.requests) hold these rules; GraphQL and MCP only build them."""
    from datetime import datetime, timedelta, timezone

    from cairn.app.memory import ForgetRequest, MemoryListQuery, RecallQuery

    with pytest.raises(BadInput) as e:
        ForgetRequest(memory_id="mem\x00")
    assert e.value.extra["field"] == "input.memoryId"
    far = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-14)))
    with pytest.raises(BadInput) as e:
        RecallQuery(query="alpha", as_of=far)
    assert e.value.extra["field"] == "input.asOf"
    with pytest.raises(BadInput) as e:
        RecallQuery(query="a" + " " * 1500)
    assert e.value.extra["field"] == "input.query"
    with pytest.raises(BadInput) as e:
        MemoryListQuery(cursor="2024-01-01T00:00:00+00:00|mem\x00")
    assert e.value.extra["field"] == "input.cursor"
    with pytest.raises(BadInput) as e:  # MCP's flat arguments: the transport passes its own prefix
        RecallQuery(query="", field_prefix="")
    assert e.value.extra["field"] == "query"
