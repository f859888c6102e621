"""Helpers shared by the dense-routing tests (test_multilingual, test_other_scripts): an
embedded data dir's indexes with both dense models, a viewer of a workspace, a workspace
ingested from ``{external id: text}``, and the catch-up after an index was re-created."""

from __future__ import annotations

import logging
import shutil
from typing import Any

from sqlalchemy import select

from cairn.app.core.models import Document
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import SourceDocument
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.identity import service as identity
from cairn.retrieval.dense import DenseModels
from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.vectors import open_vector_index


def local_indexes(tmp_path, embedder, multilingual_embedder) -> SearchIndexes:
    """Whoosh at ``tmp_path/whoosh`` and the embedded vector store at ``tmp_path/qdrant`` with
    both models' named vectors (the layout the data dir's code makes)."""
    dense = DenseModels(embedder, multilingual_embedder)
    return SearchIndexes(
        lexical=WhooshIndex(tmp_path / "whoosh"),
        vectors=open_vector_index(path=tmp_path / "qdrant", spaces=dense.spaces),
        embedder=embedder,
        multilingual=multilingual_embedder,
    )


def viewer(ws: str) -> Principal:
    """A viewer member of workspace ``ws``."""
    return Principal(
        kind="member", id="m", workspace_id=ws, permissions=ROLE_PERMISSIONS["viewer"], member_id="m", role="viewer"
    )


async def ingested_workspace(db, indexes: SearchIndexes, documents: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A new workspace holding ``documents`` (external id → text, no titles), ingested through
    ``indexes``; returns ``(workspace id, document id → external id)``."""
    async with db.session() as s:
        ws = await identity.create_workspace(s, name=f"routing-{id(indexes)}")
    docs = [SourceDocument(external_id=key, title="", text=text) for key, text in documents.items()]
    report = await ingest_documents(db, indexes, workspace_id=ws.id, collection="c", documents=iter(docs))
    assert report.vector_indexed >= len(documents)  # a new index follows the whole change log (other tests' too)
    async with db.session() as s:
        rows = (await s.execute(select(Document.id, Document.external_id).where(Document.workspace_id == ws.id))).all()
    return ws.id, {str(doc_id): str(ext) for doc_id, ext in rows}


async def catch_up_after_migration(indexes: SearchIndexes, db, caplog) -> tuple[int, int]:
    """Run the catch-up that start-up (and ingest, reindex) runs after an index was re-created
    on open; assert its message was logged once and nothing is left to apply.

    Returns:
        ``(lexical, vector)`` passages applied.
    """
    with caplog.at_level(logging.WARNING, logger="cairn.indexing"):
        applied = await indexes.index_pending(db)
    assert len([r for r in caplog.records if "re-created empty" in r.getMessage()]) == 1
    assert indexes.migration_message() is None and await indexes.index_pending(db) == (0, 0)
    return applied


def cluster_indexes(tmp_path, embedder, multilingual_embedder) -> SearchIndexes:
    """Cluster mode over qdrant-client's local mode at ``tmp_path/qdrant``: both dense models'
    named vectors and the sparse BM25 vectors in one collection, the cursor in ``tmp_path/d``."""
    from cairn.retrieval.lexical.sparse import SparseBM25Index, sparse_config
    from cairn.retrieval.vectors.client import ClientVectorIndex

    dense = DenseModels(embedder, multilingual_embedder)
    vectors = ClientVectorIndex(path=tmp_path / "qdrant", spaces=dense.spaces, sparse_vectors=sparse_config())
    return SearchIndexes(
        lexical=SparseBM25Index(client=vectors.client),
        vectors=vectors,
        embedder=embedder,
        multilingual=multilingual_embedder,
        state_dir=tmp_path / "d",
    )


def replace_shard(tmp_path, vectors) -> Any:
    """Replace the embedded data dir's vector shard by an empty one of another layout (as an
    earlier version wrote it): ``vectors`` is qdrant-edge's ``EdgeConfig(vectors=...)`` value.
    Returns the open shard (the caller adds points, flushes and closes it)."""
    import qdrant_edge as qe

    shard_dir = tmp_path / "qdrant" / "passages"
    shutil.rmtree(shard_dir)
    shard_dir.mkdir(parents=True)
    return qe.EdgeShard.create(str(shard_dir), qe.EdgeConfig(vectors=vectors))
