"""The lexical index's folder: an older layout is re-created, damage is refused (or rebuilt)."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from whoosh import index as whoosh_index
from whoosh.fields import ID, TEXT, Schema

from cairn.retrieval.checks import IndexUnreadable
from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.lexical.directory import INDEX_NAME, SUMS_FILE
from cairn.retrieval.lexical.schema import IndexedPassage

PASSAGES = [
    IndexedPassage("p1", "w", "c", "d1", "Etna", "Mount Etna is an active volcano in Sicily."),
    IndexedPassage("p2", "w", "c", "d2", "Granite", "Granite is an igneous rock of quartz and feldspar."),
]


def test_a_schema_naming_a_module_that_no_longer_exists_is_re_created(tmp_path, monkeypatch):
    """An index pickled with an analyzer of a module that is gone (``retrieval.analysis`` before
    the ``cairn.`` move) opens as an empty index with one message, instead of raising."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "oldanalysis.py").write_text(
        textwrap.dedent(
            """
            from whoosh.analysis import RegexTokenizer
            class OldTokenizer(RegexTokenizer):
                pass
            """
        )
    )
    monkeypatch.syspath_prepend(str(package))
    from oldanalysis import OldTokenizer  # type: ignore[import-not-found]

    folder = tmp_path / "lex"
    folder.mkdir()
    schema = Schema(passage_id=ID(stored=True, unique=True), body=TEXT(analyzer=OldTokenizer()))
    old = whoosh_index.create_in(str(folder), schema, indexname=INDEX_NAME)
    with old.writer() as w:
        w.add_document(passage_id="p0", body="old terms")
    monkeypatch.delitem(sys.modules, "oldanalysis")
    (package / "oldanalysis.py").unlink()

    ix = WhooshIndex(folder)
    try:
        assert ix.migrated is not None and "made by an older Cairn" in ix.migrated, ix.migrated
        assert "ModuleNotFoundError: No module named 'oldanalysis'" in ix.migrated
        assert ix.count() == 0
        ix.add(PASSAGES)
        assert [pid for pid, _ in ix.search("volcano", workspace_id="w")] == ["p1"]
    finally:
        ix.close()


def _damage_segment(folder, how: str) -> None:
    segment = next(folder.glob("*.seg"))
    if how == "truncated":
        os.truncate(segment, segment.stat().st_size // 2)
    elif how == "deleted":
        segment.unlink()
    else:  # 64 random bytes in the middle: no read error, only the recorded SHA-256 tells
        raw = bytearray(segment.read_bytes())
        middle = len(raw) // 2
        raw[middle : middle + 64] = os.urandom(64)
        segment.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["truncated", "deleted", "garbage-in-the-middle"])
def test_a_damaged_segment_is_refused_then_rebuilt_on_request(tmp_path, how):
    folder = tmp_path / "lex"
    with WhooshIndex(folder) as ix:
        ix.add(PASSAGES)
    sums = json.loads((folder / SUMS_FILE).read_text())["files"]
    assert [name.endswith(".seg") for name in sums] == [True]  # this commit's segment, with its hash
    _damage_segment(folder, how)

    with pytest.raises(IndexUnreadable) as refused:
        WhooshIndex(folder)
    assert refused.value.what == "BM25 index" and refused.value.path == folder
    assert str(refused.value).startswith(f"the BM25 index at {folder} cannot be read (")

    with WhooshIndex(folder, rebuild_unreadable=True) as ix:
        assert ix.migrated is not None and "it was re-created empty" in ix.migrated
        assert ix.count() == 0
        ix.add(PASSAGES)
    with WhooshIndex(folder) as ix:  # the rebuilt index opens cleanly
        assert ix.migrated is None and ix.count() == 2


def test_a_garbage_table_of_contents_is_refused(tmp_path):
    folder = tmp_path / "lex"
    with WhooshIndex(folder) as ix:
        ix.add(PASSAGES)
    toc = next(folder.glob("*.toc"))
    toc.write_bytes(os.urandom(toc.stat().st_size))
    with pytest.raises(IndexUnreadable):
        WhooshIndex(folder)
