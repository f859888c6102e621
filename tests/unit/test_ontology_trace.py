"""Trace-context and source-directory checks that need no server."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.errors import BadInput
from app.services.trace import check_trace, input_sha256, invocation_id
from resolvers.ontology import _allowed_dir


def test_trace_needs_both_ids_or_none():
    assert check_trace(None) is None and check_trace({}) is None
    assert check_trace({"conversationId": None, "interactionId": None}) is None
    assert check_trace({"conversationId": "c", "interactionId": "i"}) == ("c", "i")
    for half in ({"conversationId": "c"}, {"interactionId": "i"}, {"conversationId": "c", "interactionId": ""}):
        with pytest.raises(BadInput) as info:
            check_trace(half)
        assert info.value.code == "TRACE_CONTEXT_INVALID"


def test_invocation_ids_and_input_identity():
    assert invocation_id({}) is None and invocation_id({"x-client-invocation-id": "retry-1"}) == "retry-1"
    for bad in ("", "has space", "x" * 129, "ünï"):
        with pytest.raises(BadInput):
            invocation_id({"x-client-invocation-id": bad})
    assert input_sha256("op", {"a": 1, "b": 2}) == input_sha256("op", {"b": 2, "a": 1})
    assert input_sha256("op", {"a": 1}) != input_sha256("other", {"a": 1})


def test_source_dirs_must_be_allow_listed(tmp_path):
    allowed = tmp_path / "allowed"
    (allowed / "nw").mkdir(parents=True)
    settings = Settings(data_dir=tmp_path / "d", ontology_source_dirs=[allowed])
    assert _allowed_dir(settings, str(allowed / "nw")) == (allowed / "nw").resolve()
    for outside in (str(tmp_path), str(allowed / ".." / "elsewhere"), "/etc"):
        with pytest.raises(BadInput):
            _allowed_dir(settings, outside)
    with pytest.raises(BadInput):
        _allowed_dir(Settings(data_dir=tmp_path / "d"), str(allowed / "nw"))
