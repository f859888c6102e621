"""Dense vector index: the :class:`VectorIndex` protocol, :func:`open_vector_index` and its
Qdrant backends (:class:`EdgeVectorIndex`: qdrant-edge in process; :class:`ClientVectorIndex`:
qdrant-client, local mode or a server). See :mod:`.factory` for the backends' vocabulary and
behaviour, :mod:`.types` for the shared types and :mod:`.qdrant_shared` for the qdrant-client
helpers the sparse BM25 leg shares (:mod:`retrieval.lexical.sparse`).
"""

from __future__ import annotations

from cairn.retrieval.vectors.client import ClientVectorIndex, check_server
from cairn.retrieval.vectors.edge import EdgeVectorIndex
from cairn.retrieval.vectors.factory import BACKENDS, open_vector_index, resolve_backend
from cairn.retrieval.vectors.types import (
    DEFAULT_SPACE,
    PASSAGE_NAMESPACE,
    VectorIndex,
    VectorPoint,
    VectorStoreInUse,
    VectorStoreUnavailable,
    point_id,
    ranked_search,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_SPACE",
    "PASSAGE_NAMESPACE",
    "ClientVectorIndex",
    "EdgeVectorIndex",
    "VectorIndex",
    "VectorPoint",
    "VectorStoreInUse",
    "VectorStoreUnavailable",
    "check_server",
    "open_vector_index",
    "point_id",
    "ranked_search",
    "resolve_backend",
]
