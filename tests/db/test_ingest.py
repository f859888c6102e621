"""Ingest from files/folders/JSONL(.gz), idempotence, and index repair after a crash."""

from __future__ import annotations

import gzip
import json
import secrets

from sqlalchemy import func, select

from app.models import Passage
from app.services import identity
from app.services.indexing import SearchIndexes
from app.services.ingest import ingest_documents, iter_sources
from retrieval.lexical import LexicalIndex
from retrieval.vectors import open_vector_index


def _corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("Plain text about glaciers and moraines.\n\nA second paragraph on fjords.")
    (root / "b.md").write_text("# Heading\n\nMarkdown about *volcanoes* and lava.")
    (root / "sub" / "c.html").write_text("<html><head><style>x{}</style><script>evil()</script></head>"
                                         "<body><h1>Deserts</h1><p>Dunes &amp; oases.</p></body></html>")
    with gzip.open(root / "d.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"_id": "j1", "title": "Rivers", "text": "Deltas form where rivers meet the sea.",
                             "validFrom": "2021-01-01T00:00:00Z"}) + "\n")
        fh.write("\n")
        fh.write(json.dumps({"_id": "j2", "title": "海", "text": "東京湾は太平洋につながっています。"}) + "\n")
    (root / "ignored.bin").write_bytes(b"\x00\x01")
    return root


def test_sources_cover_every_format(tmp_path):
    docs = list(iter_sources(_corpus(tmp_path)))
    by_id = {d.external_id: d for d in docs}
    assert sorted(by_id) == ["a.txt", "b.md", "j1", "j2", "sub/c.html"]
    assert by_id["sub/c.html"].text.split() == ["Deserts", "Dunes", "&", "oases."]
    assert by_id["j1"].valid_from.year == 2021 and by_id["j1"].title == "Rivers"
    assert by_id["b.md"].media_type == "text/markdown"


async def _ws(db):
    async with db.session() as s:
        return (await identity.create_workspace(s, name=f"ingest-{secrets.token_hex(4)}")).id


async def test_ingest_is_idempotent_and_repairs_indexes_after_a_crash(db, tmp_path, embedder):
    ws = await _ws(db)
    corpus = _corpus(tmp_path)
    # "crash": SQL committed, derived indexes never written
    first = await ingest_documents(db, None, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
    assert (first.created, first.updated, first.unchanged, first.new_passages) == (5, 0, 0, 5)
    async with db.session() as s:
        pending = (await s.execute(select(func.count()).where(Passage.workspace_id == ws,
                                                               Passage.lexical_indexed.is_(False)))).scalar_one()
    assert pending == first.new_passages
    indexes = SearchIndexes(lexical=LexicalIndex(tmp_path / "whoosh"),
                            vectors=open_vector_index(path=tmp_path / "qdrant", dim=embedder.dim),
                            embedder=embedder)
    try:
        lex, vec = await indexes.index_pending(db)  # what start-up runs
        assert lex >= first.new_passages and vec >= first.new_passages
        assert indexes.lexical.search("glaciers moraines", workspace_id=ws)
        assert indexes.lexical.search("東京湾", workspace_id=ws)
        assert await indexes.index_pending(db) == (0, 0)
        again = await ingest_documents(db, indexes, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
        assert (again.created, again.updated, again.unchanged, again.new_passages) == (0, 0, 5, 0)
        (corpus / "a.txt").write_text("Plain text about glaciers and moraines.\n\nA changed paragraph on ice caps.")
        changed = await ingest_documents(db, indexes, workspace_id=ws, collection="geo", documents=iter_sources(corpus))
        assert (changed.updated, changed.unchanged) == (1, 4) and changed.lexical_indexed >= 1
        n_lex, n_vec = indexes.lexical.count(), indexes.vectors.count()
        assert await indexes.reindex(db) and (indexes.lexical.count(), indexes.vectors.count()) == (n_lex, n_vec)
    finally:
        indexes.close()
