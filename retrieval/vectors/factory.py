"""Dense vector index: one facade over interchangeable Qdrant backends.

* :class:`EdgeVectorIndex` — ``qdrant-edge-py``: Qdrant's Rust engine in process, one
  shard per directory (``EdgeShard``). Writes go through a write-ahead log, so they
  survive a crash without ``flush``. Points stay in one appendable segment searched
  exactly (brute force) unless :meth:`EdgeVectorIndex.optimize` builds HNSW; exact search
  measured < 2 ms at 20k points (``bench/vector_backends.py``).
* :class:`ClientVectorIndex` — ``qdrant-client``: ``QdrantClient(url=...)`` for a Qdrant
  server or cluster (backend ``server``), or ``QdrantClient(path=...)`` local mode
  (backend ``local``: pure Python, exact; hundreds of ms per filtered query at 20k
  points — fine for tests, not for serving).
  Local mode scores in float64 from memory but from float32 after a reload, so scores
  (not orders, in practice) can differ by ~1e-8 across a restart; edge's are identical.

Both store cosine similarity over named vectors, one per embedding model (``spaces``; a
point has the vector of its own space, a search names the space, and a store of the layout
before named vectors is re-created on open, see the backends), use a UUIDv5 of the passage id as
the Qdrant point id (Qdrant accepts only uint64 or UUID ids) and keep ``passage_id``,
``workspace_id``, ``collection_id`` and ``document_id`` in the payload. Searches always
filter on ``workspace_id`` and optionally on collection/document ids (match any).
Results are sorted by score desc, then passage id asc; the engine is asked for more
results until no tie crosses the ``limit`` cut, so equal scores never make the result
depend on engine order. Each storage path may be open in one process only (both
engines lock it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cairn.retrieval.vectors.client import ClientVectorIndex
from cairn.retrieval.vectors.edge import EdgeVectorIndex
from cairn.retrieval.vectors.types import VectorIndex

__all__ = ["BACKENDS", "open_vector_index", "resolve_backend"]

BACKENDS = ("auto", "edge", "local", "server")
"""The one vocabulary of vector backends (``CAIRN_VECTOR_BACKEND`` and :func:`open_vector_index`):

* ``auto`` — ``server`` when a URL is given, else ``edge``;
* ``edge`` — :class:`EdgeVectorIndex` under ``path / collection`` (embedded, the default);
* ``local`` — :class:`ClientVectorIndex` in qdrant-client local mode under ``path``
  (embedded, pure Python, exact; for tests and comparisons);
* ``server`` — :class:`ClientVectorIndex` on a Qdrant server or cluster at ``url``.
"""


def resolve_backend(backend: str, url: str | None) -> str:
    """``edge``, ``local`` or ``server`` for a configured backend (``auto`` resolved).

    Raises:
        ValueError: on a value outside :data:`BACKENDS`.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {' | '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        return "server" if url else "edge"
    return backend


def open_vector_index(
    *,
    path: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    collection: str = "passages",
    dim: int = 384,
    spaces: Mapping[str, int] | None = None,
    backend: str = "auto",
    rebuild_unreadable: bool = False,
) -> VectorIndex:
    """Open a vector index by configuration (see :data:`BACKENDS`).

    Args:
        path: Data directory (edge shard parent, or local-mode storage); unused by ``server``.
        url: Qdrant server URL (``server``, or ``auto`` with a URL); refused by the
            embedded backends.
        api_key: Qdrant server API key.
        collection: Collection name (edge: shard sub-directory name).
        dim: Vector dimension of the single default space (when ``spaces`` is None).
        spaces: Named vector → dimension, one per embedding model (:mod:`retrieval.dense`).
        backend: One of :data:`BACKENDS` (default ``auto``).
        rebuild_unreadable: An embedded store the engine cannot load is deleted and made
            again empty instead of raising (``cairn reindex``).

    Returns:
        An open :class:`VectorIndex`; close it when done.

    Raises:
        ValueError: On an unknown backend or a missing/conflicting path/url.
        VectorStoreInUse: An embedded store is open in another process.
        VectorStoreUnavailable: The server cannot be reached.
        retrieval.checks.IndexUnreadable: An embedded store cannot be loaded (and
            ``rebuild_unreadable`` is False).
    """
    backend = resolve_backend(backend, url)
    if backend == "server":
        if not url:
            raise ValueError("the server backend needs url")
        return ClientVectorIndex(url=url, api_key=api_key, collection=collection, dim=dim, spaces=spaces)
    if url is not None:
        raise ValueError(f"the {backend} backend is embedded: give path, not url")
    if path is None:
        raise ValueError(f"the {backend} backend needs a path")
    if backend == "local":
        return ClientVectorIndex(
            path=Path(path), collection=collection, dim=dim, spaces=spaces, rebuild_unreadable=rebuild_unreadable
        )
    if not collection or "/" in collection or collection in (".", ".."):
        raise ValueError(f"invalid collection name {collection!r}")
    return EdgeVectorIndex(Path(path) / collection, dim=dim, spaces=spaces, rebuild_unreadable=rebuild_unreadable)
