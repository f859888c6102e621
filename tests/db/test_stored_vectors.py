"""Passages' embeddings kept in SQL (app/corpus/stored_vectors.py), SQLite and PostgreSQL: a
second data dir catching up with the change log reads the vectors the first one stored and
encodes nothing, and its vector index then answers with the same bits; a stored vector of
another text (or another model) is never reused; ``reindex`` of the vectors reads them too."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from sqlalchemy import select

from cairn.app.core.models import PassageVector
from cairn.app.corpus.documents import get_or_create_collection, upsert_document
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.stored_vectors import StoredVector, input_sha256, read_vectors, write_vectors
from cairn.app.identity import service as identity
from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.vectors import open_vector_index


@pytest.fixture(scope="module")
def db_url(private_db_url):
    """PostgreSQL in a cluster of this module's own: the log's read horizon is server-wide, and
    another test file's open transaction on the shared server held its cursors back under -n 2."""
    return private_db_url


TEXTS = {
    "glacier": "Glaciers carve moraines into the valley floor as they retreat.",
    "reef": "Coral reefs bleach when the water stays too warm for weeks.",
    "comet": "A comet's tail points away from the sun, pushed by the solar wind.",
}


def _indexes(path, embedder) -> SearchIndexes:
    return SearchIndexes(
        lexical=WhooshIndex(path / "whoosh"),
        vectors=open_vector_index(path=path / "qdrant", dim=embedder.dim),
        embedder=embedder,
        state_dir=path,
    )


class Counting:
    """Counts the passages a SearchIndexes' dense models encode (the real models do the work)."""

    def __init__(self, indexes: SearchIndexes) -> None:
        self.passages = 0
        dense = indexes.dense
        assert dense is not None
        real = dense.encode_passages

        def encode(texts, spaces=None):
            self.passages += len(texts)
            return real(texts, spaces)

        dense.encode_passages = encode  # type: ignore[method-assign]


async def _workspace(db):
    async with db.session() as s:
        ws = (await identity.create_workspace(s, name=f"vec-{secrets.token_hex(4)}")).id
        coll = (await get_or_create_collection(s, workspace_id=ws, name="notes")).id
    return ws, coll


async def _write(db, ws, coll, ext, text, title=None):
    async with db.session() as s:
        r = await upsert_document(
            s, workspace_id=ws, collection_id=coll, external_id=ext, title=title or ext.title(), text=text
        )
    return r.new_passage_ids


async def test_a_second_data_dir_reads_the_stored_vectors_and_encodes_nothing(db, tmp_path, embedder):
    ws, coll = await _workspace(db)
    a, b = _indexes(tmp_path / "a", embedder), _indexes(tmp_path / "b", embedder)
    count_a, count_b = Counting(a), Counting(b)
    try:
        await a.index_pending(db)  # other tests' passages of this database first
        await b.index_pending(db)
        count_a.passages = count_b.passages = 0
        ids = [pid for ext, text in TEXTS.items() for pid in await _write(db, ws, coll, ext, text)]
        assert await a.index_passages(db, ids) == (3, 3)
        assert count_a.passages == 3
        stored = await read_vectors(db, [(pid, embedder.name) for pid in ids])
        assert len(stored) == 3
        for pid in ids:
            assert stored[(pid, embedder.name)].vector.dtype == np.float32
            assert stored[(pid, embedder.name)].vector.shape == (embedder.dim,)
        assert await b.index_pending(db) == (3, 3)
        assert count_b.passages == 0  # read, not encoded
        query = embedder.encode_query("why do glaciers leave moraines")
        hits_a = a.vectors.search(query, workspace_id=ws, limit=3)
        hits_b = b.vectors.search(query, workspace_id=ws, limit=3)
        assert hits_a == hits_b and hits_a[0][0] == ids[0]  # the same bits: the same scores

        # reindex of the vectors: read again, not encoded
        await b.reindex(db, lexical=False)
        assert count_b.passages == 0 and b.vectors.search(query, workspace_id=ws, limit=3) == hits_a
    finally:
        a.close()
        b.close()


async def test_a_vector_of_another_text_or_model_is_not_reused(db, tmp_path, embedder):
    ws, coll = await _workspace(db)
    (pid,) = await _write(db, ws, coll, "reef", TEXTS["reef"])
    wrong = StoredVector(pid, embedder.name, input_sha256("some other text"), np.ones(embedder.dim, dtype=np.float32))
    other_model = StoredVector(pid, "another/model", "x" * 64, np.ones(8, dtype=np.float32))
    await write_vectors(db, [wrong, other_model])
    c = _indexes(tmp_path / "c", embedder)
    counting = Counting(c)
    try:
        await c.index_pending(db)  # (also other tests' passages of this database: stored, read)
        assert counting.passages == 1  # the stored vector was embedded from another text: encoded again
        hits = c.vectors.search(embedder.encode_query("warm water bleaches coral"), workspace_id=ws, limit=1)
        assert hits[0][0] == pid and hits[0][1] < 0.99  # its own vector, not the stored ones
    finally:
        c.close()
    async with db.session() as s:  # the first stored row wins (insert-if-absent), nothing replaced
        rows = (await s.execute(select(PassageVector).where(PassageVector.passage_id == pid))).scalars().all()
    assert {(r.model, r.input_sha256) for r in rows} == {
        (embedder.name, input_sha256("some other text")),
        ("another/model", "x" * 64),
    }
