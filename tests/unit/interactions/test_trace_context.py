"""Trace-context and source-directory checks that need no server."""

from __future__ import annotations

import pytest

from cairn.app.core.config import Settings
from cairn.app.core.errors import BadInput
from cairn.app.interactions.service import check_trace, input_sha256, invocation_id
from cairn.app.ontology.mapping import csv_files_of
from cairn.resolvers.ontology import _allowed_dir


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


def _tree(tmp_path):
    """allowed/nw/a.csv; outside/secret.csv and outside/dir/b.csv beyond the allowed dir."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "nw").mkdir(parents=True)
    (outside / "dir").mkdir(parents=True)
    (allowed / "nw" / "a.csv").write_text("x\n1\n", encoding="utf-8")
    (outside / "secret.csv").write_text("password\nhunter2\n", encoding="utf-8")
    (outside / "dir" / "b.csv").write_text("y\n2\n", encoding="utf-8")
    return allowed, outside


def test_a_linked_dir_pointing_outside_the_allowed_dirs_is_refused(tmp_path):
    allowed, outside = _tree(tmp_path)
    (allowed / "escape").symlink_to(outside / "dir", target_is_directory=True)
    (tmp_path / "root-link").symlink_to(allowed, target_is_directory=True)
    settings = Settings(data_dir=tmp_path / "d", ontology_source_dirs=[allowed])
    with pytest.raises(BadInput) as info:
        _allowed_dir(settings, str(allowed / "escape"))
    assert info.value.code == "SOURCE_PATH_NOT_ALLOWED" and info.value.extra["field"] == "sourceDir"
    assert str(allowed / "escape") in info.value.message and info.value.extra["path"] == str(allowed / "escape")
    # a link whose target is inside is fine, and so is an allowed dir named through a link
    (allowed / "alias").symlink_to(allowed / "nw", target_is_directory=True)
    assert _allowed_dir(settings, str(allowed / "alias")) == (allowed / "nw").resolve()
    linked_root = Settings(data_dir=tmp_path / "d", ontology_source_dirs=[tmp_path / "root-link"])
    assert _allowed_dir(linked_root, str(allowed / "nw")) == (allowed / "nw").resolve()
    with pytest.raises(BadInput) as info:
        _allowed_dir(settings, str(allowed / "missing"))
    assert info.value.code == "BAD_USER_INPUT" and "does not exist" in info.value.message


def test_a_linked_file_pointing_outside_the_allowed_dirs_is_refused(tmp_path):
    allowed, outside = _tree(tmp_path)
    (allowed / "nw" / "secret.csv").symlink_to(outside / "secret.csv")
    with pytest.raises(BadInput) as info:
        csv_files_of(allowed / "nw", [allowed])
    assert info.value.code == "SOURCE_PATH_NOT_ALLOWED" and info.value.extra["path"] == str(
        allowed / "nw" / "secret.csv"
    )
    assert "secret.csv" in info.value.message and "hunter2" not in info.value.message
    assert csv_files_of(allowed / "nw")["secret"] == "password\nhunter2\n"  # the operator's CLI: no roots
    (allowed / "nw" / "secret.csv").unlink()
    (allowed / "shared.csv").write_text("z\n3\n", encoding="utf-8")
    (allowed / "nw" / "shared.csv").symlink_to(allowed / "shared.csv")  # a link that stays inside is read
    assert csv_files_of(allowed / "nw", [allowed]) == {"a": "x\n1\n", "shared": "z\n3\n"}
    (allowed / "nw" / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(BadInput) as info:
        csv_files_of(allowed / "nw", [allowed])
    assert info.value.extra["path"] == str(allowed / "nw" / "gone.csv") and "broken" in info.value.message
    (allowed / "nw" / "gone.csv").unlink()
    (allowed / "nw" / "latin.csv").write_bytes(b"name\ncaf\xe9\n")
    with pytest.raises(BadInput) as info:
        csv_files_of(allowed / "nw", [allowed])
    assert "latin.csv is not UTF-8" in info.value.message
