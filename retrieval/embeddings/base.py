"""Shared pieces of the embedding providers: model constants, the error, input checks, row
normalisation and the BLAS thread cap.

Every provider (:mod:`retrieval.embeddings.minilm`, :mod:`retrieval.embeddings.e5`, :mod:`retrieval.embeddings.openai_compatible`)
returns float32, L2-normalised vectors, so cosine similarity is a dot product; see
:mod:`retrieval.embeddings` for the protocol they share and :func:`retrieval.embeddings.load_embedder`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
LOCAL_MAX_SEQ_LENGTH = 256
E5_MODEL_NAME = "intfloat/multilingual-e5-small"
E5_MODEL_DIM = 384


class EmbeddingError(RuntimeError):
    """An embedding provider failed (model missing, endpoint error, bad response)."""


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm (all-zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a str")
    items = list(texts)
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"texts must contain strings, got {type(item).__name__}")
    return items


def _embed_checked(texts: Sequence[str], dim: int, run: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """:func:`_check_texts`, then ``run(items)``; no texts → shape ``(0, dim)`` without a call."""
    items = _check_texts(texts)
    if not items:
        return np.zeros((0, dim), dtype=np.float32)
    return run(items)


def limit_blas_threads(threads: int = 1) -> None:
    """Cap every BLAS thread pool in the process (numpy's and torch's OpenBLAS/MKL).

    Args:
        threads: Threads per BLAS pool, >= 1.

    Raises:
        ValueError: If ``threads`` < 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
