"""In-process indexes over one object type's instances, derived from SQL and cached.

Per object type the store keeps (rebuilt when the type's ``generation`` changes, i.e.
after every load of its network):

- the typed rows, ordered by instance key;
- a Whoosh index in RAM with one BM25F-scored ``TEXT`` field per full-text property
  (Cairn's mixed-script analyzer, :func:`retrieval.analysis.cairn_analyzer`; k1 1.5,
  b 0.75 as the passage index); ``match`` is an OR over the query's analysed terms;
- one float32 matrix per vector property (vectors stored in SQL at load, all-MiniLM-L6-v2,
  L2-normalised), searched exactly (cosine = dot product).

Why in-process: a knowledge network the size of Northwind (~3,300 instances, ~270
vectors) builds in well under a second and answers any filter/sort exactly; exact search
keeps ``knn`` deterministic. Networks of millions of rows would need the filters pushed
into SQL and an ANN index (Qdrant) instead; the query engine only talks to this class.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col
from whoosh import query as wq
from whoosh.fields import ID, TEXT, Schema
from whoosh.filedb.filestore import RamStorage
from whoosh.scoring import BM25F

from cairn.app.core.db import Database
from cairn.app.core.errors import NotFound
from cairn.app.core.models import KnowledgeNetwork, ObjectInstance, ObjectType
from cairn.app.ontology.load import vector_from_b64
from cairn.retrieval.analysis import analyze_runs, cairn_analyzer
from cairn.retrieval.embeddings import Embedder
from cairn.retrieval.lexical import WHOOSH_BM25

if TYPE_CHECKING:  # the reranker (sentence-transformers) is imported on first use
    from cairn.retrieval.rerank import CrossEncoderReranker

MAX_CACHED_TYPES = 256


@dataclass
class TypeIndex:
    """Rows and derived indexes of one object type (see module doc)."""

    ot: ObjectType
    keys: list[str]
    rows: list[dict[str, Any]]
    text_index: Any = None
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    _search_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def props(self) -> dict[str, dict[str, Any]]:
        """Property name → ``{name, type, description, fullText, vector}``."""
        return {p["name"]: p for p in self.ot.properties}

    def match(self, fields: list[str], text: str) -> dict[int, float]:
        """BM25F hits of ``text`` (OR of its analysed terms) over ``fields``.

        Returns:
            Row position → BM25 score (> 0); empty when no term survives analysis.
        """
        terms = [t for run in analyze_runs(text) for t in run]
        if not terms or self.text_index is None:
            return {}
        q = wq.Or([wq.Term(f, t) for f in fields for t in dict.fromkeys(terms)])
        with (
            self._search_lock,
            self.text_index.searcher(weighting=BM25F(B=WHOOSH_BM25.b, K1=WHOOSH_BM25.k1)) as searcher,
        ):
            hits = searcher.search(q, limit=None)
            return {int(h["pos"]): float(h.score) for h in hits}

    def knn(self, prop: str, query_vector: np.ndarray, k: int) -> dict[int, float]:
        """The ``k`` rows whose ``prop`` vector is nearest to ``query_vector`` (exact cosine).

        Returns:
            Row position → cosine similarity, at most ``k`` entries (ties: lower position).
        """
        if prop not in self.vectors:
            return {}
        matrix, positions = self.vectors[prop]
        sims = matrix @ np.asarray(query_vector, dtype=np.float32)
        order = np.lexsort((positions, -sims))[:k]
        return {int(positions[i]): float(sims[i]) for i in order}


def _build(ot: ObjectType, records: list[tuple[str, dict, dict]]) -> TypeIndex:
    keys = [r[0] for r in records]
    rows = [r[1] for r in records]
    idx = TypeIndex(ot=ot, keys=keys, rows=rows)
    text_props = [p["name"] for p in ot.properties if p.get("fullText")]
    if text_props:
        analyzer = cairn_analyzer()
        schema = Schema(pos=ID(stored=True), **{f"p_{n}": TEXT(analyzer=analyzer) for n in text_props})
        # a unique name: Whoosh's writer keeps temp files in <tmp>/<indexname>.tmp
        index = RamStorage().create_index(schema, indexname=f"ot_{secrets.token_hex(8)}")
        writer = index.writer()
        for pos, data in enumerate(rows):
            doc = {f"p_{n}": data[n] for n in text_props if isinstance(data.get(n), str) and data[n]}
            writer.add_document(pos=str(pos), **doc)
        writer.commit()
        idx.text_index = index
    for p in ot.properties:
        if not p.get("vector"):
            continue
        name = p["name"]
        positions = [i for i, r in enumerate(records) if name in r[2]]
        if positions:
            matrix = np.stack([vector_from_b64(records[i][2][name]) for i in positions]).astype(np.float32)
            idx.vectors[name] = (matrix, np.asarray(positions, dtype=np.int64))
    return idx


def text_field(prop: str) -> str:
    """The Whoosh field holding a full-text property."""
    return f"p_{prop}"


class OntologyStore:
    """Cache of :class:`TypeIndex` per (workspace, network, type) plus query embeddings.

    Args:
        embedder: The process's embedding provider, or None (then no ``knn``).
        cursor_secret: HMAC key of ``objectInstances`` cursors; None → a random per-process key.
        reranker_path: Folder of a local cross-encoder for ``semanticRecall(rerank: true)``.
    """

    def __init__(
        self, embedder: Embedder | None, cursor_secret: str | None = None, reranker_path: Path | None = None
    ) -> None:
        self.embedder = embedder
        self.reranker_path = reranker_path
        self._reranker: tuple[CrossEncoderReranker | None, str | None] | None = None
        self.cursor_secret = cursor_secret.encode("utf-8") if cursor_secret else secrets.token_bytes(32)
        self._cache: OrderedDict[tuple[str, str, str], TypeIndex] = OrderedDict()
        self._lock = asyncio.Lock()
        self._model_ok: bool | None = None
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.descriptor_vectors: dict[tuple[str, str, str, int], np.ndarray] = {}
        """Embedding of each object type's descriptor, by ``(workspace, network, type, generation)``
        (semantic recall's type relevance, :mod:`app.ontology.recall`)."""

    async def reranker(self) -> tuple[CrossEncoderReranker | None, str | None]:
        """``(reranker or None, reason)``, loaded once (see :mod:`retrieval.rerank`)."""
        if self._reranker is None:
            from cairn.retrieval.rerank import load_reranker

            self._reranker = await asyncio.to_thread(load_reranker, self.reranker_path)
        return self._reranker

    def _load_model(self) -> bool:
        try:
            if self.embedder is not None:
                self.embedder.load()
            return True
        except Exception:  # noqa: BLE001 - any load failure means "no knn"
            return False

    async def check_model(self) -> None:
        """Load the embedding model once, off the event loop (the async entry points call this,
        so :meth:`vectors_available` never blocks the loop on a model load)."""
        if self._model_ok is None and self.embedder is not None:
            self._model_ok = await asyncio.to_thread(self._load_model)

    def vectors_available(self, ot: ObjectType) -> bool:
        """Whether ``knn`` works on ``ot``: it has vectors from a model this process loads."""
        if self.embedder is None or not ot.vector_model or ot.vector_model != self.embedder.name:
            return False
        if self._model_ok is None:
            self._model_ok = self._load_model()
        return self._model_ok

    async def encode_query(self, text: str) -> np.ndarray:
        """Embedding of a query text (cached for the last 512 texts)."""
        cached = self._query_vectors.get(text)
        if cached is not None:
            return cached
        if self.embedder is None:  # callers check vectors_available() first
            raise RuntimeError("no embedding model: this process cannot encode a query")
        vector = await asyncio.to_thread(self.embedder.encode_query, text)
        self._query_vectors[text] = vector
        while len(self._query_vectors) > 512:
            self._query_vectors.popitem(last=False)
        return vector

    async def network(self, s: AsyncSession, *, workspace_id: str, kn_id: str) -> KnowledgeNetwork:
        """The network row.

        Raises:
            NotFound: no such network in the workspace.
        """
        kn = await s.get(KnowledgeNetwork, (workspace_id, kn_id))
        if kn is None:
            raise NotFound(f"knowledge network {kn_id!r} does not exist in your workspace", field="knId")
        return kn

    async def types(self, s: AsyncSession, *, workspace_id: str, kn_id: str) -> list[ObjectType]:
        """Every object type of a network, by id.

        Raises:
            NotFound: no such network.
        """
        await self.network(s, workspace_id=workspace_id, kn_id=kn_id)
        await self.check_model()
        rows = await s.execute(
            select(ObjectType)
            .where(col(ObjectType.workspace_id) == workspace_id, col(ObjectType.kn_id) == kn_id)
            .order_by(ObjectType.ot_id)
        )
        return list(rows.scalars().all())

    async def type_index(self, db: Database, *, workspace_id: str, kn_id: str, ot_id: str) -> TypeIndex:
        """The (cached) index of one object type.

        Raises:
            NotFound: no such network or object type.
        """
        async with db.session() as s:
            await self.network(s, workspace_id=workspace_id, kn_id=kn_id)
            ot = await s.get(ObjectType, (workspace_id, kn_id, ot_id))
            if ot is None:
                raise NotFound(f"object type {ot_id!r} does not exist in knowledge network {kn_id!r}", field="otId")
        await self.check_model()
        cache_key = (workspace_id, kn_id, ot_id)
        hit = self._cache.get(cache_key)
        if hit is not None and hit.ot.generation == ot.generation:
            self._cache.move_to_end(cache_key)
            return hit
        async with self._lock:
            hit = self._cache.get(cache_key)
            if hit is not None and hit.ot.generation == ot.generation:
                return hit
            async with db.session() as s:
                result = await s.execute(
                    select(col(ObjectInstance.key), col(ObjectInstance.data), col(ObjectInstance.vectors))
                    .where(
                        col(ObjectInstance.workspace_id) == workspace_id,
                        col(ObjectInstance.kn_id) == kn_id,
                        col(ObjectInstance.ot_id) == ot_id,
                    )
                    .order_by(ObjectInstance.key)
                )
                records = [(r[0], r[1], r[2] or {}) for r in result.all()]
            built = await asyncio.to_thread(_build, ot, records)
            self._cache[cache_key] = built
            while len(self._cache) > MAX_CACHED_TYPES:
                self._cache.popitem(last=False)
            return built
