"""Dense vector index: one facade over interchangeable Qdrant backends.

* :class:`EdgeVectorIndex` — ``qdrant-edge-py``: Qdrant's Rust engine in process, one
  shard per directory (``EdgeShard``). Writes go through a write-ahead log, so they
  survive a crash without ``flush``. Points stay in one appendable segment searched
  exactly (brute force) unless :meth:`EdgeVectorIndex.optimize` builds HNSW; exact search
  measured < 2 ms at 20k points (``bench/vector_backends.py``).
* :class:`ClientVectorIndex` — ``qdrant-client``: ``QdrantClient(url=...)`` for a Qdrant
  server or cluster, or ``QdrantClient(path=...)`` local mode (pure Python, exact;
  hundreds of ms per filtered query at 20k points — fine for tests, not for serving).
  Local mode scores in float64 from memory but from float32 after a reload, so scores
  (not orders, in practice) can differ by ~1e-8 across a restart; edge's are identical.

Both store cosine similarity over the given vectors, use a UUIDv5 of the passage id as
the Qdrant point id (Qdrant accepts only uint64 or UUID ids) and keep ``passage_id``,
``workspace_id``, ``collection_id`` and ``document_id`` in the payload. Searches always
filter on ``workspace_id`` and optionally on collection/document ids (match any).
Results are sorted by score desc, then passage id asc; the engine is asked for more
results until no tie crosses the ``limit`` cut, so equal scores never make the result
depend on engine order. Each storage path may be open in one process only (both
engines lock it).
"""

from __future__ import annotations

from pathlib import Path

from retrieval.client_vectors import ClientVectorIndex
from retrieval.edge_vectors import EdgeVectorIndex
from retrieval.vector_types import PASSAGE_NAMESPACE, VectorIndex, VectorPoint, point_id, ranked_search

__all__ = [
    "BACKENDS",
    "PASSAGE_NAMESPACE",
    "ClientVectorIndex",
    "EdgeVectorIndex",
    "VectorIndex",
    "VectorPoint",
    "open_vector_index",
    "point_id",
    "ranked_search",
]

BACKENDS = ("edge", "client", "auto")


def open_vector_index(
    *,
    path: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    collection: str = "passages",
    dim: int = 384,
    backend: str = "edge",
) -> VectorIndex:
    """Open a vector index by configuration.

    Backends:
        ``"edge"``: :class:`EdgeVectorIndex` in ``path / collection`` (``url`` not allowed).
        ``"client"``: :class:`ClientVectorIndex` on ``url`` (server) if given, else
        local mode in ``path``.
        ``"auto"``: ``"client"`` if ``url`` is given, else ``"edge"``.

    Args:
        path: Data directory (edge shard parent, or local-mode storage).
        url: Qdrant server URL.
        api_key: Qdrant server API key.
        collection: Collection name (edge: shard sub-directory name).
        dim: Vector dimension.
        backend: ``"edge"`` (default), ``"client"`` or ``"auto"``.

    Returns:
        An open :class:`VectorIndex`; close it when done.

    Raises:
        ValueError: On an unknown backend or a missing/conflicting path/url.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        backend = "client" if url else "edge"
    if backend == "edge":
        if url is not None:
            raise ValueError("the edge backend is embedded: give path, not url")
        if path is None:
            raise ValueError("the edge backend needs a path")
        if not collection or "/" in collection or collection in (".", ".."):
            raise ValueError(f"invalid collection name {collection!r}")
        return EdgeVectorIndex(Path(path) / collection, dim=dim)
    if url is not None:
        return ClientVectorIndex(url=url, api_key=api_key, collection=collection, dim=dim)
    if path is None:
        raise ValueError("the client backend needs url (server) or path (local mode)")
    return ClientVectorIndex(path=Path(path), collection=collection, dim=dim)
