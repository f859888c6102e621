"""Opening a lexical index by configuration: :func:`open_lexical_index` over :data:`BACKENDS`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.retrieval.lexical.protocol import LexicalIndex
from cairn.retrieval.lexical.sparse import DEFAULT_AVG_LENGTH, SparseBM25Index
from cairn.retrieval.lexical.whoosh_index import WhooshIndex

__all__ = ["BACKENDS", "open_lexical_index"]

BACKENDS = ("whoosh", "qdrant")
"""The lexical backends (``CAIRN_LEXICAL_BACKEND`` once ``auto`` is resolved):

* ``whoosh`` — :class:`WhooshIndex` in the folder ``path`` (embedded, one process);
* ``qdrant`` — :class:`SparseBM25Index` in the Qdrant collection ``collection``, reached by
  exactly one of ``url`` (a server), ``path`` (qdrant-client local mode) or ``client`` (the
  dense index's, shared).
"""


def open_lexical_index(
    *,
    backend: str,
    path: Path | None = None,
    url: str | None = None,
    client: Any = None,
    api_key: str | None = None,
    collection: str = "passages",
    avg_length: float = DEFAULT_AVG_LENGTH,
    rebuild_unreadable: bool = False,
) -> LexicalIndex:
    """Open a lexical index (see :data:`BACKENDS`).

    Args:
        backend: ``whoosh`` or ``qdrant``.
        path: Whoosh: the index folder (created if missing). Qdrant: local-mode storage.
        url: Qdrant server URL (``qdrant`` only).
        client: An open ``QdrantClient`` to share (``qdrant`` only; not closed by the index).
        api_key: Qdrant server API key.
        collection: Qdrant collection name.
        avg_length: Mean passage length (analysed terms) the sparse BM25 weights assume.
        rebuild_unreadable: Whoosh: re-create an index that cannot be read empty instead of
            raising (``cairn reindex``; :attr:`LexicalIndex.migrated` says so).

    Returns:
        An open :class:`LexicalIndex`; close it when done.

    Raises:
        ValueError: On an unknown backend or a missing/conflicting location.
        retrieval.checks.IndexUnreadable: The Whoosh index cannot be read (and
            ``rebuild_unreadable`` is False).
        retrieval.vectors.VectorStoreInUse, retrieval.vectors.VectorStoreUnavailable: As
            :func:`retrieval.vectors.qdrant_shared.open_client`.
    """
    if backend == "whoosh":
        if path is None or url is not None or client is not None:
            raise ValueError("the whoosh lexical backend needs path (a folder), not url or client")
        return WhooshIndex(Path(path), rebuild_unreadable=rebuild_unreadable)
    if backend == "qdrant":
        return SparseBM25Index(
            url=url,
            path=None if path is None else Path(path),
            client=client,
            api_key=api_key,
            collection=collection,
            avg_length=avg_length,
        )
    raise ValueError(f"lexical backend must be one of {' | '.join(BACKENDS)}, got {backend!r}")
