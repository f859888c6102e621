"""Derived indexes (BM25 + Qdrant vectors) that follow the SQL change log.

The BM25 leg is a Whoosh folder under the data dir (embedded default), or, in cluster mode
(``CAIRN_QDRANT_URL``), sparse BM25 vectors in the same Qdrant collection as the dense
vectors (:mod:`retrieval.sparse_bm25`): then no worker keeps local search state; every worker
still follows the change log below, and applying a passage the shared index already holds is
skipped, so workers racing on one change do the work once.

SQL is the source of truth. Every new passage is appended to the change log in its writing
transaction (:mod:`app.corpus.changes`); each process's indexes record in their own data dir how
far they have applied that log (``index_state.json``) and catch up from it: at start-up, after
a write of their own, and continuously (:mod:`app.corpus.follower`). So N workers with their own
data dirs on one PostgreSQL database each see every document, and a crash between the SQL
commit and the index write is repaired, never lost. ``reindex`` clears the indexes and
follows the log from the start. (The ``Passage.lexical_indexed``/``vector_indexed`` columns
were the shared outbox flags this replaces; they are no longer read or written.)

Embeddings are kept in SQL (:mod:`app.corpus.stored_vectors`): the first worker to index a
passage stores its vectors, and every other worker catching up (or a ``reindex`` of the
vectors) reads them instead of encoding the passage again — a new worker becomes ready in the
time it takes to read its vectors, not to embed the corpus.

Applying is idempotent: a passage already present in a leg is skipped (not replaced, so BM25
statistics never count a replaced copy and no passage is embedded twice). Ingest throughput:
encoding (the bottleneck, ~20–25 passages/s on 2 cores) overlaps with the Whoosh write of
the same batch; a batch's BM25 write is finished before its vectors are written (in cluster
mode both write the same Qdrant points, :mod:`retrieval.qdrant_shared`).

Dense models (:mod:`retrieval.dense`): each passage is embedded by the model of its script
(multilingual-e5-small for CJK, else the primary model) into that model's named vector. A
vector store of an older layout (before named vectors, or other models) is re-created empty
when opened (:attr:`SearchIndexes.migration_message`); the next catch-up logs that message
once and follows the change log again from its start: the vector leg re-embeds every
passage (stored vectors of the same model and text are reused), and the lexical leg skips the passages it holds (Whoosh) or re-adds them (cluster
mode, whose BM25 vectors were in the re-created collection). Likewise a Whoosh BM25 index
whose terms were made by another analyzer version (:data:`retrieval.analysis.ANALYZER_VERSION`)
is re-created empty on open and re-filled by the same catch-up, the vector leg skipping the
passages it holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cairn.app.core.db import Database
from cairn.app.core.space import StorageSpace
from cairn.app.corpus.changes import (
    Change,
    Cursor,
    IndexState,
    changes_for,
    clear_state,
    count_after,
    load_state,
    read_changes,
    save_state,
    shared_value,
)
from cairn.app.corpus.stored_vectors import StoredVector, input_sha256, read_vectors, write_vectors
from cairn.retrieval.dense import DenseModels
from cairn.retrieval.embeddings import Embedder
from cairn.retrieval.lexical import LexicalIndex
from cairn.retrieval.lexical_schema import IndexedPassage
from cairn.retrieval.sparse_bm25 import SparseBM25Index
from cairn.retrieval.vectors import VectorIndex, VectorPoint

log = logging.getLogger("cairn.indexing")

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; stage is ``lexical`` or ``vector``."""

LOG_BATCH = 256
"""Change-log rows read per step (the cursor is saved after each step)."""


@dataclass
class SearchIndexes:
    """The lexical index, the vector index and the embedder of one process.

    ``embedder``/``vectors`` may be None (``CAIRN_EMBEDDER=none``): packs then run
    ``LEXICAL`` only and say so. ``multilingual`` (multilingual-e5-small, or None) embeds CJK
    passages and tasks (:mod:`retrieval.dense`); ``vectors`` must have both models' spaces.
    ``state_dir`` holds ``index_state.json`` (the data dir; default: the lexical index's folder).
    """

    lexical: LexicalIndex | SparseBM25Index
    vectors: VectorIndex | None
    embedder: Embedder | None
    multilingual: Embedder | None = None
    batch_size: int = 64
    state_dir: Path | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _state: IndexState | None = None
    _dense: DenseModels | None = field(default=None, init=False, repr=False)
    data_lock: Any = None
    """The data dir's :class:`app.core.datadir.DataDirLock` when opened by :func:`open_indexes`."""
    space: StorageSpace | None = None
    """The data dir's volume when an index lives there: each batch is refused (503
    ``STORAGE_FULL``) below ``CAIRN_MIN_FREE_MB`` before it grows a file, as the embedded
    Qdrant engine dies of ``SIGBUS`` when its memory-mapped files cannot grow
    (:mod:`app.core.space`)."""

    @property
    def dense(self) -> DenseModels | None:
        """The dense models and their routing, or None without an embedder."""
        if self.embedder is None:
            return None
        models = self._dense
        if models is None or models.primary is not self.embedder or models.multilingual is not self.multilingual:
            models = DenseModels(self.embedder, self.multilingual)
            self._dense = models
        return models

    def migration_message(self) -> str | None:
        """The message of each index re-created on open (a vector store of an older layout, a
        BM25 index of another analyzer version), joined by ``"; "``, until the next catch-up
        has logged it and restarted the change log (module doc); None when none was."""
        messages = [m for m in (getattr(self.lexical, "migrated", None), getattr(self.vectors, "migrated", None)) if m]
        return "; ".join(messages) if messages else None

    @property
    def legs(self) -> tuple[str, ...]:
        """``("lexical",)`` or ``("lexical", "vector")``."""
        return ("lexical", "vector") if self.vectors is not None and self.embedder is not None else ("lexical",)

    @property
    def cursor(self) -> Cursor:
        """How far these indexes have applied the change log (in memory; saved after each batch)."""
        return self._state.cursor if self._state is not None else Cursor()

    def _folder(self) -> Path:
        if self.state_dir is not None:
            return Path(self.state_dir)
        if isinstance(self.lexical, LexicalIndex):  # embedded Whoosh: its folder holds the state
            return Path(self.lexical.path)
        raise RuntimeError("a lexical leg in Qdrant keeps no folder: open_indexes gives it a state_dir")

    def embedding_input(self, title: str, text: str) -> str:
        """Text given to the encoder for a passage: its document title, then the passage."""
        return f"{title}\n{text}" if title else text

    async def _open_state(self, db: Database) -> IndexState:
        """The saved state, or a fresh one when absent or not for this database / these legs, or
        when the vector store was re-created on open (module doc: logged once, here)."""
        message = self.migration_message()
        if message is not None:
            log.warning("%s", message)
            await asyncio.to_thread(clear_state, self._folder())
            self._state = None
            for index in (self.lexical, self.vectors):
                if getattr(index, "migrated", None) is not None:
                    index.migrated = None  # type: ignore[union-attr]
        if self._state is not None:
            return self._state
        database_id = await shared_value(db, "database-id")
        state = load_state(self._folder())
        if state is not None and state.database_id != database_id:
            log.warning("index state in %s follows another database: following this one from the start", self._folder())
            state = None
        if state is not None and not set(self.legs) <= set(state.legs):
            state = None  # a leg was added (e.g. the embedder turned on): re-read the log
        if state is not None and state.cursor != Cursor() and await asyncio.to_thread(self.lexical.count) == 0:
            state = None  # the index folder was emptied or replaced under a kept state file
        if (
            state is not None
            and state.cursor != Cursor()
            and self.vectors is not None
            and "vector" in self.legs
            and await asyncio.to_thread(self.vectors.count) == 0
        ):
            state = None  # the vector store was emptied or re-created (a crash before its re-embedding saved)
        self._state = state or IndexState(database_id, self.legs, Cursor())
        return self._state

    async def pending_counts(self, db: Database) -> tuple[int, int]:
        """``(changes not yet applied by the lexical leg, by the vector leg)`` (one cursor for both)."""
        state = await self._open_state(db)
        n = await count_after(db, state.cursor)
        return n, n if "vector" in self.legs else 0

    async def index_pending(self, db: Database, *, progress: Progress | None = None) -> tuple[int, int]:
        """Catch up: apply every change after the cursor (up to the read horizon), saving the cursor.

        Returns:
            ``(lexical_count, vector_count)`` of passages added to each index (present ones
            are skipped, so a second call right after returns ``(0, 0)``).
        """
        async with self._lock:
            state = await self._open_state(db)
            total = await count_after(db, state.cursor)
            done = lex = vec = 0
            while True:
                changes = await read_changes(db, state.cursor, LOG_BATCH)
                if not changes:
                    break
                a, b = await self._apply(db, changes)
                lex, vec = lex + a, vec + b
                state = IndexState(state.database_id, self.legs, changes[-1].cursor)
                await asyncio.to_thread(save_state, self._folder(), state)
                self._state = state
                done += len(changes)
                if progress:
                    progress("lexical", done, total)
                    if "vector" in self.legs:
                        progress("vector", done, total)
            return lex, vec

    async def index_passages(
        self, db: Database, passage_ids: Sequence[str], *, progress: Progress | None = None
    ) -> tuple[int, int]:
        """Index these (just written) passages now, whatever the cursor (read-your-writes).

        On PostgreSQL a change becomes readable by the cursor only once every older write
        transaction *of the whole server* has ended (the snapshot horizon is cluster-wide: an
        idle-in-transaction session of another database holds it back too); the writer does
        not wait for that: it applies its own rows now, :data:`LOG_BATCH` at a time, and the
        cursor later skips them (present). Then it catches up with whatever is readable.

        Args:
            db: The database the passages were written to.
            passage_ids: The new passages' ids (duplicates are applied once).
            progress: ``(stage, done, total)`` per batch of this write's passages, then as
                :meth:`index_pending` reports its catch-up.

        Returns:
            ``(lexical_count, vector_count)`` added, this write's and the catch-up's.
        """
        ids = list(dict.fromkeys(passage_ids))
        lex = vec = 0
        for start in range(0, len(ids), LOG_BATCH):
            async with self._lock:
                a, b = await self._apply(db, await changes_for(db, ids[start : start + LOG_BATCH]))
            lex, vec = lex + a, vec + b
            if progress:
                done = min(start + LOG_BATCH, len(ids))
                for stage in self.legs:  # "lexical", "vector": the stage names
                    progress(stage, done, len(ids))
        more = await self.index_pending(db, progress=progress)
        return lex + more[0], vec + more[1]

    async def _vectors_of(
        self, db: Database, dense: DenseModels, batch: Sequence[Change]
    ) -> list[tuple[str, np.ndarray]]:
        """``(space, vector)`` per change of ``batch``: stored vectors of the same model and
        embedded text (:mod:`app.corpus.stored_vectors`), the rest encoded now (one batch per
        model) and stored for the other workers."""
        texts = [self.embedding_input(c.title or "", c.text) for c in batch]
        # routing runs language identification on Latin-script text: off the event loop, once
        spaces = await asyncio.to_thread(lambda: [dense.passage_space(t) for t in texts])
        models = [dense.by_space[space].name for space in spaces]
        shas = [input_sha256(t) for t in texts]
        stored = await read_vectors(db, [(c.passage_id, m) for c, m in zip(batch, models, strict=True)])
        out: list[tuple[str, np.ndarray] | None] = [None] * len(batch)
        todo: list[int] = []
        for i, c in enumerate(batch):
            hit = stored.get((c.passage_id, models[i]))
            if hit is not None and hit.input_sha256 == shas[i] and hit.vector.shape == (dense.by_space[spaces[i]].dim,):
                out[i] = (spaces[i], hit.vector)
            else:
                todo.append(i)
        if todo:
            encoded = await asyncio.to_thread(
                dense.encode_passages, [texts[i] for i in todo], [spaces[i] for i in todo]
            )  # each by its space's model
            fresh = []
            for i, (space, vector) in zip(todo, encoded, strict=True):
                out[i] = (space, vector)
                fresh.append(StoredVector(batch[i].passage_id, models[i], shas[i], vector))
            await write_vectors(db, fresh)
        return [item for item in out if item is not None]

    async def _apply(self, db: Database, changes: Sequence[Change]) -> tuple[int, int]:
        """Add the changes' passages missing from each leg. Returns the counts added."""
        ids = [c.passage_id for c in changes]
        if self.space is not None:
            self.space.ensure("indexing new passages")
        present = await asyncio.to_thread(self.lexical.has, ids)
        lexical = [
            IndexedPassage(c.passage_id, c.workspace_id, c.collection_id, c.document_id, c.title or "", c.text)
            for c in changes
            if c.passage_id not in present
        ]
        write = asyncio.create_task(asyncio.to_thread(self.lexical.add, lexical)) if lexical else None
        vec = 0
        try:
            dense = self.dense
            if self.vectors is not None and dense is not None:
                have = await asyncio.to_thread(self.vectors.has, ids)
                missing = list({c.passage_id: c for c in changes if c.passage_id not in have}.values())
                for start in range(0, len(missing), self.batch_size):
                    batch = missing[start : start + self.batch_size]
                    encoded = await self._vectors_of(db, dense, batch)
                    points = [
                        VectorPoint(
                            c.passage_id,
                            encoded[i][1],
                            c.workspace_id,
                            c.collection_id,
                            c.document_id,
                            space=encoded[i][0],
                        )
                        for i, c in enumerate(batch)
                    ]
                    if write is not None:  # cluster mode: both legs write these points (no lost vector)
                        await write
                        write = None
                    if self.space is not None:
                        self.space.ensure("writing passage vectors")
                    await asyncio.to_thread(self.vectors.upsert, points)
                    vec += len(points)
        finally:
            if write is not None:
                await write
        return len({p.passage_id for p in lexical}), vec

    async def reindex(
        self, db: Database, *, progress: Progress | None = None, lexical: bool = True, vectors: bool = True
    ) -> tuple[int, int]:
        """Clear the chosen indexes and follow the change log from the start.

        Args:
            lexical / vectors: Which index to rebuild (e.g. only lexical after an analyzer
                change: re-embedding is the slow part; the kept leg skips present passages).

        Returns:
            ``(lexical_count, vector_count)`` indexed.
        """
        async with self._lock:
            if lexical:
                await asyncio.to_thread(self.lexical.clear)
            if vectors and self.vectors is not None:
                await asyncio.to_thread(self.vectors.clear)
            await asyncio.to_thread(clear_state, self._folder())
            self._state = None
        return await self.index_pending(db, progress=progress)

    def close(self) -> None:
        """Release the indexes, the query batcher's thread and the data dir lock (one process
        per data dir)."""
        try:
            for model in (self.embedder, self.multilingual):
                stop = getattr(model, "batcher", None)
                if stop is not None:
                    stop.close()
            self.lexical.close()
            if self.vectors is not None:
                self.vectors.close()
        finally:
            if self.data_lock is not None:
                self.data_lock.release()
