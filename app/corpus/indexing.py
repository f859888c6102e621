"""Derived indexes (BM25 + Qdrant vectors) kept in step with SQL.

The BM25 leg is a Whoosh folder under the data dir (embedded default), or, in cluster mode
(``CAIRN_QDRANT_URL``), sparse BM25 vectors in the same Qdrant collection as the dense
vectors (:mod:`retrieval.sparse_bm25`): then no worker keeps local search state, and the SQL
outbox flags below describe the one shared index.

SQL is the source of truth. Each :class:`~app.core.models.Passage` carries outbox flags
(``lexical_indexed``, ``vector_indexed``) that are false until the index has it; after every
write the caller runs :meth:`SearchIndexes.index_pending`, and start-up runs it too, so a
crash between the SQL commit and the index write is repaired, never lost. ``reindex``
clears both indexes and rebuilds them from SQL.

Ingest throughput: encoding (the bottleneck, ~20–25 passages/s on 2 cores) overlaps with
Whoosh writes and SQL flag updates of the previous batch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update

from app.core.db import Database
from app.core.models import Document, Passage
from retrieval.embeddings import Embedder
from retrieval.lexical import IndexedPassage, LexicalIndex
from retrieval.sparse_bm25 import SparseBM25Index
from retrieval.vectors import VectorIndex, VectorPoint

log = logging.getLogger("cairn.indexing")

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; stage is ``lexical`` or ``vector``."""


@dataclass
class SearchIndexes:
    """The lexical index, the vector index and the embedder of one process.

    ``embedder``/``vectors`` may be None (``CAIRN_EMBEDDER=none``): packs then run
    ``LEXICAL`` only and say so.
    """

    lexical: LexicalIndex | SparseBM25Index
    vectors: VectorIndex | None
    embedder: Embedder | None
    batch_size: int = 64
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    data_lock: Any = None
    """The data dir's :class:`app.core.datadir.DataDirLock` when opened by :func:`open_indexes`."""

    def embedding_input(self, title: str, text: str) -> str:
        """Text given to the encoder for a passage: its document title, then the passage."""
        return f"{title}\n{text}" if title else text

    async def pending_counts(self, db: Database) -> tuple[int, int]:
        """``(passages missing from the lexical index, missing from the vector index)``."""
        async with db.session() as s:
            lex = (await s.execute(select(func.count()).where(Passage.lexical_indexed.is_(False)))).scalar_one()
            vec = (await s.execute(select(func.count()).where(Passage.vector_indexed.is_(False)))).scalar_one()
        return int(lex), int(vec) if self.vectors is not None else 0

    async def index_pending(self, db: Database, *, progress: Progress | None = None) -> tuple[int, int]:
        """Index every passage whose outbox flag is false, then set the flag.

        Returns:
            ``(lexical_count, vector_count)`` of passages indexed.
        """
        async with self._lock:
            lex_total, vec_total = await self.pending_counts(db)
            lex_done = await self._run(db, "lexical", lex_total, progress)
            vec_done = 0
            if self.vectors is not None and self.embedder is not None:
                vec_done = await self._run(db, "vector", vec_total, progress)
            return lex_done, vec_done

    async def _load_batch(self, db: Database, stage: str, after: str, limit: int) -> list[tuple]:
        flag = Passage.lexical_indexed if stage == "lexical" else Passage.vector_indexed
        async with db.session() as s:
            rows = await s.execute(
                select(
                    Passage.id,
                    Passage.workspace_id,
                    Passage.collection_id,
                    Passage.document_id,
                    Document.title,
                    Passage.text,
                )
                .join(Document, Document.id == Passage.document_id)
                .where(flag.is_(False), Passage.id > after)
                .order_by(Passage.id)
                .limit(limit)
            )
            return [tuple(r) for r in rows.all()]

    async def _mark(self, db: Database, stage: str, ids: Sequence[str]) -> None:
        column = "lexical_indexed" if stage == "lexical" else "vector_indexed"
        async with db.session() as s:
            await s.execute(update(Passage).where(Passage.id.in_(list(ids))).values({column: True}))

    async def _run(self, db: Database, stage: str, total: int, progress: Progress | None) -> int:
        done = 0
        after = ""
        size = 512 if stage == "lexical" else self.batch_size
        pending_write: asyncio.Task | None = None
        while True:
            rows = await self._load_batch(db, stage, after, size)
            if not rows:
                break
            after = rows[-1][0]
            if stage == "lexical":
                batch = [IndexedPassage(r[0], r[1], r[2], r[3], r[4] or "", r[5]) for r in rows]
                await asyncio.to_thread(self.lexical.add, batch)
                await self._mark(db, stage, [r[0] for r in rows])
            else:
                texts = [self.embedding_input(r[4] or "", r[5]) for r in rows]
                vectors = await asyncio.to_thread(self.embedder.encode, texts)  # type: ignore[union-attr]
                points = [VectorPoint(r[0], vectors[i], r[1], r[2], r[3]) for i, r in enumerate(rows)]
                if pending_write is not None:
                    await pending_write
                pending_write = asyncio.create_task(self._write_vectors(db, points))
            done += len(rows)
            if progress:
                progress(stage, done, total)
        if pending_write is not None:
            await pending_write
        return done

    async def _write_vectors(self, db: Database, points: list[VectorPoint]) -> None:
        await asyncio.to_thread(self.vectors.upsert, points)  # type: ignore[union-attr]
        await self._mark(db, "vector", [p.passage_id for p in points])

    async def reindex(
        self, db: Database, *, progress: Progress | None = None, lexical: bool = True, vectors: bool = True
    ) -> tuple[int, int]:
        """Clear the chosen indexes and rebuild them from SQL.

        Args:
            lexical / vectors: Which index to rebuild (e.g. only lexical after an analyzer
                change: re-embedding is the slow part).

        Returns:
            ``(lexical_count, vector_count)`` indexed.
        """
        async with self._lock, db.session() as s:
            if lexical:
                await asyncio.to_thread(self.lexical.clear)
                await s.execute(update(Passage).values(lexical_indexed=False))
            if vectors and self.vectors is not None:
                await asyncio.to_thread(self.vectors.clear)
                await s.execute(update(Passage).values(vector_indexed=False))
        return await self.index_pending(db, progress=progress)

    def close(self) -> None:
        """Release the indexes, the query batcher's thread and the data dir lock (one process
        per data dir)."""
        try:
            stop = getattr(self.embedder, "batcher", None)
            if stop is not None:
                stop.close()
            self.lexical.close()
            if self.vectors is not None:
                self.vectors.close()
        finally:
            if self.data_lock is not None:
                self.data_lock.release()


def open_indexes(settings, *, with_vectors: bool = True) -> SearchIndexes:
    """Open the indexes named by ``settings`` (embedded paths or a Qdrant server).

    Takes the data dir's process lock first when an index lives there
    (:attr:`app.core.config.Settings.local_indexes`; :class:`app.core.datadir.DataDirLock`,
    released by :meth:`SearchIndexes.close`): Whoosh and the embedded vector engines allow one
    process at a time. Cluster mode (both legs in a Qdrant server) takes no lock, so several
    workers (``uvicorn --workers``, one container each) can run on one configuration.

    Args:
        settings: :class:`app.core.config.Settings`.
        with_vectors: False opens only the lexical index (no model load).

    Raises:
        app.core.datadir.DataDirInUse: another process holds the data dir (one-line message).
        retrieval.vectors.VectorStoreUnavailable: the Qdrant server cannot be reached.
    """
    from app.core.datadir import DataDirInUse, DataDirLock
    from retrieval.client_vectors import ClientVectorIndex
    from retrieval.embeddings import load_embedder
    from retrieval.query_batching import BatchedEmbedder
    from retrieval.sparse_bm25 import sparse_config
    from retrieval.vectors import VectorStoreInUse, open_vector_index

    data_lock = DataDirLock(Path(settings.data_dir)) if settings.local_indexes else None
    lexical: LexicalIndex | SparseBM25Index | None = None
    vectors = embedder = None
    server = settings.resolved_vector_backend == "server"
    cluster = settings.resolved_lexical_backend == "qdrant"
    where: dict[str, Any] = {"url": settings.qdrant_url} if server else {"path": settings.qdrant_dir}
    try:
        if with_vectors and settings.embedder != "none":
            if settings.embedder == "openai":
                embedder = load_embedder(
                    "openai",
                    base_url=settings.embedding_url,
                    model=settings.embedding_model,
                    api_key=settings.embedding_api_key,
                )
            else:
                embedder = load_embedder("local", query_threads=settings.query_threads)
            embedder = BatchedEmbedder(
                embedder,
                window_ms=settings.query_batch_window_ms,
                max_batch=settings.query_batch_max,
                cache_size=settings.query_cache_size,
            )
        try:
            if embedder is not None and cluster:
                vectors = ClientVectorIndex(
                    **where,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    dim=embedder.dim,
                    sparse_vectors=sparse_config(),
                )
            elif embedder is not None:
                vectors = open_vector_index(
                    path=None if server else settings.qdrant_dir,
                    url=settings.qdrant_url if server else None,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    dim=embedder.dim,
                    backend=settings.resolved_vector_backend,
                )
            if not cluster:
                lexical = LexicalIndex(settings.whoosh_dir)
            elif isinstance(vectors, ClientVectorIndex):  # one client per collection (local mode: per path)
                lexical = SparseBM25Index(
                    client=vectors.client, collection=settings.qdrant_collection, avg_length=settings.bm25_avg_length
                )
            else:
                lexical = SparseBM25Index(
                    **where,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    avg_length=settings.bm25_avg_length,
                )
        except VectorStoreInUse:  # held by a process that does not take Cairn's lock
            raise DataDirInUse(Path(settings.data_dir), None) from None
    except BaseException:
        if vectors is not None:
            vectors.close()
        if data_lock is not None:
            data_lock.release()
        raise
    return SearchIndexes(lexical=lexical, vectors=vectors, embedder=embedder, data_lock=data_lock)
